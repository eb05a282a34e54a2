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
