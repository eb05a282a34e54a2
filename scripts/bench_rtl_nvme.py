#!/usr/bin/env python3
"""The NVMe rig's figures (issue 63), as JSON lines for scripts/bench_collect.py: the NVMe
queue engine on the root port in Verilator (fisrig_bench.nvme_sim) against the simulated
controller at its TLP interface over PCIe Gen2 x4 (the rig's 64-bit PHY stream at 250 MHz),
driven straight from descriptor scripts at a kept queue depth. Rates are in simulated time
on the engine's own stamps (150 MHz), first doorbell to last CQE as part 1's figures are.

The drive is fast-1gb, clean, whose NAND and controller are far faster than the link, so the
figures are the rig's and the link's: each is given against the ceiling part 1's link
arithmetic (docs/nvme.md) computes for Gen2 x4: its bytes a command on the direction the
data takes, at 2 bytes a ns."""
import json
import random

from fisrig_bench import nvme_sim
from fisrig_hw import contract as c

TICK_NS = 1e9 / c.FISRIG_TICK_HZ
PROFILE, FAULTS = "fast-1gb", "enable_us=5"
GEN2_X4_BYTES_PER_NS = 5 * 4 * 8 / 10 / 8
# docs/nvme.md's bytes a command on the busy direction (x4, 256-byte payloads).
RANDREAD_BYTES, SEQREAD_BYTES = 4_576, 143_482
RAND_COMMANDS, SEQ_COMMANDS = 4000, 256


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def run(exe, script):
    r = nvme_sim.run(exe, script, PROFILE, FAULTS)
    if r.returncode:
        raise SystemExit("bench: nvme rtl run failed:\n" + r.output[-3000:])
    bad = [x for x in r.records if x["result"] != c.FISRIG_RESULT_OK]
    if bad:
        raise SystemExit(f"bench: commands failed: {bad[:3]}")
    return r


def span_s(records):
    return (max(r["ts_cqe"] for r in records) - min(r["ts_doorbell"] for r in records)) * TICK_NS * 1e-9


def main():
    exe = nvme_sim.build()
    rng = random.Random(5)
    blocks = 1 << 20   # its first 512 MiB
    s = nvme_sim.Script(max_cycles=200_000_000).depth(32)
    for i in range(RAND_COMMANDS):
        s.io(1, c.FISRIG_NVME_CMD_READ, i, rng.randrange(blocks // 8) * 8, 8, data_bytes=4096)
    r = run(exe, s.wait())
    iops = RAND_COMMANDS / span_s(r.records)
    ceiling = GEN2_X4_BYTES_PER_NS * 1e9 / RANDREAD_BYTES
    figure("rtl.nvme_randread_4k_iops_qd32", round(iops), "IOPS",
           f"{RAND_COMMANDS} x 4 KiB random reads, one queue at QD32, clean fast-1gb, PCIe Gen2 x4, first doorbell to "
           f"last CQE on the engine's stamps: {100 * iops / ceiling:.1f}% of the link's ceiling {ceiling:,.0f} "
           f"(docs/nvme.md's 4,576 bytes a command at 2 bytes a ns; goal 95%)")
    s = nvme_sim.Script(max_cycles=200_000_000).depth(16)
    for i in range(SEQ_COMMANDS):
        s.io(1, c.FISRIG_NVME_CMD_READ, i, i * 256, 256, data_bytes=128 << 10)
    r = run(exe, s.wait())
    mbps = SEQ_COMMANDS * (128 << 10) / span_s(r.records) / 1e6
    ceiling = GEN2_X4_BYTES_PER_NS * 1e3 * (128 << 10) / SEQREAD_BYTES
    figure("rtl.nvme_seq_read_mbps", round(mbps, 1), "MB/s",
           f"{SEQ_COMMANDS} x 128 KiB sequential reads, one queue at QD16, clean fast-1gb, PCIe Gen2 x4, first "
           f"doorbell to last CQE: {100 * mbps / ceiling:.1f}% of the link's ceiling {ceiling:,.0f} MB/s "
           f"(docs/nvme.md's 143,482 bytes a command; goal 98%)")
    power_cut_jitter(exe)
    model_vs_rtl()


def power_cut_jitter(exe):
    """Rails cut `delay` ticks after the first TLP of each kind (doorbell, SQE, data, CQE) of a
    128 KiB write, with different traffic before it each run: the spread of (cut - the TLP's
    end - delay) over the runs; 0 when every cut lands on the tick asked for."""
    offsets = []
    kinds = (c.FISRIG_EVENT_DOORBELL, c.FISRIG_EVENT_SQE, c.FISRIG_EVENT_DATA_TLP, c.FISRIG_EVENT_CQE)
    for k, kind in enumerate(kinds):
        for j, delay in enumerate((40, 97, 250)):
            s = nvme_sim.Script(max_cycles=40_000_000)
            for i in range(j + k):   # shifts everything after by a different amount
                s.io(1 + i % 2, c.FISRIG_NVME_CMD_WRITE, 100 + i, 64 * i, 8 + 8 * j, data_bytes=(8 + 8 * j) * 512,
                     source=c.FISRIG_DATA_ZEROS)
            s.wait().power(c.FISRIG_POWER_OFF_AT_EVENT, 1, kind=kind, count=1, delay=delay).wait()
            s.io(1, c.FISRIG_NVME_CMD_WRITE, 2, 4096, 256, data_bytes=128 << 10, source=c.FISRIG_DATA_ZEROS).wait()
            r = nvme_sim.run(exe, s, PROFILE, FAULTS)
            cuts = r.cuts
            if r.returncode or len(cuts) != 1:
                raise SystemExit("bench: nvme power cut run failed:\n" + r.output[-3000:])
            offsets.append(cuts[0]["ts_status"] - cuts[0]["ts_trigger"] - delay)
    figure("nvme.power_cut_jitter_ticks", max(offsets) - min(offsets), "ticks",
           f"the spread of (cut - its TLP's end - delay) over {len(offsets)} cuts at the 1st doorbell, SQE, data "
           f"TLP and CQE of a 128 KiB write, delays 40, 97 and 250 ticks, the NVMe core in Verilator (offsets "
           f"{sorted(set(offsets))}: 0 is the tick asked)")


def model_vs_rtl():
    """The built-in plan targets-agree-nvme on both targets, compared as `fisrig compare` does:
    the worst of the published figures (IOPS, MB/s, latency mean, p50, p99, p99.9, max of
    each phase) in percent of the rtl run's."""
    import tempfile
    from pathlib import Path

    from fisrig import plan
    from fisrig.report.compare import compare
    from fisrig.run import run_plan
    p = plan.load(plan.find("targets-agree-nvme"))
    with tempfile.TemporaryDirectory() as tmp:
        runs = {t: run_plan(p, Path(tmp) / t, target=t, quiet=True) for t in ("model", "rtl")}
        for t, r in runs.items():
            if r.status != "done":
                raise SystemExit(f"bench: targets-agree-nvme on {t} ended {r.status}")
        cmp = compare(runs["model"].run_dir, runs["rtl"].run_dir, in_order=False)
    w = cmp.worst_published
    over = len(cmp.published_failing(2.0))
    figure("nvme_model_vs_rtl.published_err_pct", round(cmp.published_err_pct, 2), "%",
           f"targets-agree-nvme on the model and the NVMe rig's gateware (fast-1gb-nvme-rig): the worst published "
           f"figure's difference, {w.phase} {w.what} ({over} of {len(cmp.published)} over 2%; records differing: "
           f"{cmp.differing_records}; goal 2%)" if w else "targets-agree-nvme: no figure differs")


if __name__ == "__main__":
    main()
