#!/usr/bin/env python3
"""Power-loss figures (issue 16) on the model target, as JSON lines for bench_collect.py:

- power.cycles_per_s_model: cut, recover and verify cycles a wall second of the model
  target (fisrig-model, one process, one core) over the honest 10,000-cycle sweep below;
- power.verdict_cycles_per_s: the same cycles a wall second of the host's classification
  (power_verdicts.classify over records.parquet);
- power.honest_failures: cycles of that sweep with a failure class on plp-honest (goal 0);
- power.classes_detected: of the lying profiles (sim/ssd/profiles/plp-*.toml), how many
  the checker names by their lie's class on a short sweep (goal: all of them).
The wall-time figures vary with the machine (stderr says which run took how long)."""
import json
import sys
import tempfile
import time
from pathlib import Path

from fisrig.targets import drive_catalog
from fisrig import plan
from fisrig.analysis import power_verdicts as pv
from fisrig.run import run_plan

# The tests' short sweep and the lying profiles, one copy each.
SWEEP = Path(__file__).resolve().parents[1] / "tests" / "host" / "plans" / "plp-short.toml"
LIES = drive_catalog.LYING_PROFILES

CYCLES = 10_000
HONEST = {
    "plan": {"name": "bench-power-honest", "profile": "plp-honest"},
    "step": [
        {"do": "workload", "label": "precondition", "pattern": "sequential", "lba_count": 2048,
         "transfer_kib": 64, "commands": 16},
        {"do": "flush"},
        # QD32 writes of 4, 16 and 64 KiB with FLUSHes among them, the cut swept from the
        # 20th completion's SDB to 300 us after it.
        {"do": "power_loss", "label": "honest sweep", "cycles": CYCLES, "queue_depth": 32, "event": "sdb",
         "count": 20, "delay_ns": 0, "delay_ns_to": 300000, "flush_pct": 5, "commands": 64},
    ],
}


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        r = run_plan(plan.from_dict(HONEST), Path(tmp) / "honest", quiet=True)
        print(f"bench: power: honest {CYCLES} cycles: model {r.outcome.wall_s:.1f} s, whole run "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        if r.status != "done":
            raise SystemExit(f"bench: power: the honest sweep ended {r.status}")
        meta = json.loads((r.run_dir / "run.json").read_text())
        t1 = time.monotonic()
        steps = pv.classify(r.run_dir, meta)
        classify_s = time.monotonic() - t1
        step = steps[0].summary()
        if step["cycles"] != CYCLES:
            raise SystemExit(f"bench: power: {step['cycles']} of {CYCLES} cycles ran")
        figure("power.cycles_per_s_model", round(CYCLES / r.outcome.wall_s, 1), "cycles/s",
               f"cut, power on, ready and verify cycles a wall second of fisrig-model (one core): {CYCLES} cycles "
               f"of QD32 writes (4/16/64 KiB, 5% FLUSH) over 1 MiB, each read back whole, in {r.outcome.wall_s:.1f} s; "
               "goal 200")
        figure("power.verdict_cycles_per_s", round(CYCLES / classify_s, 1), "cycles/s",
               f"the host's classification of the same cycles from records.parquet, {classify_s:.1f} s")
        figure("power.honest_failures", step["cycles_with_failures"], "cycles",
               f"cycles with a failure class over {CYCLES} cuts of plp-honest (goal 0); its classes: "
               + ", ".join(f"{n} in {c['cycles']}" for n, c in step["classes"].items()))
        named = {}
        for profile, lie in LIES.items():
            r = run_plan(plan.load(SWEEP), Path(tmp) / profile, profile=profile, quiet=True)
            found = {n for s in json.loads((r.run_dir / pv.POWER_JSON).read_text())["steps"]
                     for n, c in s["classes"].items() if c["severity"] == "failure"}
            named[profile] = lie in found
            print(f"bench: power: {profile}: {lie} {'named' if lie in found else 'MISSED'} (found {sorted(found)})",
                  file=sys.stderr, flush=True)
        figure("power.classes_detected", sum(named.values()), "classes",
               f"of the {len(LIES)} lying profiles, those whose lie the checker names by its class on a 28-cycle "
               "sweep: " + ", ".join(f"{p} {LIES[p]} {'yes' if ok else 'NO'}" for p, ok in named.items())
               + f"; {len(pv.CLASSES)} classes in all, identity_changed has no lying profile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
