#!/usr/bin/env python3
"""The analyzer view's figure measurable before the gateware's capture (issue 62), as JSON
lines for bench_collect.py:

- capture.export_s_per_million_entries: `fisrig capture export --perfetto` of a model run's
  capture (4 KiB NCQ reads at QD32 on tiny-1gb, captured from the start: about a million
  entries, each command's H2D, D2H, DMA Setup, Data and SDB), its wall time over its
  entries in millions; the VCD export's beside it on stderr.
Wall clock: stderr says what each took."""
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from fisrig import plan
from fisrig.capture import perfetto, vcd
from fisrig.run import run_plan

PLAN = {"plan": {"name": "capture-bench", "profile": "tiny-1gb"},
        "step": [{"do": "workload", "label": "reads", "read_pct": 100, "transfer_kib": 4, "queue_depth": 32,
                  "commands": 200_000, "capture": {"trigger": "start", "before_us": 0, "after_us": 28_000_000}}]}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        r = run_plan(plan.from_dict(PLAN), Path(tmp) / "run", quiet=True, charts=False)
        if r.status != "done":
            raise SystemExit(f"bench: capture: the run ended {r.status}")
        entries = pq.ParquetFile(r.run_dir / "capture.parquet").metadata.num_rows
        t0 = time.monotonic()
        perfetto.write(r.run_dir, Path(tmp) / "c.perfetto-trace")
        t1 = time.monotonic()
        vcd.write(r.run_dir, Path(tmp) / "c.vcd")
        t2 = time.monotonic()
        print(f"bench: capture: {entries:,} entries; Perfetto export {t1 - t0:.1f} s, VCD export {t2 - t1:.1f} s",
              file=sys.stderr, flush=True)
        print(json.dumps({"name": "capture.export_s_per_million_entries", "value": round((t1 - t0) / entries * 1e6, 2),
                          "unit": "s", "what": f"`fisrig capture export --perfetto` of a model run's capture of "
                                               f"{entries:,} entries (200,000 4 KiB NCQ reads at QD32 captured "
                                               f"from the start), wall clock, a million entries; the VCD export "
                                               f"took {(t2 - t1) / entries * 1e6:.1f} s a million"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
