#!/usr/bin/env python3
"""Each board's rig SoC (fisrig_boards) synthesized with yosys's synth_xilinx, as JSON lines
for scripts/bench_collect.py: boards.<name>.luts, .ffs, .brams, and each as a share of the
part (.luts_pct, ...; issue 17's goal: every board under 70% of its part's LUTs). Both
boards are synthesized at once, one yosys each (2 cores); each one's wall time goes to
stderr."""
import json
import sys
import tempfile

from fisrig_boards import build

UNITS = {"luts": "LUTs", "ffs": "flip-flops", "brams": "36 Kb block RAMs"}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            reports = build.synthesize_all(tmp)
        except build.BoardError as e:
            raise SystemExit(f"bench: {e}")
    for board, (r, wall) in reports.items():
        print(f"bench: {board} synthesized in {wall:.0f} s wall", file=sys.stderr, flush=True)
        for key, unit in UNITS.items():
            what = f"{board} ({r['part']}, default SATA generation): {unit} after yosys synth_xilinx"
            print(json.dumps({"name": f"boards.{board}.{key}", "value": r[key], "unit": unit, "what": what}))
            print(json.dumps({"name": f"boards.{board}.{key}_pct", "value": r[f"{key}_pct"], "unit": "%",
                              "what": what + " as a share of the part's" + (" (goal under 70%)" if key == "luts" else "")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
