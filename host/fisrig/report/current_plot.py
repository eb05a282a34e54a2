"""The drive's current under its commands: one chart, two panels on one time axis (the
latency-over-time chart's: from the run's first command), the commands' latencies above
(plots.latency_cells) and the current the rig sampled below (records/current.py's windows).

The current panel draws what a power module's display does at two averaging windows: the
highest sample of each 100 us window (the peaks a supply must carry) and the mean of each
100 ms window (what a datasheet's average figure is). A long run has more 100 us windows
than the chart has pixels; each pixel's column then shows the highest of the windows in it,
so no peak is lost to the decimation.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from fisrig.records import current
from fisrig.records.current import WINDOWS
from fisrig.report import plots
from fisrig.report.html_parts import _e, _table

COLUMNS = 900  # about one per pixel of the saved chart's width


def _peaks(t: np.ndarray, top: np.ndarray, t0: float, span: float) -> tuple[np.ndarray, np.ndarray]:
    """The highest value in each of COLUMNS slices of [t0, t0 + span) (slices with none left
    out), or the values as they are when there are fewer."""
    if len(t) <= COLUMNS:
        return t, top
    col = np.clip(((t - t0) * COLUMNS / span).astype(np.int64), 0, COLUMNS - 1)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    return t0 + (col[starts] + 0.5) * span / COLUMNS, np.maximum.reduceat(top, starts)


def plot_current_time(series: list[plots.Series], path: Path, caption: str) -> bool:
    """current_over_time.png, for a run that sampled the drive's current (its own report
    only: a comparison draws none)."""
    windows = path.parent / WINDOWS
    if len(series) != 1 or not windows.exists():
        return plots.finish(*plots.plt.subplots(), path, "", "", "", caption)
    w = pq.read_table(windows).to_pandas()
    fine, coarse = w[w.window == "100us"], w[w.window == "100ms"]
    cells = series[0].latency_cells()
    t0 = min(float(fine.t_ns.min()), cells.start if cells else np.inf)
    end = max(float(fine.t_ns.max()) + 100e3, cells.start + cells.span if cells else 0)
    unit_ns, unit = plots._time_unit(end - t0)
    fig, (top, ax) = plots.plt.subplots(2, 1, sharex=True, figsize=(10, 6.5), height_ratios=(1, 1))
    if cells:
        for p, grid in cells.counts:
            tc, lc = np.nonzero(grid)
            top.scatter((cells.start - t0 + cells.time_ns(tc)) / unit_ns, cells.latency_ns(lc) / 1e3, s=4, lw=0,
                        alpha=0.8, label=p.label)
        top.set_yscale("log")
        top.set_ylabel("latency (us)")
        top.grid(alpha=0.3)
        top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    x, peak = _peaks(fine.t_ns.to_numpy(np.float64), fine.max_ma.to_numpy(), t0, end - t0)
    ax.plot((x - t0) / unit_ns, peak, drawstyle="steps-post", lw=0.8, color="tab:red",
            label="highest sample in 100 us")
    ax.plot((coarse.t_ns.to_numpy(np.float64) + 50e6 - t0) / unit_ns, coarse.mean_ma.to_numpy(), lw=1.2,
            color="k", marker="." if len(coarse) < 50 else None, label="mean over 100 ms")
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, (end - t0) / unit_ns)
    top.set_title("Commands and the drive's current on one time axis")
    return plots.finish(fig, ax, path, f"time ({unit} from the run's first command or sample)", "current (mA)",
                        "", caption)


def html_section(run_dir: Path) -> str:
    """report.html's current table (empty for a run that sampled none)."""
    s = current.summary(run_dir)
    if not s:
        return ""
    rows = [["samples", f"{s['samples']:,}, every {s['period_ns'] / 1e3:g} us"],
            ["samples lost", f"{s['lost_samples']:,}"], ["peak", f"{s['peak_ma']} mA"],
            ["mean", f"{s['mean_ma']} mA"], ["highest 100 us mean", f"{s['max_100us_mean_ma']} mA"],
            ["highest 100 ms mean", f"{s['max_100ms_mean_ma']} mA"]]
    return ("<h2>The drive's current</h2><p>" + _e("As the rig sampled it (docs/plans.md, \"The drive's current\"); "
                                                  "every sample is in current.parquet, the windows in "
                                                  "current_windows.parquet.") + "</p>" + _table(["", "value"], rows))
