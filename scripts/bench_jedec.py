#!/usr/bin/env python3
"""The JEDEC-style TRIM test's figures at full length on the model target (default profile,
consumer-256gb), as JSON lines for scripts/bench_collect.py:

- plans.jedec_pass_s: wall seconds of one full-length NCQ + TRIM pass of the synthetic client
  trace (fisrig.traces.generate "client": 37.66 M commands on 256 GB), end to end as a user waits for
  it: the plan's secure erase and preparatory fill, generating the trace and compiling, the
  run, records.parquet and the report;
- plans.jedec_iops_trim_vs_notrim: the last 100,000-command window's IOPS of the NCQ pass with
  TRIM over the NCQ pass without (simulated time; > 1: TRIM keeps the drive faster).
The two passes are run as the built-in plan runs them (each on an erased, filled drive)."""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fisrig import plan
from fisrig.run import run_plan

WINDOW = 100_000


def one_pass(tmp: str, label: str):
    """The built-in plan cut to one of its passes (its erase, fill and replay)."""
    p = plan.load(plan.find("jedec-trim-trace"))
    p.steps = [s for s in p.steps if (s.label or "").startswith(label)]
    print(f"bench: model: jedec-trim-trace, the '{label}' pass at full length", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    r = run_plan(p, Path(tmp) / label.replace(",", "").replace(" ", "-"), quiet=True)
    wall = time.monotonic() - t0
    if r.status != "done":
        raise SystemExit(f"bench: the {label} pass ended {r.status}")
    ph = {x.label: x for x in r.phases}[label]
    t = np.sort(ph.t_status_ns)
    print(f"bench: {label}: {ph.commands} commands, {wall:.0f} s wall", file=sys.stderr, flush=True)
    return wall, WINDOW / ((t[-1] - t[-1 - WINDOW]) / 1e9), ph


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        wall, trim_iops, ph = one_pass(tmp, "NCQ, TRIM")
        _, notrim_iops, _ = one_pass(tmp, "NCQ, no TRIM")
    print(json.dumps({"name": "plans.jedec_pass_s", "value": round(wall, 1), "unit": "s",
                      "what": f"one full-length NCQ + TRIM pass of the synthetic client trace ({ph.commands} commands) "
                      f"on the model target, consumer-256gb, end to end (erase, fill, trace, run, records.parquet, "
                      f"report); wall clock on {os.cpu_count()} CPUs, varies with the machine; goal under 60 s"}))
    print(json.dumps({"name": "plans.jedec_iops_trim_vs_notrim", "value": round(trim_iops / notrim_iops, 3),
                      "unit": "ratio", "what": f"the last {WINDOW:,}-command window's IOPS, NCQ with TRIM "
                      f"({trim_iops:.0f}) over NCQ without ({notrim_iops:.0f}); consumer-256gb, simulated time"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
