"""The rig core in Verilator against the simulated drive: builds the runner
(sim/rtl/rig_core_runner.cpp around the generated rig_core.v), writes its scripts and reads
its records. Tests and the RTL benchmarks use it; it prints nothing."""

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

import fisrig_hw
from fisrig_hw import ROOT, build_lock
from fisrig_hw import contract as _c
from fisrig_hw import native
from fisrig_hw.verilator import MODEL_OPT_FAST, PGO_GENERATE, PGO_USE, VERILATOR_OPTIMIZE
from fisrig_hw.verilog import without_dates
from fisrig_hw.descriptor import (DATA_NONE, DATA_STAMP, EV_CURRENT, EV_POWER_CUT, FLAG_CHECK, LINK_WAIT_UP,
                                  Protocol, USER_TAG_EVENT,
                                  pack_desc, unpack_cpl, unpack_current, unpack_cut)

RUNNER = os.path.join(ROOT, "sim", "rtl", "rig_core_runner.cpp")
# What the runners include beside them (their builds depend on these too).
RUNNER_HEADERS = [os.path.join(ROOT, "sim", "rtl", h) for h in ("device_pins.h", "runner_start.h")] + \
    [os.path.join(ROOT, "sim", "bench", "instruction_count.h")]
INCLUDES = ["sim/device/include", "sim/sata/include", "sim/ssd/include", "sim/link/include", "firmware/core/include", "sim/bench"]


READ_FPDMA_QUEUED, WRITE_FPDMA_QUEUED = _c.FISRIG_ATA_READ_FPDMA_QUEUED, _c.FISRIG_ATA_WRITE_FPDMA_QUEUED


class RigSimError(Exception):
    pass


# The capture's ring in the runner that prints the entries it takes (build's capture).
RUNNER_CAPTURE_DEPTH = 64


def build(native_build=None, out_dir=None, datapath="same_clock", gen=3, capture=False):
    """Builds the runner once per source change; returns the executable's path. The
    Verilog is regenerated each time (seconds) and compared by hash with the last build.
    native_build: the native build it links (default fisrig_hw.native.native_build()).
    datapath, gen: the PHY datapath and the link's speed (fisrig_hw.phy.sim_phy.SimSATAPHY).
    capture: the analyzer's capture in the core, each entry it keeps printed (Run.capture)."""
    native_build = native_build or native.native_build()
    from fisrig_hw.soc.rig_core import write_verilog
    default_dir = "rig_core" + ("" if datapath == "same_clock" else "_" + datapath) + \
        ("" if gen == 3 else "_gen{}".format(gen)) + ("_capture" if capture else "")
    out_dir = out_dir or os.path.join(native_build, "rtl", default_dir)
    os.makedirs(out_dir, exist_ok=True)
    libs = native.native_libs(native_build, RigSimError)
    # The default build (the rtl tests', scripts/bench_rtl.py's) is compiled with gcc's
    # profile of its own run; the other link speeds and datapaths run a few short tests.
    train = _train if (datapath, gen, capture) == ("same_clock", 3, False) else None
    depth = RUNNER_CAPTURE_DEPTH if capture else 0
    return verilate(lambda: write_verilog(os.path.join(out_dir, "rig_core.v"), datapath=datapath, gen=gen,
                                          capture_depth=depth),
                    RUNNER, out_dir, libs, train=train, cflags=["-DFISRIG_RUNNER_CAPTURE"] if capture else [])


def _train(exe):
    """What the rig core's runner is trained on (verilate's train): the link's bring-up,
    128 KiB NCQ writes read back checked and 4 KiB random NCQ reads and writes at QD32, on a
    drive faster than the link: where the tests and scripts/bench_rtl.py spend their cycles."""
    import random
    rng = random.Random(3)
    s = Script().link_up(1)
    for i in range(16):
        s.ncq(True, i * 256, 256, 100 + i)
    s.wait()
    for i in range(16):
        s.ncq(False, i * 256, 256, 200 + i, check=True)
    s.wait()
    for i in range(400):
        s.ncq(i % 2 == 0, rng.randrange(512) * 8, 8, 1000 + i)
    r = run(exe, s, "fast-1gb", "boot_us=100")
    if r.returncode or len(r.commands) != 1 + 16 + 16 + 400:  # the link's record and the commands'
        raise RigSimError("the runner's profile training failed:\n" + r.output[-3000:])


