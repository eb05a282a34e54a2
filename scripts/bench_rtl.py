#!/usr/bin/env python3
"""The RTL rig's figures (issue 5), as JSON lines for scripts/bench_collect.py: the rig core
in Verilator (LiteSATA's PHY, link and our engine) against the simulated drive, driven
straight from descriptor scripts. Every rate is in simulated time on the engine's own
timestamp counter (150 MHz, Gen3); only rtl.sim_khz is a wall-clock figure.

The drive is fast-1gb, whose NAND and controller are far faster than the link, so the
figures are the rig's and the link's (docs/rtl-engine.md has the ceilings' arithmetic)."""
import math
import json
import os
import random
import sys
import tempfile

from fisrig_bench import rig_sim
from fisrig_hw.descriptor import (EV_POWER_CUT, EVENT_DATA, POWER_OFF_AT_EVENT, POWER_ON,
                                  Protocol, RESULT_LINK_LOST, RESULT_OK, TICK_HZ)

TICK_NS = 1e9 / TICK_HZ
PROFILE = "fast-1gb"
FAULTS = "boot_us=100"
SEQ_SECTORS = 256            # 128 KiB commands
SEQ_COMMANDS = 64            # 8 MiB each way
RAND_COMMANDS = 3000
RAND_SPAN = 16 << 11         # 16 MiB written first, then read at random (sectors)


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def run(exe, script):
    r = rig_sim.run(exe, script, PROFILE, FAULTS)
    if r.returncode:
        raise SystemExit("bench: rtl run failed:\n" + r.output[-3000:])
    return r


def span_ticks(records):
    return max(r["ts_status"] for r in records) - min(r["ts_submit"] for r in records)


def ok(records, checked=False):
    bad = [r for r in records if r["result"] != RESULT_OK or (checked and r["check_errors"])]
    if bad:
        raise SystemExit("bench: commands failed: {}".format(bad[:3]))
    return records


def sequential(exe):
    """128 KiB FPDMA writes over 8 MiB at QD32, then the same read back checked."""
    s = rig_sim.Script().link_up(1)
    for i in range(SEQ_COMMANDS):
        s.ncq(True, i * SEQ_SECTORS, SEQ_SECTORS, 1000 + i)
    s.wait()
    for i in range(SEQ_COMMANDS):
        s.ncq(False, i * SEQ_SECTORS, SEQ_SECTORS, 2000 + i, check=True)
    r = run(exe, s)
    nbytes = SEQ_COMMANDS * SEQ_SECTORS * 512
    for name, base, what, ceiling in [("rtl.seq_write_mbps", 1000, "WRITE", "588 MB/s: 16 Data FISes and 15 DMA Activates"),
                                      ("rtl.seq_read_mbps", 2000, "READ", "591 MB/s: 16 Data FISes")]:
        recs = ok([r.commands[base + i] for i in range(SEQ_COMMANDS)], checked=True)
        mbps = nbytes / (span_ticks(recs) * TICK_NS * 1e-9) / 1e6
        figure(name, round(mbps, 2), "MB/s",
               f"{SEQ_COMMANDS} x 128 KiB {what} FPDMA QUEUED at QD32, sequential, Gen3, first submit to "
               f"last SDB on the engine's counter (ceiling {ceiling} of 8 KiB a command, "
               f"592 MB/s for the Data FISes alone)")
    return r


