"""The rig core in Verilator against the simulated drive: builds the runner
(sim/rtl/rig_core_runner.cpp around the generated rig_core.v), writes its scripts and reads
its records. Tests and the RTL benchmarks use it; it prints nothing."""

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass, field

from fisrig_hw.descriptor import (DATA_NONE, DATA_STAMP, FLAG_CHECK, LINK_WAIT_UP,
                                  PROTO_FPDMA_IN, PROTO_FPDMA_OUT, PROTO_LINK, USER_TAG_EVENT,
                                  pack_desc, unpack_cpl)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNNER = os.path.join(ROOT, "sim", "rtl", "rig_core_runner.cpp")
NATIVE_LIBS = ["sim/device/libfisrig_device.a", "sim/libfisrig_drive.a", "sim/link/libfisrig_link.a"]
INCLUDES = ["sim/device/include", "sim/drive/include", "sim/link/include", "firmware/core/include"]


READ_FPDMA_QUEUED, WRITE_FPDMA_QUEUED = 0x60, 0x61


class RigSimError(Exception):
    pass


def build(native_build=os.path.join(ROOT, "build"), out_dir=None, datapath="same_clock"):
    """Builds the runner once per source change; returns the executable's path. The
    Verilog is regenerated each time (seconds) and compared by hash with the last build.
    datapath: the PHY datapath (fisrig_hw.sim_phy.SimSATAPHY)."""
    from fisrig_hw.rig_core import write_verilog
    default_dir = "rig_core" if datapath == "same_clock" else "rig_core_" + datapath
    out_dir = out_dir or os.path.join(native_build, "rtl", default_dir)
    os.makedirs(out_dir, exist_ok=True)
    libs = [os.path.join(native_build, p) for p in NATIVE_LIBS]
    missing = [p for p in libs if not os.path.exists(p)]
    if missing:
        raise RigSimError("build the native parts first (make native): {}".format(missing))
    verilog = write_verilog(os.path.join(out_dir, "rig_core.v"), datapath=datapath)
    cmd = ["verilator", "--cc", "--exe", "--build", "-O3", "--x-assign", "fast",
           "--x-initial", "fast", "--noassert", "-Wno-fatal", "-Wno-WIDTH",
           "-Wno-CASEINCOMPLETE", "-Wno-MULTIDRIVEN", "--Mdir", os.path.join(out_dir, "obj"),
           "-j", "2", verilog, RUNNER,
           "-CFLAGS", "-O2 -std=c++20 " + " ".join("-I" + os.path.join(ROOT, i) for i in INCLUDES),
           "-LDFLAGS", " ".join(libs + ["-ltomlplusplus"])]
    digest = hashlib.sha256(" ".join(cmd).encode())
    for path in [verilog, RUNNER] + libs:
        with open(path, "rb") as f:
            digest.update(f.read())
    exe = os.path.join(out_dir, "obj", "Vrig_core")
    stamp = os.path.join(out_dir, "sources.sha256")
    if os.path.exists(exe) and _read(stamp) == digest.hexdigest():
        return exe
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        raise RigSimError("verilator build failed:\n" + run.stdout[-4000:] + run.stderr[-4000:])
    with open(stamp, "w") as f:
        f.write(digest.hexdigest())
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
        fields.setdefault("features" if protocol in (PROTO_FPDMA_IN, PROTO_FPDMA_OUT)
                          else "count", sectors)
        raw = pack_desc(protocol=protocol, command=command, user_tag=user_tag, lba=lba,
                        data_source=data_source, data_word=data_word, device=device,
                        compress_pct=compress_pct, flags=FLAG_CHECK if check else 0, **fields)
        self.lines.append("desc " + raw.hex())
        return self

    def ncq(self, write, lba, sectors, user_tag, data_word=7, check=False,
            data_source=DATA_STAMP):
        """READ or WRITE FPDMA QUEUED with pattern data (checked on reads if asked)."""
        return self.desc(PROTO_FPDMA_OUT if write else PROTO_FPDMA_IN,
                         WRITE_FPDMA_QUEUED if write else READ_FPDMA_QUEUED, user_tag=user_tag,
                         lba=lba, sectors=sectors, data_source=data_source,
                         data_word=data_word, check=check)

    def link_up(self, user_tag):
        """As the firmware starts, and resumes after a COMRESET: wait for the link and the
        drive's signature, then for that descriptor's record."""
        return self.desc(PROTO_LINK, LINK_WAIT_UP, user_tag=user_tag).wait()

    def wait(self):
        self.lines.append("wait")
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

    @property
    def commands(self):
        """Command records by user_tag."""
        return {r["user_tag"]: r for r in self.records if r["user_tag"] != USER_TAG_EVENT}

    @property
    def events(self):
        return [r for r in self.records if r["user_tag"] == USER_TAG_EVENT]


def run(exe, script, profile="tiny-1gb", faults=None, timeout=900):
    """Runs a script; a stuck engine ends at the script's max_cycles, never hangs."""
    with tempfile.NamedTemporaryFile("w", suffix=".rig", delete=False) as f:
        f.write(script.text())
    try:
        proc = subprocess.run([exe, profile, faults or "-", f.name], capture_output=True,
                              text=True, timeout=timeout)
    finally:
        os.unlink(f.name)
    if proc.returncode == 2:
        raise RigSimError(proc.stderr.strip())
    records, dumps, stats, wire = [], {}, {}, []
    for line in proc.stdout.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "rec":
            rec = unpack_cpl(bytes.fromhex(words[1]))
            rec["d2h_lba"] = rec.pop("lba")
            records.append(rec)
        elif words[0] == "w":
            wire.append((int(words[1]), words[2], words[3]))
        elif words[0] == "dump":
            dumps[int(words[1])] = [int(w, 16) for w in words[2:]]
        elif len(words) == 2:
            stats[words[0]] = _number(words[1])
    return Run(records, dumps, stats, proc.returncode, proc.stdout + proc.stderr, wire)


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