def verilate(write, runner, out_dir, libs, error=RigSimError, train=None, cflags=(), includes=INCLUDES, ldflags=(),
             headers=()):
    """Writes the Verilog (`write()` returns its path; top module V<its stem>) and verilates
    it with the C++ `runner` and the native libraries into out_dir/obj, unless the sources'
    hash is the last build's; returns the executable. Both under out_dir's build_lock, so a
    second process never writes the Verilog under a build. Shared by every runner on the
    simulated drive (litesata_host_sim too). train(exe): a run of the executable built with
    -fprofile-generate, whose profile then guides the build returned (gcc's PGO). cflags:
    the runner's own (its options); includes: the source tree's include directories it needs;
    ldflags: the linker's besides the libraries (a shared library's run path); headers: the
    runner's own headers besides RUNNER_HEADERS, whose change rebuilds it too."""
    with build_lock.held(out_dir):
        return _verilate(write(), runner, out_dir, libs, error, train, cflags, includes, ldflags, headers)


def _verilate(verilog, runner, out_dir, libs, error, train=None, cflags=(), includes=INCLUDES, ldflags=(),
              headers=()):
    obj = os.path.join(out_dir, "obj")

    def command(pgo=""):
        return ["verilator", "--cc", "--exe", "--build", *VERILATOR_OPTIMIZE, "-Wno-fatal", "-Wno-WIDTH",
                "-Wno-CASEINCOMPLETE", "-Wno-MULTIDRIVEN", "--Mdir", obj,
                "-j", "2", verilog, runner,
                "-MAKEFLAGS", "OPT_FAST=" + MODEL_OPT_FAST,
                "-CFLAGS", " ".join(["-O2 -std=c++20", *["-I" + os.path.join(ROOT, i) for i in includes], *cflags,
                                     pgo]).strip(),
                "-LDFLAGS", " ".join(libs + [*ldflags, "-ltomlplusplus"] + ([pgo] if pgo == PGO_GENERATE else []))]
    cmd = command(PGO_USE if train else "")
    # What the build depends on, part by part: the parts a rebuild found changed go in
    # out_dir/builds.log (a rebuild under tests that run the old one is worth explaining).
    parts = {"command": " ".join(cmd)}
    if train:  # what it is trained on
        parts["training"] = inspect.getsource(train)
    for path in [verilog, runner, *RUNNER_HEADERS, *headers] + libs:
        with open(path, "rb") as f:
            content = f.read()
        if path == verilog:
            content = without_dates(content)
        parts[path] = content
    parts = {k: hashlib.sha256(v if isinstance(v, bytes) else v.encode()).hexdigest() for k, v in parts.items()}
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    # The executable the caller runs: installed whole (a rename) once built, so a test
    # running it while another process rebuilds never finds it missing or half written.
    exe = os.path.join(out_dir, "V" + os.path.splitext(os.path.basename(verilog))[0])
    stamp = os.path.join(out_dir, "sources.json")
    old = _read(stamp)
    old = json.loads(old) if old else {}
    if os.path.exists(exe) and old.get("digest") == digest:
        return exe
    built = os.path.join(obj, os.path.basename(exe))

    def clean(*ends):
        for name in os.listdir(obj) if os.path.isdir(obj) else []:
            if name.endswith(ends):
                os.remove(os.path.join(obj, name))

    def build(cmd):
        # Verilator's make does not see flags change: the objects of a build with other
        # flags go first, and the executable.
        clean(".o", ".a", os.path.basename(exe))
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise error("verilator build failed:\n" + done.stdout[-4000:] + done.stderr[-4000:])

    with open(os.path.join(out_dir, "builds.log"), "a") as log:
        changed = sorted(k for k in set(parts) | set(old.get("parts", {})) if parts.get(k) != old.get("parts", {}).get(k))
        log.write("{} pid {}: building; changed: {}\n".format(time.strftime("%Y-%m-%d %H:%M:%S"), os.getpid(),
                                                             ", ".join(changed) or "(the executable was missing)"))
    clean(".gcda")  # a profile from before, or the counts would add up
    if train:
        build(command(PGO_GENERATE))
        train(built)
    build(cmd)
    clean(".gcda")
    shutil.copy2(built, exe + ".new")
    os.replace(exe + ".new", exe)
    with open(stamp, "w") as f:
        json.dump({"digest": digest, "parts": parts}, f, indent=1)
    return exe


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