def random_4k(exe):
    """4 KiB FPDMA writes then reads at QD32 at random aligned LBAs of a written 16 MiB."""
    rng = random.Random(5)
    s = rig_sim.Script().link_up(1)
    for i in range(RAND_SPAN // SEQ_SECTORS):
        s.ncq(True, i * SEQ_SECTORS, SEQ_SECTORS, 10 + i)
    s.wait()
    lbas = [rng.randrange(RAND_SPAN // 8) * 8 for _ in range(RAND_COMMANDS)]
    for i, lba in enumerate(lbas):
        s.ncq(False, lba, 8, 100_000 + i)
    s.wait()
    for i, lba in enumerate(lbas):
        s.ncq(True, lba, 8, 200_000 + i, data_word=8)
    r = run(exe, s)
    # Ceilings FIS by FIS (docs/model-target.md): a read 1102 dwords, a write 1113 (its DMA
    # Activate after the DMA Setup).
    for name, base, what, ceiling in [("rtl.ncq_4k_randread_iops_qd32", 100_000, "READ", "136,120"),
                                      ("rtl.ncq_4k_randwrite_iops_qd32", 200_000, "WRITE", "134,771")]:
        recs = ok([r.commands[base + i] for i in range(RAND_COMMANDS)])
        iops = RAND_COMMANDS / (span_ticks(recs) * TICK_NS * 1e-9)
        figure(name, round(iops), "IOPS",
               f"{RAND_COMMANDS} x 4 KiB {what} FPDMA QUEUED at QD32, random over 16 MiB, first submit "
               f"to last SDB (ceiling {ceiling} IOPS, FIS by FIS)")
    return r


def timestamp_resolution(runs):
    """The grain of the stamps: the greatest common divisor of their distances, one counter
    tick when they fall on every tick and not on every 2nd or 4th. (The smallest distance
    between two stamps, the figure before, says how close two phases come, not the grain:
    wire stamps of different FISes are never one tick apart.)"""
    stamps = sorted({r[k] for run in runs for r in run.records for k in
                     ("ts_submit", "ts_h2d", "ts_accept", "ts_setup", "ts_data_first",
                      "ts_data_last", "ts_status") if r[k]})
    grain = 0
    for s in stamps[1:]:
        grain = math.gcd(grain, s - stamps[0])
    figure("rtl.timestamp_resolution_ns", round(grain * TICK_NS, 3), "ns",
           "the grain of the phase stamps of the benchmark runs (the greatest common divisor of "
           f"the distances between {len(stamps)} stamps): one tick of the 64-bit counter in the SATA clock domain")


def power_cut_jitter(exe, runs=6):
    """Rails cut `delay` ticks after the 1st Data FIS of a queued write, with different
    traffic before it each run: the spread of (cut - its first payload dword on the pins -
    delay); the offsets themselves are 0 when the cut lands on the tick asked for."""
    offsets = []
    for k in range(runs):
        delay = 40 + 17 * k
        s = rig_sim.Script().link_up(1)
        for i in range(k * 3):  # shifts everything that follows by a different amount
            s.ncq(True, 50_000 + 64 * i, 8 + 8 * k, 10 + i)
        s.wait()
        s.desc(Protocol.POWER, POWER_OFF_AT_EVENT, user_tag=2, features=EVENT_DATA, count=1,
               timeout_ticks=delay)
        s.ncq(True, 4096 * (k + 1), 64, 100)
        s.wait().desc(Protocol.POWER, POWER_ON, user_tag=3).wait()
        r = run(exe, s.trace(750_000, 1_000_000))
        cut = [e for e in r.events if e["slot"] == EV_POWER_CUT]
        write = r.commands[100]
        # Where the write's first payload dword crossed the pins, read off the traced wire
        # (the Data FIS was cut short, so its record has no data stamps: engine_if.h).
        data = [f for f in r.wire_frames("tx", cut_too=True) if f[0] == 0x46 and f[1] > write["ts_h2d"]]
        if len(cut) != 1 or write["result"] != RESULT_LINK_LOST or not data:
            raise SystemExit(f"bench: power cut run {k} did not cut mid-write: {cut} {write}")
        offsets.append(cut[0]["ts_status"] - data[0][2] - delay)
    figure("rtl.power_cut_offset_ticks", max(abs(o) for o in offsets), "ticks",
           "the worst distance of a cut from the tick asked for (its trigger FIS's first payload "
           f"dword on the pins + delay); goal 0 (it was 1: the cut came a tick early); offsets {offsets}")
    figure("power.cut_offset_ticks", max(abs(o) for o in offsets), "ticks",
           f"issue 16's name for rtl.power_cut_offset_ticks: the worst of {runs} rtl runs' cut against the "
           f"tick asked for; goal 0; offsets {offsets}")
    figure("rtl.power_cut_jitter_ticks", max(offsets) - min(offsets), "ticks",
           f"spread over {runs} runs of the cut's tick relative to its trigger (the 1st Data FIS of "
           f"a queued write, delay 40..125 ticks, different traffic before it); offsets {offsets}")


def soc_speed(seconds=10):
    """The whole SoC (VexRiscv idling in the BIOS, the link up, the drive module) in
    litex_sim: timestamp ticks the counter advanced per wall second, read over the bridge;
    then how many run records a wall second the host bridge carries out of the ring RAM
    (soc_run.RingDrain's reads: a burst of whole records, as many as a UARTBone read takes)."""
    import time
    from fisrig_hw.soc.rig_soc import RING_RAM_BASE
    from fisrig.targets.rig import bridge, soc_run
    from fisrig_hw.soc import soc_build
    from fisrig.targets.rig.bios_console import BiosConsole
    build_dir = soc_build.default_build_dir()
    print("bench: rtl: building the rig SoC (cached)", file=sys.stderr, flush=True)
    soc_build.build_quietly(build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        port = soc_run.free_port()
        soc_run.prepare(build_dir, tmp, None, b"", PROFILE, FAULTS, port)
        console = BiosConsole(build_dir, sim_dir=tmp)
        b = bridge.connect(port)
        b.open()
        try:
            def ticks():
                return soc_run.rig_now(b, console.regs), time.monotonic()
            t0, w0 = ticks()
            time.sleep(seconds)
            t1, w1 = ticks()
            burst, taken, d0 = soc_run.RingDrain.BURST, 0, time.monotonic()
            while time.monotonic() - d0 < seconds:
                b.read_bytes(RING_RAM_BASE, soc_run.RECORD_BYTES * burst)
                taken += burst
            drained = taken / (time.monotonic() - d0)
        finally:
            b.close()
            console.close()
    figure("rtl.soc_sim_khz", round((t1 - t0) / (w1 - w0) / 1000, 1), "kHz",
           "simulated SATA clock cycles per wall second of the whole rig SoC in litex_sim "
           "(VexRiscv in the BIOS, link up, the drive module), over the host bridge; wall clock")
    figure("rtl.bridge_records_per_s", round(drained), "records/s",
           f"run records ({soc_run.RECORD_BYTES} bytes) the host bridge carried out of the ring RAM a wall "
           f"second, the simulated SoC over its UARTBone (reads of {soc_run.RingDrain.BURST} records); wall "
           "clock. A board at line rate makes one a command, rtl.ncq_4k_randread_iops_qd32 a second: "
           "docs/rtl-engine.md has what a board's bridges carry")


def soc_instructions_by_callgrind(seconds=20):
    """rtl.soc_sim_host_instructions_per_cycle: the whole SoC as rtl.soc_sim_khz runs it (the
    BIOS idle, the link up, the drive module), under valgrind's callgrind, which counts the
    simulation's instructions only while it is told to (callgrind_control), around two reads
    of the rig's counter through the bridge. A figure that a loaded machine does not move
    (where it goes: docs/performance.md, "The simulations' speed")."""
    import signal
    import subprocess
    import time
    from fisrig.targets.rig import bridge, soc_run
    from fisrig_hw.soc import soc_build
    from fisrig.targets.rig.bios_console import csr_map
    build_dir = soc_build.default_build_dir()
    regs, _ = csr_map(build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        port = soc_run.free_port()
        soc_run.prepare(build_dir, tmp, None, b"", PROFILE, FAULTS, port)
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--quiet", "--instr-atstart=no",
                                 "--callgrind-out-file=" + out,
                                 os.path.join(build_dir, "gateware", "obj_dir", "Vsim")],
                                cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            b = bridge.connect(port, timeout=600)
            b.open()
            try:
                def ticks():
                    return soc_run.rig_now(b, regs)
                while ticks() < 6 * TICK_HZ // 1000:  # past the link's coming up (5 ms)
                    time.sleep(1)
                def control(*what):
                    subprocess.run(["callgrind_control", *what, str(proc.pid)], check=True, capture_output=True)
                # The counter read inside the counted span: the few cycles of the reads are
                # counted, none of the uncounted ones while callgrind_control starts.
                control("-i", "on")
                t0 = ticks()
                time.sleep(seconds)
                t1 = ticks()
                control("-i", "off")
                control("-d")
            finally:
                b.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        totals = []
        for name in os.listdir(tmp):
            if name.startswith("callgrind.out"):
                with open(os.path.join(tmp, name)) as f:
                    totals += [int(line.split()[1]) for line in f if line.startswith(("totals:", "summary:"))]
    if not totals or t1 <= t0:
        print("bench: rtl: the SoC under callgrind gave no count: rtl.soc_sim_host_instructions_per_cycle "
              "not measured", file=sys.stderr)
        return
    figure("rtl.soc_sim_host_instructions_per_cycle", round(max(totals) / (t1 - t0)), "instructions",
           f"host instructions a simulated cycle of the whole rig SoC takes in litex_sim (the BIOS idle, the "
           f"link up), by valgrind's callgrind over {t1 - t0:,} cycles: what rtl.soc_sim_khz costs, "
           "independent of the machine's load (goal of issue 17: the SoC at 1,500 kHz)")


def instructions_by_callgrind(exe):
    """rtl.sim_host_instructions_per_cycle where the CPU gives no counter (virtual machines):
    a reduced run of the same kinds of traffic under valgrind's callgrind, which counts the
    instructions of the runner's cycle loop only (rig_core_runner.cpp toggles collection)."""
    rng = random.Random(5)
    s = rig_sim.Script().link_up(1)
    for i in range(4):
        s.ncq(True, i * SEQ_SECTORS, SEQ_SECTORS, 1000 + i)
    s.wait()
    for i in range(4):
        s.ncq(False, i * SEQ_SECTORS, SEQ_SECTORS, 2000 + i, check=True)
    s.wait()
    for i in range(32):
        s.ncq(bool(i & 1), rng.randrange(4 * SEQ_SECTORS // 8) * 8, 8, 3000 + i, data_word=8)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        # The Verilated model lives on main's stack: over the 8 MB valgrind gives it by default.
        r = rig_sim.run(exe, s, PROFILE, FAULTS, wrapper=["valgrind", "--tool=callgrind", "--quiet", "--instr-atstart=no",
                                                          "--collect-atstart=no", "--main-stacksize=268435456",
                                                          "--callgrind-out-file=" + out])
        # totals: the counted region's (the runner's Region ends with instrumentation off, after
        # which callgrind's summary line reads 0).
        totals = [int(line.split()[1]) for line in open(out) if line.startswith("totals:")] \
            if os.path.exists(out) else []
    if r.returncode or not totals:
        print("bench: rtl: no CPU instruction counter and the run under callgrind failed: "
              "rtl.sim_host_instructions_per_cycle not measured\n" + r.output[-2000:], file=sys.stderr)
        return
    figure("rtl.sim_host_instructions_per_cycle", round(totals[0] / r.stats["cycles"]), "instructions",
           f"host instructions a simulated SATA clock cycle takes, by valgrind's callgrind (this machine "
           f"gives no CPU counter) on a reduced run of the same traffic (4 + 4 x 128 KiB, 32 x 4 KiB, "
           f"{r.stats['cycles']} cycles): what rtl.sim_khz costs, independent of the machine's load")


def main() -> int:
    print("bench: rtl: building the rig core in Verilator", file=sys.stderr, flush=True)
    exe = rig_sim.build()
    seq = sequential(exe)
    rnd = random_4k(exe)
    timestamp_resolution([seq, rnd])
    cycles = seq.stats["cycles"] + rnd.stats["cycles"]
    wall = seq.stats["wall_s"] + rnd.stats["wall_s"]
    figure("rtl.sim_khz", round(cycles / wall / 1000, 1), "kHz",
           f"simulated SATA clock cycles per wall second, rig core (PHY, link, engine) and the "
           f"simulated drive in Verilator, no CPU ({cycles} cycles; wall clock, varies with the machine)")
    instructions = seq.stats["host_instructions"] + rnd.stats["host_instructions"]
    if min(seq.stats["host_instructions"], rnd.stats["host_instructions"]) > 0:
        figure("rtl.sim_host_instructions_per_cycle", round(instructions / cycles), "instructions",
               "host instructions (user space, the CPU's counter) a simulated SATA clock cycle "
               "takes in the same runs: what rtl.sim_khz costs, independent of the machine's load")
    else:
        instructions_by_callgrind(exe)
    power_cut_jitter(exe)
    soc_speed()
    soc_instructions_by_callgrind()
    return 0


if __name__ == "__main__":
    sys.exit(main())
