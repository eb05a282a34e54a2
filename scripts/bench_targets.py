#!/usr/bin/env python3
"""How far the model target's times are from the gateware's (issue 13), as JSON lines for
scripts/bench_collect.py: the built-in plan targets-agree on both targets, compared by
fisrig.compare (tests/rtl/test_targets_agree.py holds the same comparison to its goal).

  model_vs_rtl.latency_err_pct     the worst difference of a plan phase's median or p99
                                   latency (ts_status - ts_h2d), in percent of the rtl's,
                                   of those more than an ALIGN pair and a tick (3 ticks) apart
  model_vs_rtl.record_mismatches   records whose command, answer or phases differ
  model_vs_rtl.iops_err_pct        the worst difference of a plan phase's IOPS (commands over
                                   first submit to last status), in percent of the rtl's, of
                                   the phases whose spans are more than 3 ticks apart: the rig's
                                   CPU time between commands counts here (sim/model/vm_cpu_time.h)

and at queue depth 32 (issue 17), the built-in plan targets-agree-qd32 on both targets:

  fw.ncq_4k_randwrite_iops_qd32    the rtl run's 4 KiB random write phase: commands over first
  fw.ncq_4k_randread_iops_qd32     submit to last status, the firmware's VM issuing them on the
                                   SoC's VexRiscv (goal: 98% of rtl.ncq_4k_rand*_iops_qd32,
                                   the engine driven without a CPU)
  model_vs_rtl_qd32.iops_err_pct, .latency_err_pct, .record_mismatches
                                   as above, its records matched in any completion order

and over both plans (issue 58, section 2):

  model_vs_rtl.published_err_pct   the worst difference, in percent of the rtl's, of every
                                   figure a user publishes of every phase of both plans:
                                   IOPS, MB/s, and the latency from submit to status (mean,
                                   p50, p99, p99.9, max), as the headline and summary.json give
                                   them (fisrig.compare.Figure), of those more than an ALIGN
                                   pair and a tick apart (a rate: over spans so far apart)

The rtl runs are about 30 and 80 ms of drive time: a minute of wall time once the SoC is
built."""
import json
import sys
import tempfile
from pathlib import Path

from fisrig import plan
from fisrig.report.compare import compare
from fisrig.run import run_plan

GOAL_PCT = 2.0


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def both_targets(name, in_order=True):
    """The built-in plan `name` on the model and rtl targets, compared (model against rtl)."""
    p = plan.load(plan.find(name))
    with tempfile.TemporaryDirectory(prefix="fisrig-bench-targets-") as tmp:
        runs = {t: run_plan(p, Path(tmp) / t, target=t, quiet=True) for t in ("model", "rtl")}
        for t, r in runs.items():
            if r.status != "done":
                raise SystemExit(f"bench: the {t} run of {name} ended {r.status}")
        return compare(runs["model"].run_dir, runs["rtl"].run_dir, in_order=in_order)


def main() -> int:
    c = both_targets("targets-agree")
    worst = [r for r in c.rows if r.what == "latency" and r.beyond_a_tick and r.diff_pct == c.worst_latency_pct]
    figure("model_vs_rtl.latency_err_pct", round(c.worst_latency_pct, 3), "%",
           f"worst model-vs-rtl difference of a phase's p50/p99 latency (h2d to status) of those "
           f"more than an ALIGN pair and a tick apart, plan targets-agree (goal {GOAL_PCT:g}%); worst: " +
           (f"{worst[0].phase} {worst[0].stat}, {worst[0].a_ns} ns against {worst[0].b_ns} ns"
            if worst else "none more than an ALIGN pair and a tick apart"))
    figure("model_vs_rtl.record_mismatches", c.differing_records,
           "records", "records whose command, result, status, error, D2H LBA, sectors or phases "
                      "differ between the targets, plan targets-agree (goal 0)")
    slowest = c.worst_iops
    figure("model_vs_rtl.iops_err_pct", round(c.worst_iops_pct, 3), "%",
           f"worst model-vs-rtl difference of a phase's IOPS (first submit to last status, the rig's CPU "
           f"time between commands included), plan targets-agree, of the phases whose spans are more than "
           f"an ALIGN pair and a tick apart (goal {GOAL_PCT:g}%)" +
           (f"; worst: {slowest[0]}, {slowest[1]:,.0f} against {slowest[2]:,.0f}" if slowest else ""))
    qd32 = queued()
    published({"targets-agree": c, "targets-agree-qd32": qd32})
    return 0


def published(by_plan):
    """The worst published figure (fisrig.compare.Figure) of every phase of both plans."""
    worst = max(((name, c.worst_published) for name, c in by_plan.items() if c.worst_published),
                key=lambda x: x[1].diff_pct, default=None)
    over = sum(len(c.published_failing(GOAL_PCT)) for c in by_plan.values())
    total = sum(len(c.published) for c in by_plan.values())
    figure("model_vs_rtl.published_err_pct", round(worst[1].diff_pct, 3) if worst else 0.0, "%",
           "worst model-vs-rtl difference of a published figure (IOPS, MB/s, and latency from submit to status: "
           "mean, p50, p99, p99.9, max, as the headline and summary.json give them) of every phase of plans "
           "targets-agree and targets-agree-qd32, in percent of the rtl's, of those more than an ALIGN pair and "
           f"a tick apart (goal {GOAL_PCT:g}%); {over} of {total} over the goal" +
           (f"; worst: {worst[0]}, {worst[1].phase} {worst[1].what}, {_value(worst[1])} against {_value(worst[1], 'b')}"
            if worst else ""))


def _value(f, side="a"):
    v = getattr(f, side)
    return f"{v / 1e3:,.2f} us" if f.is_time else f"{v:,.1f} {f.what}"


def queued():
    c = both_targets("targets-agree-qd32", in_order=False)
    for name, phase in [("fw.ncq_4k_randwrite_iops_qd32", "ncq write 4k rand"),
                        ("fw.ncq_4k_randread_iops_qd32", "ncq read 4k rand")]:
        figure(name, round(c.iops[phase][1]), "IOPS",
               f"plan targets-agree-qd32 on the rtl target, phase '{phase}': 3,000 commands of 4 KiB at QD32 "
               "over 16 MiB drawn by the firmware's VM on the SoC's VexRiscv, first submit to last status "
               "(goal: 98% of the engine-direct rtl.ncq_4k_rand*_iops_qd32; the model target gives "
               f"{c.iops[phase][0]:,.0f})")
    figure("model_vs_rtl_qd32.iops_err_pct", round(c.worst_iops_pct, 3), "%",
           f"worst model-vs-rtl difference of a phase's IOPS, plan targets-agree-qd32 (goal {GOAL_PCT:g}%)")
    figure("model_vs_rtl_qd32.latency_err_pct", round(c.worst_latency_pct, 3), "%",
           f"worst model-vs-rtl difference of a phase's p50/p99 latency (h2d to status) at QD32, plan "
           f"targets-agree-qd32 (goal {GOAL_PCT:g}%)")
    figure("model_vs_rtl_qd32.record_mismatches", c.differing_records,
           "records", "records whose command, result, status, error, D2H LBA, sectors or phases differ "
                      "between the targets, plan targets-agree-qd32, matched in any completion order (goal 0)")
    return c


if __name__ == "__main__":
    sys.exit(main())
