#!/usr/bin/env python3
"""The analyzer view's figures (issue 62), as JSON lines for bench_collect.py:

- capture.export_s_per_million_entries: `fisrig capture export --perfetto` of a model run's
  capture (4 KiB NCQ reads at QD32 on tiny-1gb, captured from the start: about a million
  entries, each command's H2D, D2H, DMA Setup, Data and SDB), its wall time over its
  entries in millions; the VCD export's beside it on stderr (wall clock);
- capture.bytes_per_fis: the gateware's capture on the rtl target of the main job's opening
  (torture-idle-trim-recovery's clean write sweep on its profile, a fresh drive being a
  secure-erased one: its first 600 us, 128 KiB WRITE DMA EXTs at QD1), the ring's bytes
  (its entries at engine/capture.py's width) a FIS. Not its first minute: a minute of the
  rtl target is hours of simulation;
- capture.bytes_per_fis_qd32_reads and capture.max_rate_fis_per_s: the same of 4 KiB NCQ
  reads at QD32, from the first H2D of tag 4 (the rig holds about five such reads in
  flight: the queue as full as it gets) for 25 us, and the FISes a second it kept, with
  none dropped (deterministic: simulated time)."""
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
        rtl_figures(Path(tmp))
    return 0


RTL_PLAN = {"plan": {"name": "capture-rate", "profile": "tiny-1gb"},
            "step": [{"do": "workload", "label": "reads", "read_pct": 100, "transfer_kib": 4, "queue_depth": 32,
                      "commands": 400, "capture": {"trigger": "tag:4", "before_us": 0, "after_us": 25}}]}


def main_job_opening() -> dict:
    """The main job's plan cut to its opening: its clean sweep's first MiB on its profile, the
    capture's window its first 600 us (the ring's 1,024 entries hold about 900 us of it)."""
    main = plan.load(plan.find("torture-idle-trim-recovery"))
    sweep = next(s for s in main.steps if s.do == "sweep")
    step = {"do": "sweep", "label": sweep.label, **sweep.args, "zones": 1, "zone_mib": 1,
            "capture": {"trigger": "start", "before_us": 0, "after_us": 600}}
    return {"plan": {"name": "capture-main-opening", "profile": main.profile}, "step": [step]}


def rtl_window(run_dir: Path, status: str):
    """The capture's one window: (its entries, its FISes, its span in s); the bench stops when
    it was cut short, dropped entries or the run did not end well."""
    cap = pq.read_table(run_dir / "capture.parquet").to_pandas()
    if cap.empty:
        raise SystemExit(f"bench: capture: the rtl run's capture never fired ({status})")
    t = cap.iloc[0]
    dropped, first, last = int(t["dwords"][5]), int(t["dwords"][1]), int(t["dwords"][3])
    if status != "done" or t["cut_short"] or dropped:
        raise SystemExit(f"bench: capture: the rtl run ended {status}, its window cut short {t['cut_short']}, "
                         f"{dropped} entries dropped")
    return len(cap) - 1, int((cap["kind"] == "fis").sum()), (last - first) / 150e6


def rtl_figures(tmp: Path) -> None:
    from fisrig_hw.engine.capture import ENTRY_BITS
    r = run_plan(plan.from_dict(main_job_opening()), tmp / "rtl-main", target="rtl", quiet=True, charts=False)
    entries, fis, _ = rtl_window(r.run_dir, r.status)
    print(json.dumps({"name": "capture.bytes_per_fis", "value": round(entries * ENTRY_BITS / 8 / fis, 1), "unit": "B",
                      "what": f"the gateware's capture ring on the rtl target (Gen3) of the main job's opening (its "
                              f"clean write sweep's first 600 us on its profile: 128 KiB WRITE DMA EXTs at QD1): "
                              f"{entries} entries of {ENTRY_BITS} bits (FISes and primitive runs, both ways) for "
                              f"{fis} FISes; not its first minute, hours of rtl simulation; deterministic"}),
          flush=True)
    r = run_plan(plan.from_dict(RTL_PLAN), tmp / "rtl", target="rtl", quiet=True, charts=False)
    entries, fis, seconds = rtl_window(r.run_dir, r.status)
    print(f"bench: capture: rtl window {seconds * 1e6:.0f} us: {entries} entries, {fis} FISes, none dropped",
          file=sys.stderr, flush=True)
    print(json.dumps({"name": "capture.bytes_per_fis_qd32_reads", "value": round(entries * ENTRY_BITS / 8 / fis, 1),
                      "unit": "B",
                      "what": f"the gateware's capture ring on the rtl target (Gen3), 4 KiB NCQ reads at QD32 from "
                              f"tag 4's first H2D for 25 us: {entries} entries of {ENTRY_BITS} bits (FISes and "
                              f"primitive runs, both ways) for {fis} FISes; deterministic"}), flush=True)
    print(json.dumps({"name": "capture.max_rate_fis_per_s", "value": round(fis / seconds), "unit": "FIS/s",
                      "what": f"the FISes a second the gateware's capture kept with none dropped, on the rtl target "
                              f"(Gen3) under 4 KiB NCQ reads at QD32, the link busy: {fis} in {seconds * 1e6:.0f} us "
                              f"of simulated time; goal: line rate, every FIS kept"}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
