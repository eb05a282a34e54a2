#!/usr/bin/env python3
"""Sweep figures (issue 61) on this machine's cores, as JSON lines for bench_collect.py:

- sweep.speedup_2_workers: a sweep of 4 equal points (tests/host/sweeps/short-plan.toml at
  1,500,000 writes of 128 KiB, seeds 1 to 4) on a local cluster of 1 worker, then of 2, in
  this one run: the first's wall time over the second's, the median of PAIRS such pairs
  (one pair's ratio moved from 1.63 to 1.94 between runs on a quiet machine:
  docs/performance.md); goal at least 1.8 on 2 cores;
- sweep.overhead_s_per_point: a sweep of 12 points of a plan that runs in a blink (an
  IDENTIFY) on 1 worker: its wall time less its points' own run times, a point (the
  cluster's start, the scheduling, the checks and the manifest and dataset included; goal
  under 0.5 s).
Wall clock: stderr says what each took."""
import json
import sys
import tempfile
import time
from pathlib import Path

from fisrig import sweep

SWEEPS = Path(__file__).resolve().parents[1] / "tests" / "host" / "sweeps"
PAIRS = 3


def figure(name, value, unit, what):
    print(json.dumps({"name": name, "value": value, "unit": unit, "what": what}), flush=True)


def timed(sw, out: Path, workers: int):
    t0 = time.monotonic()
    r = sweep.run(sw, out, workers=workers, quiet=True)
    wall = time.monotonic() - t0
    if r.failed:
        raise SystemExit(f"bench: sweep: {len(r.failed)} points failed: {r.failed[0]}")
    return wall, r


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # Points of the model's work more than the host's: 128 KiB writes over the whole 1 GB
        # drive again and again (GC), a record a command, and a command the model's tens of us.
        (tmp / "plan.toml").write_text((SWEEPS / "short-plan.toml").read_text()
                                       .replace("transfer_kib = 4", "transfer_kib = 128")
                                       .replace("commands = 3000", "commands = 1500000"))
        (tmp / "equal.toml").write_text('[sweep]\nname = "equal"\nplan = "plan.toml"\n\n'
                                        '[[axis]]\nkey = "plan.seed"\nvalues = [1, 2, 3, 4]\n')
        equal = sweep.load(tmp / "equal.toml")
        pairs = []
        for k in range(PAIRS):
            one, r1 = timed(equal, tmp / f"one{k}", 1)
            two, r2 = timed(equal, tmp / f"two{k}", 2)
            alone, beside = [p["wall_s"] for p in r1.points], [p["wall_s"] for p in r2.points]
            print(f"bench: sweep: 4 points, 1 worker {one:.1f} s, 2 workers {two:.1f} s ({one / two:.2f}); a point's "
                  f"run {min(alone):.1f} to {max(alone):.1f} s alone, {min(beside):.1f} to {max(beside):.1f} s two at "
                  "a time", file=sys.stderr, flush=True)
            pairs.append((one / two, one, two))
        ratio, one, two = sorted(pairs)[len(pairs) // 2]
        figure("sweep.speedup_2_workers", round(ratio, 3), "x",
               f"a sweep of 4 equal points (1,500,000 writes of 128 KiB at QD8 on tiny-1gb, 4 seeds) on a local cluster of "
               f"1 worker over 2 workers, wall clock, the median of {PAIRS} pairs in this run "
               f"({', '.join(f'{r:.2f}' for r, _, _ in pairs)}; the median's {one:.1f} s over {two:.1f} s); "
               "goal at least 1.8 on 2 cores")
        (tmp / "blink.toml").write_text('[plan]\nname = "blink"\nprofile = "tiny-1gb"\n\n[[step]]\ndo = "identify"\n')
        (tmp / "many.toml").write_text('[sweep]\nname = "many"\nplan = "blink.toml"\n\n'
                                       '[[axis]]\nkey = "plan.seed"\nvalues = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n')
        many = sweep.load(tmp / "many.toml")
        wall, r = timed(many, tmp / "many", 1)
        own = sum(p["wall_s"] for p in r.points)
        print(f"bench: sweep: 12 blink points on 1 worker: {wall:.1f} s, their runs {own:.1f} s",
              file=sys.stderr, flush=True)
        figure("sweep.overhead_s_per_point", round((wall - own) / len(r.points), 3), "s",
               f"a sweep of 12 points whose run is an IDENTIFY, on 1 worker: its wall time ({wall:.1f} s) less its "
               f"points' own runs ({own:.1f} s), a point: the cluster's start, checks, scheduling, manifest and "
               "dataset; goal under 0.5 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
