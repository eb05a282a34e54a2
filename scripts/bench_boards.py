#!/usr/bin/env python3
"""Each board's rig SoC (fisrig_boards) synthesized with yosys's synth_xilinx, as JSON lines
for scripts/bench_collect.py: boards.<name>.luts, .ffs, .brams, and each as a share of the
part (.luts_pct, ...; issue 17's goal: every board under 70% of its part's LUTs). Both
boards are synthesized at once, one yosys each (2 cores); each one's wall time goes to
stderr."""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fisrig_boards import build

UNITS = {"luts": "LUTs", "ffs": "flip-flops", "brams": "36 Kb block RAMs"}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        runs = {b: subprocess.Popen([sys.executable, "-m", "fisrig_boards.build", b, "--synth", "--out", tmp],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for b in build.BOARDS}
        for board, run in runs.items():
            _, err = run.communicate()
            if run.returncode:
                raise SystemExit(f"bench: {board}'s synthesis failed: {err.strip().splitlines()[-1:]}")
            print(f"bench: {board} synthesized in {time.monotonic() - t0:.0f} s wall", file=sys.stderr, flush=True)
            r = json.loads((Path(tmp) / board / "resources.json").read_text())
            for key, unit in UNITS.items():
                what = f"{board} ({r['part']}, default SATA generation): {unit} after yosys synth_xilinx"
                print(json.dumps({"name": f"boards.{board}.{key}", "value": r[key], "unit": unit, "what": what}))
                print(json.dumps({"name": f"boards.{board}.{key}_pct", "value": r[f"{key}_pct"], "unit": "%",
                                  "what": what + " as a share of the part's" + (" (goal under 70%)" if key == "luts" else "")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
