"""Stock LiteSATA's BIST host (litesata_host.py) in Verilator against the simulated drive:
builds the runner (sim/rtl/litesata_host_runner.cpp around the generated litesata_host.v)
once per source change, writes its scripts and reads what it prints. The tests and
scripts/bench_litesata_host.py use it; it prints nothing."""

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from fisrig_hw import ROOT
from fisrig_bench.rig_sim import _number, verilate
from fisrig_hw import native

RUNNER = os.path.join(ROOT, "sim", "rtl", "litesata_host_runner.cpp")


class LiteSATAHostError(Exception):
    pass


def build(gen=3, datapath="litesata", native_build=None, out_dir=None):
    """Builds the runner for SATA Gen `gen` once per source change; returns the executable's
    path. The Verilog is regenerated each time (seconds, in a fresh process: see
    litesata_host.py's __main__) and compared by hash with the last build's.
    datapath: see fisrig_bench.litesata_host.LiteSATAHost. native_build: the native build
    it links (default fisrig_hw.native.native_build())."""
    native_build = native_build or native.native_build()
    name = "litesata_host_gen{}".format(gen) + ("" if datapath == "litesata" else "_" + datapath)
    out_dir = out_dir or os.path.join(native_build, "rtl", name)
    os.makedirs(out_dir, exist_ok=True)
    libs = native.native_libs(native_build, LiteSATAHostError)
    verilog = os.path.join(out_dir, "litesata_host.v")

    def write():
        gen_run = subprocess.run([sys.executable, "-m", "fisrig_bench.litesata_host", verilog, str(gen), datapath],
                                 capture_output=True, text=True)
        if gen_run.returncode:
            raise LiteSATAHostError("generating the Verilog failed:\n" + gen_run.stderr[-4000:])
        return verilog
    return verilate(write, RUNNER, out_dir, libs, LiteSATAHostError)


class Script:
    """The runner's operations, in order (litesata_host_runner.cpp's header)."""

    def __init__(self, max_cycles=20_000_000):
        self.lines = ["max_cycles {}".format(max_cycles)]

    def identify(self):
        self.lines.append("identify")
        return self

    def write(self, lba, count, random=False):
        """One WRITE DMA EXT of `count` sectors of the BIST generator's data: its dword
        counter from 0 (random=False) or its scrambler's sequence (random=True)."""
        self.lines.append("write {} {}{}".format(lba, count, " random" if random else ""))
        return self

    def read(self, lba, count, random=False):
        """One READ DMA EXT, each dword checked against what write(lba, count, random) sent."""
        self.lines.append("read {} {}{}".format(lba, count, " random" if random else ""))
        return self

    def trace(self, first_cycle, end_cycle):
        self.lines.append("trace {} {}".format(first_cycle, end_cycle))
        return self

    def text(self):
        return "\n".join(self.lines) + "\n"


@dataclass
class Run:
    ops: list              # one dict per operation, in order (kind, lba, count, random, start,
                           # done, cycles, errors, aborted, status, error: the runner's header)
    identify: list         # the last IDENTIFY's 256 words
    link_up: int           # the cycle the link and the drive's signature were in (None: never)
    stats: dict            # the runner's and the device's counters
    returncode: int
    output: str = field(repr=False)
    wire: list = field(default_factory=list, repr=False)  # (cycle, tx, rx) in traced cycles


def run(exe, script, profile="fast-1gb", faults="boot_us=100", timeout=900):
    """Runs a script; a stuck host ends at the script's max_cycles (returncode 3), never
    hangs. faults: device_c.h's knobs; boot_us=100 because a profile's boot time is
    seconds of simulated time."""
    with tempfile.NamedTemporaryFile("w", suffix=".lsh", delete=False) as f:
        f.write(script.text())
    try:
        proc = subprocess.run([exe, profile, faults or "-", f.name], capture_output=True, text=True,
                              timeout=timeout)
    finally:
        os.unlink(f.name)
    if proc.returncode == 2:
        raise LiteSATAHostError(proc.stderr.strip())
    ops, identify, link_up, stats, wire = [], [], None, {}, []
    for line in proc.stdout.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "op":
            kind, lba, count, random = words[1], int(words[2]), int(words[3]), words[4] == "1"
            named = dict(zip(words[5::2], (int(w) for w in words[6::2])))
            named["aborted"] = bool(named["aborted"])
            ops.append(dict(kind=kind, lba=lba, count=count, random=random, **named))
        elif words[0] == "identify_words":
            identify = [int(w, 16) for w in words[1:]]
        elif words[0] == "link_up":
            link_up = int(words[1])
        elif words[0] == "w":
            wire.append((int(words[1]), words[2], words[3]))
        elif len(words) == 2:
            stats[words[0]] = _number(words[1])
    return Run(ops, identify, link_up, stats, proc.returncode, proc.stdout + proc.stderr, wire)
