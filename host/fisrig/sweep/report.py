"""`fisrig report SWEEPDIR`: a figure of a phase, point by point, against one axis (a line a
value of a second axis), as a table and a chart (docs/sweeps.md, "The report").

The figures are the runs' own: each point's summary.json, the phase's published numbers
(what `fisrig run`'s headline and `compare` hold), so a sweep's chart and a run's report
never disagree.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fisrig.errors import InputError, closest

# A figure's name -> how it is read from a phase of summary.json's jobs (fisrig's own block).
METRICS = {
    "iops": lambda f: f.get("iops"),
    "mb_per_s": lambda f: f.get("data_mb_per_s"),
    "mean_us": lambda f: _lat(f, "mean"),
    "p50_us": lambda f: _lat(f, "50.000000"),
    "p99_us": lambda f: _lat(f, "99.000000"),
    "p99.9_us": lambda f: _lat(f, "99.900000"),
    "max_us": lambda f: _lat(f, "max"),
    "seconds": lambda f: f.get("seconds"),
    "errors": lambda f: f.get("errors"),
    # The drive's own, from SMART readings around the phase (analysis/smart.py).
    "write_amplification": lambda f: (f.get("write_amplification") or {}).get("value"),
}
# An axis that sets the spare: a chart of write amplification against it gets greedy GC's
# analytic curve (analysis/greedy_gc.py) beside the points.
OP_AXIS = "profile.capacity.op_pct"


def _lat(f: dict, key: str) -> float | None:
    lat = f.get("latency_ns") or {}
    v = lat.get(key) if key in ("mean", "max") else (lat.get("percentile") or {}).get(key)
    return None if v is None else v / 1000


def read(sweep_dir: Path) -> tuple[dict, list[dict]]:
    """The manifest and, a point each, its phases' fisrig blocks by phase name."""
    sweep_dir = Path(sweep_dir)
    try:
        manifest = json.loads((sweep_dir / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise InputError(str(sweep_dir), f"not a sweep directory: {e}") from None
    points = []
    for p in manifest.get("points", []):
        phases = {}
        path = sweep_dir / p.get("run_dir", "") / "summary.json"
        if path.exists():
            for job in json.loads(path.read_text()).get("jobs", []):
                phases[job.get("jobname")] = job.get("fisrig", {})
        points.append({**p, "phases": phases})
    return manifest, points


def table(sweep_dir: Path, metric: str, phase: str | None) -> tuple[str, list[dict]]:
    """The phase (the last one with commands when not given) and a row a point: its
    parameters and the metric's value (None where the point has no such phase)."""
    if metric not in METRICS:
        raise InputError(f"--metric {metric}", f"no such figure {closest(metric, METRICS)}")
    _, points = read(sweep_dir)
    names = [n for p in points for n in p["phases"]]
    if not names:
        raise InputError(str(sweep_dir), "no point of the sweep has a summary yet")
    if phase is None:  # the last phase with commands that has the figure (WA: the one read around)
        with_commands = [n for p in points for n, f in p["phases"].items() if f.get("commands")]
        with_figure = [n for p in points for n, f in p["phases"].items()
                       if f.get("commands") and METRICS[metric](f) is not None]
        phase = (with_figure or with_commands or names)[-1]
    elif phase not in names:
        raise InputError(f"--phase {phase}", f"no point has that phase {closest(phase, dict.fromkeys(names))}")
    rows = [{"point": p["point"], "status": p.get("status"), **p.get("params", {}),
             metric: METRICS[metric](p["phases"][phase]) if phase in p["phases"] else None} for p in points]
    if metric == "write_amplification":
        from fisrig.analysis import greedy_gc
        for r in rows:  # what greedy GC would do under uniform writes at the point's spare
            if isinstance(r.get(OP_AXIS), (int, float)) and r[OP_AXIS] > 0:
                r["greedy_gc_uniform"] = round(greedy_gc.write_amplification(r[OP_AXIS]), 3)
    return phase, rows


def draw(sweep_dir: Path, metric: str = "iops", phase: str | None = None, x: str | None = None,
         by: str | None = None) -> tuple[Path, str, list[dict]]:
    """The chart sweep_<metric>.png in the sweep directory: the metric of `phase` against axis
    `x` (the first axis by default), a line a value of axis `by` (the second, when there is
    one); its path, the phase and the table."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    manifest, _ = read(sweep_dir)
    axes = [a["key"] for a in manifest.get("axes", [])] or list(dict.fromkeys(
        k for p in manifest.get("points", []) for k in p.get("params", {})))
    if not axes:
        raise InputError(str(sweep_dir), "the sweep has no axes to draw against")
    for flag, key in (("--x", x), ("--by", by)):
        if key is not None and key not in axes:
            raise InputError(f"{flag} {key}", f"not an axis of the sweep {closest(key, axes)}")
    x = x or axes[0]
    by = by if by is not None else next((a for a in axes if a != x), None)
    if by == x:
        raise InputError(f"--by {by}", "is the --x axis: name another")
    phase, rows = table(sweep_dir, metric, phase)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    groups: dict[Any, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get(by) if by else None, []).append(r)
    drawn = [r for r in rows if r.get(x) is not None]  # listed points need not set every axis
    numeric = all(isinstance(r[x], (int, float)) for r in drawn)
    for value, rs in groups.items():
        rs = [r for r in rs if r[metric] is not None and r.get(x) is not None]
        if numeric:
            rs.sort(key=lambda r: r[x])
        ax.plot([r[x] if numeric else str(r[x]) for r in rs], [r[metric] for r in rs], marker="o",
                label=f"{by} = {value}" if by else None)
    xs = sorted({r[x] for r in drawn}) if numeric else []
    curve = False
    if metric == "write_amplification" and x == OP_AXIS and numeric and xs and min(xs) > 0:
        from fisrig.analysis import greedy_gc
        grid = [min(xs) + (max(xs) - min(xs)) * i / 100 for i in range(101)]
        ax.plot(grid, [greedy_gc.write_amplification(v) for v in grid], color="0.4", linestyle="--",
                label="greedy GC, uniform writes (analytic)")
        curve = True
    if numeric and len(xs) <= 12:
        ax.set_xticks(xs)  # the axis's own values, not matplotlib's fractions of them
    ax.set_xlabel(x)
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_title(f"{manifest.get('sweep', '?')}: {metric} of phase '{phase}' against {x}", fontsize=10)
    ax.grid(alpha=0.3)
    if by or curve:
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(sweep_dir) / f"sweep_{metric.replace('.', '_')}.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out, phase, rows
