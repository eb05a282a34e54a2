#!/usr/bin/env python3
"""Benchmark figures of the reviewers' built-in plans at full length on the model target,
as JSON lines for scripts/bench_collect.py:

- plans.fdf_fill_s_trim_on / plans.fdf_fill_s_trim_off: fill-delete-fill's second fill
  (simulated seconds) of the last run with TRIM on (R3) and with TRIM off (R6), on the
  plan's profile (blocking-gc-256gb, whose GC blocks the host), and
  plans.fdf_consumer_fill_s_trim_on / _off the same on consumer-256gb (GC that keeps up);
- plans.snia_rounds_to_steady_state (PTS-C, consumer-256gb) and
  plans.snia_e_rounds_to_steady_state (PTS-E, enterprise-200gb): the rounds the rig ran until
  steady state (the plans' 2-second cells; 26 means it did not reach it in 25);
- plans.jedec_pass_s and plans.jedec_iops_trim_vs_notrim: scripts/bench_jedec.py.
Simulated-time figures are deterministic; each run's wall time is printed to stderr."""
import json
import sys
import tempfile
import time
from pathlib import Path

from fisrig import plan
from fisrig.run import run_plan


def run(name: str, tmp: str, profile: str | None = None):
    p = plan.load(plan.find(name))
    print(f"bench: model: plan {name}{' on ' + profile if profile else ''} at full length", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    r = run_plan(p, Path(tmp) / f"{name}-{profile or p.profile}", profile=profile, quiet=True)
    print(f"bench: {name}: {time.monotonic() - t0:.0f} s wall", file=sys.stderr, flush=True)
    if r.status != "done":
        raise SystemExit(f"bench: {name} ended {r.status}")
    return p, r


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for profile, prefix in ((None, "plans.fdf_fill_s_trim_"), ("consumer-256gb", "plans.fdf_consumer_fill_s_trim_")):
            p, r = run("fill-delete-fill", tmp, profile)
            ph = {x.label: x for x in r.phases}
            for tag, run_no in (("on", 3), ("off", 6)):
                fill = ph[f"R{run_no} fill 2 (TRIM {tag})"]
                print(json.dumps({"name": prefix + tag, "value": round(fill.seconds, 3), "unit": "s",
                                  "what": f"fill-delete-fill, run R{run_no} (TRIM {tag}): the second fill's "
                                  f"simulated seconds ({profile or p.profile}, model target)"}))
        for name, figure in (("snia-pts-client", "plans.snia_rounds_to_steady_state"),
                             ("snia-pts-enterprise", "plans.snia_e_rounds_to_steady_state")):
            p, r = run(name, tmp)
            (pts,) = json.loads((r.run_dir / "pts.json").read_text())
            rounds = pts["steady_round"] if pts["steady_state_reached"] else pts["rounds_run"] + 1
            w = pts["window"]
            print(json.dumps({"name": figure, "value": rounds, "unit": "rounds",
                              "what": f"{name} ({p.profile}, 2 s cells, model target): rounds until 4 KiB random "
                              "write IOPS held steady by the PTS rule" +
                              ("" if pts["steady_state_reached"] else
                               f" ({pts['rounds_run'] + 1}: not in {pts['rounds_run']})") +
                              f"; last window average {w['average']:.0f} IOPS, range "
                              f"{w['range_pct_of_average']:.1f}%, excursion {w['excursion_pct_of_average']:.1f}%"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
