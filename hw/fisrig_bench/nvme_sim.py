"""The NVMe rig core in Verilator against the simulated controller at its TLP interface:
builds the runner (sim/rtl/nvme_core_runner.cpp around hw/fisrig_hw/nvme/nvme_core.py's
Verilog), writes its scripts and reads its records and, where asked, the wire (every TLP
both ways with the ticks it crossed the PHY in). Tests and the NVMe rtl benchmarks use it."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from fisrig_hw import ROOT
from fisrig_hw import contract as _c
from fisrig_hw import native
from fisrig_hw.descriptor import pack_desc, pack_struct
from fisrig_bench.rig_sim import INCLUDES, RigSimError, _number, run_script, verilate

RUNNER = os.path.join(ROOT, "sim", "rtl", "nvme_core_runner.cpp")
RIG_RUNNER = os.path.join(ROOT, "sim", "rtl", "nvme_rig_runner.cpp")
RECORD = {n: (o, k) for n, (o, k, _) in _c.FIELDS["fisrig_nvme_cpl_record"].items()}
CUT = {n: (o, k) for n, (o, k, _) in _c.FIELDS["fisrig_nvme_cut_record"].items()}
# The core the tests and benches run: 128 slots (32 in flight on each of four queues), 4 I/O
# queue pairs of 64 entries.
SLOTS, QUEUES, IO_ENTRIES = 128, 4, 64


class NvmeSimError(RigSimError):
    pass


def build(native_build=None, out_dir=None, slots=SLOTS, queues=QUEUES, io_entries=IO_ENTRIES, program=False):
    """Builds the runner once per source change; returns the executable's path. program:
    the rtl target's (sim/rtl/nvme_rig_runner.cpp: a compiled program on the VM), else the
    scripts' (nvme_core_runner.cpp)."""
    native_build = native_build or native.native_build()
    from fisrig_hw.nvme.nvme_core import WINDOW_BYTES, write_verilog
    name = "nvme_rig" if program else "nvme_core"
    out_dir = out_dir or os.path.join(native_build, "rtl", f"{name}_{slots}_{queues}_{io_entries}")
    os.makedirs(out_dir, exist_ok=True)
    libs = [os.path.join(native_build, "lib", "libfisrig_nvme_device.so"),
            os.path.join(native_build, "firmware", "core", "libfisrig_pcie_enum.a")]
    if program:
        libs.append(os.path.join(native_build, "firmware", "core", "libfisrig_core.a"))
    missing = [p for p in libs if not os.path.exists(p)]
    if missing:
        raise NvmeSimError(f"build the native parts first (make native): {missing}")
    verilog = os.path.join(out_dir, "nvme_core.v")   # its top module, whose name Verilator gives the executable
    return verilate(lambda: write_verilog(verilog, slots, queues, io_entries),
                    RIG_RUNNER if program else RUNNER, out_dir, libs, NvmeSimError,
                    cflags=[f"-DFISRIG_CORE_QUEUES={queues}", f"-DFISRIG_CORE_IO_ENTRIES={io_entries}",
                            f"-DFISRIG_CORE_WINDOW_BYTES={WINDOW_BYTES}", "-DFISRIG_VM_NVME_PATH=1"],
                    includes=INCLUDES + ["sim/nvme/include", "sim/model", "sim/rtl"],
                    ldflags=["-Wl,-rpath," + os.path.join(native_build, "lib"), "-lm", "-lpthread"],
                    headers=[os.path.join(ROOT, "sim", "rtl", "nvme_rig.h")] +
                    ([os.path.join(ROOT, "sim", "model", h) for h in ("program_run.h", "program_file.h", "record_writer.h")]
                     if program else []))


