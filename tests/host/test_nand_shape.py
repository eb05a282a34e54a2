"""The simulated drive's latencies have a shape (issue 58, section 4): consumer-256gb's NAND
(its lower and upper pages' times and each block's spread, docs/drive-model.md "Timing")
reaches a fill's completions at queue depth 32 on the model target, where before every
command of the fill took the same 11,047 us, and the fill still holds its queue depth and
its rate. A tenth of the drive is filled: about 200 superblocks, each its own draw."""
from __future__ import annotations

import numpy as np

from fisrig import plan as plan_mod
from fisrig.run import run_plan


def test_consumer_fill_latencies_spread_at_qd32(tmp_path):
    p = plan_mod.from_dict({"plan": {"name": "nand-shape", "profile": "consumer-256gb"}, "step": [
        {"do": "secure_erase", "label": "erase"},
        {"do": "fill", "label": "fill", "transfer_kib": 128, "queue_depth": 32, "span_pct": 10}]})
    r = run_plan(p, tmp_path / "run", quiet=True)
    assert r.status == "done"
    fill = {ph.label: ph for ph in r.phases}["fill"]
    p50, p99 = np.percentile(np.asarray(fill.latency_ns), [50, 99])
    assert p99 / p50 > 1.2, (p50, p99)
    assert fill.qd_mean >= 0.9 * 32  # no warning: its figures are QD32 figures
    assert 360 < fill.mbps < 400     # the flash's rate as before (379.4 MB/s)


def test_a_fill_inside_a_superblock_left_open_holds_its_queue_depth(tmp_path):
    """fill-delete-fill's second fills (docs/plans.md): after a TRIM and a pause, a fill that
    starts inside a superblock an earlier write left open finds its dies out of step. The
    model's queued writes booked their DMA Setups into gaps of the wire ahead of earlier
    commands' data, a dozen open at once where SATA has one, and each open phase kept the
    host's H2Ds off the wire: the second fill held 18.1 commands of the 32 asked on the
    whole drive, 23.8 on half of it (here), 31.5 on 30% or less. A write's setup now waits
    for the data phase before it and for buffer room for its whole transfer (drive_rw.cc
    do_write): 31.5 on each."""
    fill = {"do": "fill", "transfer_kib": 128, "queue_depth": 32, "span_pct": 50}
    p = plan_mod.from_dict({"plan": {"name": "fill-after-trim", "profile": "blocking-gc-256gb", "seed": 1}, "step": [
        {"do": "secure_erase", "label": "erase"},
        {**fill, "label": "fill 1"},
        {"do": "trim", "label": "delete"},
        {"do": "idle", "label": "pause", "seconds": 10},
        {**fill, "label": "fill 2"}]})
    r = run_plan(p, tmp_path / "run", quiet=True)
    assert r.status == "done"
    phases = {ph.label: ph for ph in r.phases}
    for label in ("fill 1", "fill 2"):
        assert phases[label].qd_mean >= 0.95 * 32, (label, phases[label].qd_mean)
    assert abs(phases["fill 2"].mbps / phases["fill 1"].mbps - 1) < 0.02  # TRIM on: the same rate (378.1 and 378.7 MB/s)
