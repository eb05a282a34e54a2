"""The SNIA PTS steps of a run, for its report: pts.json (analysis/pts.py's verdicts) and the
steady-state chart, drawn as the PTS draws it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from fisrig.analysis.pts import COLUMNS, PLOT, PtsResult, analyse, write
from fisrig.records.store import PARQUET, reading_parquet


def report(run_dir: Path, meta: dict, caption: str, table: pa.Table | None = None) -> list[Path]:
    """A run's PTS steps, for its report: pts.json and the steady-state chart (the paths
    written); a run without a PTS step gets neither (and loses stale ones). `table`: the
    run's records as the report holds them; only COLUMNS it lacks are read from the file
    (the SNIA PTS client plan's 79.5 M records: reading all of COLUMNS again was 9 s and
    3 GB more at the report's peak)."""
    run_dir = Path(run_dir)
    done = []
    if any(s.get("do") == "pts_iops" for s in meta.get("plan", {}).get("steps", [])):
        import pyarrow.parquet as pq
        have = [] if table is None else [c for c in COLUMNS if c in table.column_names]
        with reading_parquet(run_dir / PARQUET):  # a damaged file: InputError naming it
            read = pq.read_table(run_dir / PARQUET, columns=[c for c in COLUMNS if c not in have])
        for c in have:
            read = read.append_column(c, table.column(c))
        done = analyse(read, meta)
    paths = [p for p in [write(run_dir, done)] if p]
    if done and plot(done, run_dir / PLOT, caption):
        paths.append(run_dir / PLOT)
    else:
        (run_dir / PLOT).unlink(missing_ok=True)
    return paths


def plot(results: list[PtsResult], path: Path, caption: str) -> bool:
    """Each round's tracked IOPS, the window, its average with the +-10% band (a 20% range)
    and the least-squares line across it, as the PTS's steady-state chart draws them."""
    import matplotlib.pyplot as plt

    from fisrig.report.plots import finish
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for r in results:
        if not r.rounds:
            continue
        x = [p["round"] for p in r.rounds]
        ax.plot(x, [p["tracked_iops"] for p in r.rounds], "o-", lw=1, ms=4, label=f"{r.base}: tracked cell IOPS")
        w = r.window_figures
        if r.window:
            lo, hi = r.window[0], r.window[-1]
            avg = w["average"]
            ax.axvspan(lo - 0.3, hi + 0.3, color="C2", alpha=0.12,
                       label=f"window {lo}-{hi}" + (" (steady)" if r.steady_round else " (not steady)") +
                       (" by the rule, not the PTS's verdict (see pts.json's not_pts)" if r.not_pts else ""))
            ax.hlines([avg * 0.9, avg, avg * 1.1], lo - 0.3, hi + 0.3, colors=["0.5", "k", "0.5"],
                      linestyles=["--", "-", "--"], lw=1)
            xs = np.array([lo, hi], dtype=float)
            ax.plot(xs, w["intercept"] + w["slope_per_round"] * (xs - lo), color="C3", lw=1.5,
                    label=f"least-squares line (excursion {w['excursion_pct_of_average'] or 0:.1f}% of avg)")
    ax.set_ylim(bottom=0)
    return finish(fig, ax, path, "round", "IOPS", "SNIA PTS steady state: the tracked cell per round", caption)