class Script:
    """What the runner does, in order: descriptors, waits for their records, RAM contents."""

    def __init__(self, max_cycles=100_000_000):
        self.lines = ["max_cycles {}".format(max_cycles)]

    def desc(self, protocol, command, *, user_tag, lba=0, sectors=0, data_source=DATA_NONE,
             data_word=0, check=False, compress_pct=100, device=0x40, **fields):
        """One descriptor; `sectors` goes in FEATURES for FPDMA commands, COUNT otherwise
        (as the ATA command set places it); any other H2D field by name."""
        fields.setdefault("features" if protocol in (Protocol.FPDMA_IN, Protocol.FPDMA_OUT)
                          else "count", sectors)
        raw = pack_desc(protocol=protocol, command=command, user_tag=user_tag, lba=lba,
                        data_source=data_source, data_word=data_word, device=device,
                        compress_pct=compress_pct, flags=FLAG_CHECK if check else 0, **fields)
        self.lines.append("desc " + raw.hex())
        return self

    def ncq(self, write, lba, sectors, user_tag, data_word=7, check=False,
            data_source=DATA_STAMP):
        """READ or WRITE FPDMA QUEUED with pattern data (checked on reads if asked)."""
        return self.desc(Protocol.FPDMA_OUT if write else Protocol.FPDMA_IN,
                         WRITE_FPDMA_QUEUED if write else READ_FPDMA_QUEUED, user_tag=user_tag,
                         lba=lba, sectors=sectors, data_source=data_source,
                         data_word=data_word, check=check)

    def link_up(self, user_tag):
        """As the firmware starts, and resumes after a COMRESET: wait for the link and the
        drive's signature, then for that descriptor's record."""
        return self.desc(Protocol.LINK, LINK_WAIT_UP, user_tag=user_tag).wait()

    def wait(self):
        self.lines.append("wait")
        return self

    def hold_records(self, cycles):
        """The record port not ready for `cycles` from here (a host that takes no records)."""
        self.lines.append("hold_records {}".format(cycles))
        return self

    def ram(self, word, values):
        self.lines.append("ram {} {}".format(word, " ".join("{:x}".format(v) for v in values)))
        return self

    def trace(self, first_cycle, end_cycle):
        """Print the wire, both directions, for cycles [first_cycle, end_cycle)."""
        self.lines.append("trace {} {}".format(first_cycle, end_cycle))
        return self

    def dump(self, word, count):
        self.lines.append("dump {} {}".format(word, count))
        return self

    def ram_write_gap(self, gap):
        """The host's memory takes a write only every gap + 1 cycles (slower than the link)."""
        self.lines.append("ram_wr_gap {}".format(gap))
        return self

    def text(self):
        return "\n".join(self.lines) + "\n"


