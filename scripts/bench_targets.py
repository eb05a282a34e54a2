#!/usr/bin/env python3
"""How far the model target's times are from the gateware's (issue 13), as JSON lines for
scripts/bench_collect.py: the built-in plan targets-agree on both targets, compared by
fisrig.compare (tests/rtl/test_targets_agree.py holds the same comparison to its goal).

  model_vs_rtl.latency_err_pct     the worst difference of a plan phase's median or p99
                                   latency (ts_status - ts_h2d), in percent of the rtl's,
                                   of those more than an ALIGN pair and a tick (3 ticks) apart
  model_vs_rtl.record_mismatches   records whose command, answer or phases differ

The rtl run is about 30 ms of drive time: a minute of wall time once the SoC is built."""
import json
import sys
import tempfile
from pathlib import Path

from fisrig import plan
from fisrig.compare import compare
from fisrig.run import run_plan

GOAL_PCT = 2.0


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def main() -> int:
    p = plan.load(plan.find("targets-agree"))
    with tempfile.TemporaryDirectory(prefix="fisrig-bench-targets-") as tmp:
        runs = {t: run_plan(p, Path(tmp) / t, target=t, quiet=True) for t in ("model", "rtl")}
        for t, r in runs.items():
            if r.status != "done":
                raise SystemExit(f"bench: the {t} run of targets-agree ended {r.status}")
        c = compare(runs["model"].run_dir, runs["rtl"].run_dir)
    worst = [r for r in c.rows if r.what == "latency" and r.beyond_a_tick and r.diff_pct == c.worst_latency_pct]
    figure("model_vs_rtl.latency_err_pct", round(c.worst_latency_pct, 3), "%",
           f"worst model-vs-rtl difference of a phase's p50/p99 latency (h2d to status) of those "
           f"more than an ALIGN pair and a tick apart, plan targets-agree (goal {GOAL_PCT:g}%); worst: " +
           (f"{worst[0].phase} {worst[0].stat}, {worst[0].a_ns} ns against {worst[0].b_ns} ns"
            if worst else "none more than an ALIGN pair and a tick apart"))
    figure("model_vs_rtl.record_mismatches", len([m for m in c.mismatches if m.startswith("record ")]),
           "records", "records whose command, result, status, error, D2H LBA, sectors or phases "
                      "differ between the targets, plan targets-agree (goal 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