class Script:
    def __init__(self, max_cycles=50_000_000, queues=None):
        self.lines = [f"max_cycles {max_cycles}"] + ([f"queues {queues}"] if queues else [])

    def nvme(self, qid, opcode, user_tag, data_bytes=0, source=_c.FISRIG_DATA_NONE, check=False, own_prp=False,
             timeout=0, data_word=0, compress_pct=100, **sqe):
        """An NVMe descriptor (three ring entries): its head, and the SQE's fields by name."""
        head = pack_struct("fisrig_nvme_desc_head", protocol=_c.FISRIG_PROTO_NVME, qid=qid, data_bytes=data_bytes,
                           data_source=source, flags=_c.FISRIG_DESC_CHECK if check else 0, user_tag=user_tag,
                           timeout_ticks=timeout, data_word=data_word, compress_pct=compress_pct,
                           nvme_flags=_c.FISRIG_NVME_DESC_OWN_PRP if own_prp else 0)
        body = pack_struct("fisrig_nvme_sqe", opcode=opcode, **sqe)
        for part in (head, body[:32], body[32:]):
            self.lines.append("desc " + part.hex())
        return self

    def io(self, qid, opcode, user_tag, slba, blocks, **kw):
        """A read or write of `blocks` 512-byte blocks at `slba` of namespace 1."""
        return self.nvme(qid, opcode, user_tag, nsid=1, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                         cdw12=blocks - 1, **kw)

    def power(self, command, user_tag, kind=0, count=0, delay=0):
        """A POWER descriptor: OFF, ON, or OFF_AT_EVENT of `kind` (enum fisrig_tlp_event, or
        FISRIG_EVENT_TIME) at the count-th TLP, `delay` ticks after its end."""
        return self.desc(pack_desc(protocol=_c.FISRIG_PROTO_POWER, command=command, user_tag=user_tag,
                                   features=kind, count=count, timeout_ticks=delay))

    def bring_up(self):
        """Enumerate, enable and make the queues again (after a POWER ON), once all before have ended."""
        self.lines.append("bring_up")
        return self

    def desc(self, raw: bytes):
        self.lines.append("desc " + raw.hex())
        return self

    def ram(self, dword, values):
        """The data window's dwords from `dword` on, before the bring-up."""
        self.lines.append(f"ram {dword} " + " ".join(f"{v:x}" for v in values))
        return self

    def dump(self, dword, count):
        """`count` of the window's dwords printed at the end (NvmeRun.dumps)."""
        self.lines.append(f"dump {dword} {count}")
        return self

    def wait(self):
        self.lines.append("wait")
        return self

    def depth(self, n):
        """From here on at most n descriptors without their record (0: no limit), as a host
        keeping a queue depth: the next is offered as a record comes."""
        self.lines.append(f"depth {n}")
        return self

    def wire(self):
        """Every TLP from here on, both ways (NvmeRun.tlps)."""
        self.lines.append("wire")
        return self

    def text(self):
        return "\n".join(self.lines) + "\n"


@dataclass
class NvmeRun:
    records: list                 # the script's descriptors' records, in the order written
    stats: dict
    returncode: int
    up: tuple = (0, 0)            # (the tick the I/O queues were made at, how many), the last bring-up's
    rails: list = field(default_factory=list)   # (on, tick) as the drive's rails fell or rose
    dumps: dict = field(default_factory=dict)   # the window's dword index -> its dwords
    output: str = field(default="", repr=False)
    tlps: list = field(default_factory=list, repr=False)  # (way, tick first, tick last, beats)

    @property
    def commands(self):
        return {r["user_tag"]: r for r in self.records if r["user_tag"] != _c.FISRIG_USER_TAG_EVENT}

    @property
    def cuts(self):
        return [r for r in self.records if r["user_tag"] == _c.FISRIG_USER_TAG_EVENT
                and r["slot"] == _c.FISRIG_EVENT_REC_POWER_CUT]


def run(exe, script, profile="tiny-1gb", faults=None, timeout=900, wrapper=()):
    """Runs a script; a stuck engine ends at the script's max_cycles, never hangs."""
    proc = run_script(exe, script, profile, faults, timeout, wrapper, NvmeSimError)
    records, stats, tlps, up, rails, dumps = [], {}, [], (0, 0), [], {}
    for line in proc.stdout.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "rec":
            raw = bytes.fromhex(words[1])
            rec = {n: int.from_bytes(raw[o:o + k], "little") for n, (o, k) in RECORD.items()}
            if rec["user_tag"] == _c.FISRIG_USER_TAG_EVENT:
                rec = {n: int.from_bytes(raw[o:o + k], "little") for n, (o, k) in CUT.items()}
            records.append(rec)
        elif words[0] == "tlp":
            beats = [(int(d, 16), int(b, 16)) for d, b in (x.split(":") for x in words[4].split(","))]
            tlps.append((words[1], int(words[2]), int(words[3]), beats))
        elif words[0] == "dump":
            dumps[int(words[1])] = [int(w, 16) for w in words[2:]]
        elif words[0] == "rails":
            rails.append((int(words[1]), int(words[2])))
        elif words[0] == "up":
            up = (int(words[1]), int(words[2]))
        elif len(words) == 2:
            stats[words[0]] = _number(words[1])
    return NvmeRun(records, stats, proc.returncode, up, rails, dumps, proc.stdout + proc.stderr, tlps)