@dataclass
class Run:
    records: list          # every record in the order the engine wrote it, events included
    dumps: dict            # word address -> list of RAM words
    stats: dict            # the runner's and the device's counters
    returncode: int
    output: str = field(repr=False)
    wire: list = field(default_factory=list, repr=False)  # (cycle, tx, rx) in traced cycles
    capture: list = field(default_factory=list, repr=False)  # each entry the capture kept (build's capture)

    def wire_frames(self, direction, cut_too=False):
        """A monitor on the traced pins: every frame one way ("tx": the rig's, "rx": the
        drive's) as (FIS type, tick of its first dword, of its first payload dword, of its
        last payload dword), ticks on the engine's counter (0 for a frame with no payload).
        SATA's rules: SOF to EOF; ALIGN skipped; CONT's filler skipped until the next other
        primitive; HOLD/HOLDA pause a frame, any other primitive ends it unfinished; the
        last dword before EOF is the CRC. Dwords are scrambled from SOF on (the scrambler
        from context F0F6h, lfsr_tables' step, which tests/hw holds to LiteSATA's): the
        type is the first dword XOR the scrambler's first word. Read apart from the
        gateware's own wire_tap, so it can hold the record's stamps to engine_if.h.
        cut_too: frames that never reached EOF (a power cut) too, with their last payload
        dword as None."""
        from fisrig_hw.lfsr_tables import scrambler_step_map
        first_word = scrambler_step_map(0xF0F6)
        column = {"tx": 1, "rx": 2}[direction]
        offset = self.stats["now_minus_cycle"]
        out, cur, in_cont = [], None, False
        for line in self.wire:
            w, tick = line[column], line[0] + offset
            if w in ("idle", "ALIGN"):
                continue
            if not all(c in "0123456789abcdef" for c in w):  # a primitive
                in_cont = w == "CONT"
                if w == "SOF":
                    cur = []
                elif w == "EOF" and cur:
                    payload = cur[1:-1]
                    out.append(((int(cur[0][1], 16) ^ first_word) & 0xFF, cur[0][0],
                                payload[0][0] if payload else 0, payload[-1][0] if payload else 0))
                    cur = None
                elif w not in ("CONT", "HOLD", "HOLDA"):
                    if cur and cut_too and len(cur) > 1:
                        out.append(((int(cur[0][1], 16) ^ first_word) & 0xFF, cur[0][0], cur[1][0], None))
                    cur = None
                continue
            if cur is not None and not in_cont:
                cur.append((tick, w))
        if cur and cut_too and len(cur) > 1:  # still going when the trace ended
            out.append(((int(cur[0][1], 16) ^ first_word) & 0xFF, cur[0][0], cur[1][0], None))
        return out

    @property
    def commands(self):
        """Command records by user_tag."""
        return {r["user_tag"]: r for r in self.records if r["user_tag"] != USER_TAG_EVENT}

    @property
    def events(self):
        return [r for r in self.records if r["user_tag"] == USER_TAG_EVENT]


def run_script(exe, script, profile, faults, timeout, wrapper, error):
    """A runner on a script (runner_start.h's arguments: PROFILE FAULTS|- SCRIPT); its
    CompletedProcess, `error` raised with what it said when it refused its arguments (exit 2)."""
    with tempfile.NamedTemporaryFile("w", suffix=".rig", delete=False) as f:
        f.write(script.text())
    try:
        proc = subprocess.run([*wrapper, exe, profile, faults or "-", f.name], capture_output=True,
                              text=True, timeout=timeout)
    finally:
        os.unlink(f.name)
    if proc.returncode == 2:
        raise error(proc.stderr.strip())
    return proc


def run(exe, script, profile="tiny-1gb", faults=None, timeout=900, wrapper=()):
    """Runs a script; a stuck engine ends at the script's max_cycles, never hangs.
    wrapper: a command the runner runs under (scripts/bench_rtl.py's callgrind)."""
    proc = run_script(exe, script, profile, faults, timeout, wrapper, RigSimError)
    records, dumps, stats, wire, capture = [], {}, {}, [], []
    for line in proc.stdout.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "rec":
            raw = bytes.fromhex(words[1])
            rec = unpack_cpl(raw)
            rec["d2h_lba"] = rec.pop("lba")
            if rec["user_tag"] == USER_TAG_EVENT and rec["slot"] == EV_POWER_CUT:
                rec["cut"] = unpack_cut(raw)
            if rec["user_tag"] == USER_TAG_EVENT and rec["slot"] == EV_CURRENT:
                rec["current"] = unpack_current(raw)
            records.append(rec)
        elif words[0] == "w":
            wire.append((int(words[1]), words[2], words[3]))
        elif words[0] == "cap":
            capture.append(int(words[1], 16))
        elif words[0] == "dump":
            dumps[int(words[1])] = [int(w, 16) for w in words[2:]]
        elif len(words) == 2:
            stats[words[0]] = _number(words[1])
    return Run(records, dumps, stats, proc.returncode, proc.stdout + proc.stderr, wire, capture)


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
