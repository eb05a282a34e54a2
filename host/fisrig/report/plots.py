"""The charts reviewers publish, drawn from phase_stats' phases: one run's (its report) or
several runs overlaid (`fisrig report --compare`), the same function for both.

- IOPS averaged per 100,000 commands (the DriveMaster trace-replay charts)
- MB/s across the LBA span, one point per zone (HD Tach's curve), for sweep phases
- latency percentiles per phase
- latency over time: each command's latency at its completion, as pixels (see below)
- transfer-size sweep: MB/s against the transfer size, reads and writes (ATTO's chart)
- fill times: the simulated time of each fill phase (the fill-delete-fill review's bars)

Every chart carries a caption saying what it came from (drive, profile, target, plan,
date), on the image and in the PNG's metadata; a chart with nothing to draw is not
written (and an earlier one of that name goes).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402
import numpy as np  # noqa: E402

from fisrig.analysis import figure_text as ft  # noqa: E402
from fisrig.analysis.arrays import CHUNK, OP_READ, OP_WRITE, sort_values  # noqa: E402

IOPS_WINDOW = 100_000
MIN_IOPS_PHASE = 1000
MIN_LATENCY_COMMANDS = 10
MIN_SWEEP_SIZES = 3  # transfer sizes that make a transfer-size sweep
MIN_FILLS = 2  # fill phases that make a fill-time chart
# Latency over time as a grid of cells about a pixel each on the saved chart (the axes are
# about 880 x 380 px at 110 dpi): every cell that holds any command is one dot.
TIME_CELLS, LATENCY_CELLS = 600, 200


@dataclass(eq=False)  # by identity: a chart finds a run's place among the runs it draws
class Series:
    """One run as a chart draws it: `name` is "" in the run's own report (a legend entry
    is then the phase's label) and the run's name in a comparison ("name: phase")."""
    phases: list
    meta: dict
    name: str = ""
    _cells: object = field(default=None, repr=False)  # latency_cells()

    def label(self, phase: str) -> str:
        return f"{self.name}: {phase}" if self.name else phase

    def latency_cells(self) -> LatencyCells | None:
        """latency_cells of its phases, counted once (two charts draw them)."""
        if self._cells is None:
            self._cells = latency_cells(self.phases)
        return self._cells


def caption(meta: dict) -> str:
    """What a chart came from: the drive, its profile, the target, the plan, the date."""
    ident = meta.get("identify") if isinstance(meta.get("identify"), dict) else {}
    plan = meta.get("plan") if isinstance(meta.get("plan"), dict) else {}
    started = meta.get("started") if isinstance(meta.get("started"), (int, float)) else None
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)) if started else "date unknown"
    target = meta.get("target", "target unknown")
    if meta.get("link_gen") and target == "rtl":
        target += f" (SATA Gen{meta['link_gen']})"
    if meta.get("protocol") == "nvme":
        target += " over NVMe"
    return (f"{ident.get('model') or 'drive unknown'} (fw {ident.get('firmware') or '?'}), "
            f"profile {meta.get('profile') or '?'}, target {target}, "
            f"plan {plan.get('name') or '?'}, {date}" + (f", run {str(meta['run_id'])[:12]}" if meta.get("run_id") else ""))


def _linestyle(i: int) -> str:
    """Each run of a comparison draws in a line style of its own; colours tell curves apart."""
    return ("-", "--", ":", "-.")[i % 4]


def _axes(curves: int, figsize=(10, 4.5)):
    fig, ax = plt.subplots(figsize=figsize)
    # Past ten curves tab10's colours repeat: tab20's, its ten dark ones first and then
    # their light pairs, keep every curve its own (in tab20's order a curve and the next
    # would be one hue, dark and light).
    dark_light = plt.get_cmap("tab20").colors
    ax.set_prop_cycle(color=plt.get_cmap("tab10").colors if curves <= 10 else dark_light[0::2] + dark_light[1::2])
    return fig, ax


# The width a chart keeps for its axes with their ticks and labels (inches), beside its legend.
AXES_INCHES = 7.5


def finish(fig, ax, path: Path, xlabel: str, ylabel: str, title: str, caption: str) -> bool:
    """Saves the chart with its caption; writes nothing (and removes an earlier one) when
    nothing was drawn. Returns whether it was written."""
    if not ax.lines and not ax.collections and not ax.patches:
        plt.close(fig)
        path.unlink(missing_ok=True)
        return False
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if handles:  # beside the axes, where it hides no curve (a sweep's zones fill the whole axes)
        legend = ax.legend(fontsize=7 if len(handles) > 12 else 8, loc="upper left", bbox_to_anchor=(1.01, 1),
                           borderaxespad=0, ncol=math.ceil(len(handles) / 24), frameon=False)
        # The figure grows by what the legend takes past what it has room for, so the axes
        # keep AXES_INCHES: the SNIA PTS plan's 57 phases (three columns of long labels) had
        # squeezed them to a quarter, two such runs compared (five columns) to a sliver, with
        # matplotlib's warning that it could not lay the figure out.
        need = AXES_INCHES + legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
        if need > fig.get_figwidth():
            fig.set_figwidth(need)
    for h in ax.get_legend().legend_handles if ax.get_legend() else []:
        if isinstance(h, PathCollection):  # a scatter's dot, big enough to see its colour
            h.set_sizes([25])
            h.set_alpha(1)
    fig.text(0.01, 0.01, caption, fontsize=7, color="0.35", ha="left", va="bottom")
    # Room under the axes for the caption's lines (a comparison's: a line a run), in inches.
    fig.tight_layout(rect=(0, min(0.5, (0.08 + 0.125 * (caption.count("\n") + 1)) / fig.get_figheight()), 1, 1))
    # The caption also goes in the PNG's own metadata, for tools that index plots.
    fig.savefig(path, dpi=110, metadata={"Description": caption, "Software": "fisrig"})
    plt.close(fig)
    return True


def _sorted_status(p) -> np.ndarray:
    return p.rows.sorted("t_status_ns") if p.rows is not None else np.sort(p.t_status_ns, kind="stable")


def _own_time(p, t: np.ndarray) -> np.ndarray:
    """A phase's statuses (ascending) on its own clock: for a phase in a loop (a SNIA PTS
    cell, visited once a round), the time from each visit's last status to the next one's
    first, which the other phases had, taken out. Without this a window of commands that
    spans two visits counted the round between them, and the cell's IOPS fell to near 0
    there. A phase's rows are in completion order, so its visits (PhaseRows.visits) are
    runs of `t` as they are of its rows."""
    from fisrig.analysis.arrays import is_sorted
    visits = p.rows.visits() if p.rows is not None else []
    # Visits are runs of rows, of `t` only when the rows' statuses are in order (PhaseStats
    # keeps them as the rows have them; the rows may have let go of their table: compare's).
    if len(visits) < 2 or not is_sorted(p.t_status_ns):
        return t
    gaps = np.zeros(len(t), dtype=np.int64)
    starts = np.array([v.start for v in visits[1:]])
    gaps[starts] = t[starts] - t[starts - 1]
    return t - np.cumsum(gaps)


def plot_iops(series: list[Series], path: Path, caption: str) -> bool:
    curves = [(s, p) for s in series for p in s.phases if not p.is_sweep and p.commands >= MIN_IOPS_PHASE]
    if any(p.kind == "replay" for _, p in curves):  # a trace test: its passes alone, as the review draws them
        curves = [(s, p) for s, p in curves if p.kind == "replay"]
    fig, ax = _axes(len(curves))
    x0, replays = {}, False
    for s, p in curves:
        t = _own_time(p, _sorted_status(p))
        window = min(IOPS_WINDOW, max(len(t) // 20, 1))
        idx = np.arange(window, len(t), window)
        if not len(idx):
            continue
        iops = window / (np.maximum(t[idx] - t[idx - window], 1) / 1e9)
        # Trace replays each start at 0, overlaid (the JEDEC test's four passes of one trace,
        # as the review draws them); other phases follow one another.
        start = 0 if p.kind == "replay" else x0.get(id(s), 0)
        ax.step(start + idx, iops, where="post", label=f"{s.label(p.label)} (per {window:,} commands)",
                ls=_linestyle(series.index(s)), lw=1)
        x0[id(s)] = max(x0.get(id(s), 0), start + len(t))
        replays = replays or p.kind == "replay"
    # Plain numbers, not matplotlib's "1e7" offset: millions of commands, thousands of IOPS.
    millions = max(x0.values(), default=0) >= 2_000_000
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e6:g}" if millions else f"{v:,.0f}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    order = "trace replays overlaid from their first command" if replays else "one phase after another"
    return finish(fig, ax, path, f"commands{' (millions)' if millions else ''}, {order}", "IOPS",
                  f"IOPS averaged per {IOPS_WINDOW:,} commands (fewer for short phases)", caption)


# Windows a phase's time is cut into on the IOPS-over-time chart (at least IOPS_TIME_MIN_NS each).
IOPS_TIME_WINDOWS = 200
IOPS_TIME_MIN_NS = 100_000


def _width_text(ns: int) -> str:
    """A window's width as a legend says it: 250 us, 52.7 ms, 6.02 s."""
    unit, name = next(((u, n) for u, n in ((1e9, "s"), (1e6, "ms")) if ns >= u), (1e3, "us"))
    return f"{ns / unit:.3g} {name}"


def _clock_word(meta: dict) -> str:
    """"simulated" for a target that simulates the drive, as the report says its times are."""
    return ft.clock_word(meta)


def _first_submit(p) -> int:
    """The phase's first submit, where its records still hold them (a comparison's let go)."""
    try:
        return int(p.rows.sorted("t_submit_ns")[0])
    except Exception:  # noqa: BLE001 - no rows, or rows that kept only what their charts read
        return int(np.min(p.t_status_ns)) if len(p.t_status_ns) else 0


def plot_iops_time(series: list[Series], path: Path, caption: str) -> bool:
    """IOPS over time, as fio's logs and reviewers' charts draw it: each phase's completions
    counted in windows of its own time (a two-hundredth of its span), the phases one after
    another on the run's time axis; a command that takes seconds holds its window's IOPS
    down for those seconds, as it held the drive's. A phase in a loop (a SNIA PTS cell) on
    its own time (_own_time); trace replays overlaid from 0, as on plot_iops."""
    curves = [(s, p) for s in series for p in s.phases if not p.is_sweep and p.commands >= MIN_IOPS_PHASE]
    if any(p.kind == "replay" for _, p in curves):
        curves = [(s, p) for s, p in curves if p.kind == "replay"]
    drawn = []
    x0: dict[int, float] = {}
    for s, p in curves:
        t = _own_time(p, _sorted_status(p))
        first = min(_first_submit(p), int(t[0])) if not len(p.rows.visits() if p.rows is not None else []) > 1 \
            else int(t[0])
        span = int(t[-1]) - first
        width = max(span // IOPS_TIME_WINDOWS, IOPS_TIME_MIN_NS)
        counts = np.bincount((t - first) // width)
        start = 0 if p.kind == "replay" else x0.get(id(s), 0)
        x = start + np.arange(len(counts) + 1) * width
        drawn.append((s, p, x, counts * (1e9 / width), width))
        x0[id(s)] = max(x0.get(id(s), 0), start + span)
    fig, ax = _axes(len(drawn))
    unit, name = _time_unit(max(x0.values(), default=0))
    for s, p, x, iops, width in drawn:
        ax.step(x / unit, np.append(iops, iops[-1]), where="post", ls=_linestyle(series.index(s)), lw=1,
                label=f"{s.label(p.label)} (per {_width_text(width)})")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylim(bottom=0)
    clock = _clock_word(series[0].meta) if series else ""
    replays = any(p.kind == "replay" for _, p, *_ in drawn)
    order = "trace replays overlaid from their start" if replays else "one phase after another"
    return finish(fig, ax, path, f"{clock}time ({name}), {order}", "IOPS",
                  f"IOPS over {clock}time (each phase's completions per a two-hundredth of its span)", caption)


def plot_lba_mbps(series: list[Series], path: Path, caption: str) -> bool:
    curves = [(s, p) for s in series for p in s.phases if p.is_sweep and p.zones]
    fig, ax = _axes(len(curves))
    for s, p in curves:
        x = [lba * 512 / 1e9 for lba, _ in p.zones]
        ax.plot(x, [v for _, v in p.zones], label=f"{s.label(p.label)}: avg {p.sweep_mbps:.0f} MB/s", lw=1,
                ls=_linestyle(series.index(s)))
    ax.set_ylim(bottom=0)
    return finish(fig, ax, path, "position on the drive (GB)", "MB/s",
                  "Sequential speed across the LBA span (HD Tach-style zones)", caption)


# The quantiles plot_latency draws a phase's latency at: 200, closer together towards the tail.
CURVE_Q = 1 - np.logspace(0, -5, 200)


def latency_curve(p) -> np.ndarray:
    """A phase's latencies (ns) at CURVE_Q, made once (report.during_run makes them while the run
    runs). The inverted CDF, as summary.json's percentiles: the latency of the command at
    rank ceil(n q). One sort and 200 lookups, where np.quantile's 200 selections took 1.3 s
    of each 16 M-command phase of the main job."""
    if p.latency_curve_ns is None:
        v = p.rows.sorted_latency(p.rows.ok) if p.rows is not None else sort_values(p.latency_ns)
        n = len(v)
        at = np.clip(np.ceil(n * np.clip(CURVE_Q, 0, 1)).astype(np.int64) - 1, 0, n - 1)
        p.latency_curve_ns = v[at]
    return p.latency_curve_ns


def plot_latency(series: list[Series], path: Path, caption: str) -> bool:
    curves = [(s, p) for s in series for p in s.phases if len(p.latency_ns) >= MIN_LATENCY_COMMANDS]
    fig, ax = _axes(len(curves))
    nines = np.array([0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999])
    for s, p in curves:
        ax.plot(-np.log10(np.maximum(1 - CURVE_Q, 1e-5)), latency_curve(p) / 1e3, label=s.label(p.label), lw=1,
                ls=_linestyle(series.index(s)))
    ax.set_xticks(-np.log10(np.maximum(1 - nines, 1e-5)))
    ax.set_xticklabels([f"{100 * n:g}" for n in nines])
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="minor")
    return finish(fig, ax, path, "percentile", "latency (us)",
                  "Command latency percentiles (submit to status, rig clock)", caption)


def _time_unit(span_ns: float) -> tuple[float, str]:
    for ns, unit, top in ((1e9, "s", 300), (60e9, "min", 300), (3600e9, "h", float("inf"))):
        if span_ns / ns <= top:
            return ns, unit
    return 3600e9, "h"


@dataclass(eq=False)
class LatencyCells:
    """A run's commands that completed OK counted into TIME_CELLS x LATENCY_CELLS cells:
    time (completion, from the run's first submit) by log10 of latency, per phase."""
    start: int  # ns on the rig's clock: the run's first submit
    span: int  # ns the time cells cover
    lo: float  # log10 of the latency (ns) at the cells' bottom edge, and at their top
    hi: float
    counts: list  # (phase, int64 array TIME_CELLS x LATENCY_CELLS)

    def time_ns(self, cell) -> np.ndarray:
        """The middle of a time cell, ns from the start."""
        return (np.asarray(cell) + 0.5) * self.span / TIME_CELLS

    def latency_ns(self, cell, at: float = 0.5) -> np.ndarray:
        """The latency at a latency cell's middle (`at` 0: its bottom edge; 1: its top)."""
        return 10 ** (self.lo + (np.asarray(cell) + at) * (self.hi - self.lo) / LATENCY_CELLS)


def latency_cells(phases: list) -> LatencyCells | None:
    """The cells of plot_latency_time; None for fewer than MIN_LATENCY_COMMANDS commands."""
    runs = [p for p in phases if p.rows is not None and len(p.latency_ns)]
    if sum(len(p.latency_ns) for p in runs) < MIN_LATENCY_COMMANDS:  # a handful of commands is no chart
        return None
    start = min(int(p.rows["t_submit_ns"].min()) for p in runs)
    span = max(int(p.rows["t_status_ns"].max()) for p in runs) - start + 1
    # The latency axis from half a decade under the least to half over the most.
    lo = math.floor(2 * math.log10(max(min(int(p.latency_ns.min()) for p in runs), 1))) / 2
    hi = max(math.ceil(2 * math.log10(max(max(int(p.latency_ns.max()) for p in runs), 1))) / 2, lo + 0.5)
    scale = LATENCY_CELLS / (hi - lo)
    out = LatencyCells(start, span, lo, hi, [])
    for p in runs:
        ok = p.rows.ok
        t, lat = p.rows["t_status_ns"], p.rows["latency_ns"]
        cells = np.zeros(TIME_CELLS * LATENCY_CELLS, dtype=np.int64)
        every = bool(ok.all())
        for a in range(0, p.rows.n, CHUNK):  # in place, a chunk at a time (no 36 M-long temporaries)
            tc, lc = t[a:a + CHUNK], lat[a:a + CHUNK]
            if not every:
                tc, lc = tc[ok[a:a + CHUNK]], lc[ok[a:a + CHUNK]]
            at = (tc - start) * TIME_CELLS // span
            np.clip(at, 0, TIME_CELLS - 1, out=at)
            at *= LATENCY_CELLS
            y = lc.astype(np.float32)  # float32: log10 is most of the time here, a cell is 3% of a decade
            np.maximum(y, 1, out=y)
            np.log10(y, out=y)
            y -= lo
            y *= scale
            np.clip(y, 0, LATENCY_CELLS - 1, out=y)
            at += y.astype(np.int64)
            cells += np.bincount(at, minlength=TIME_CELLS * LATENCY_CELLS)
        out.counts.append((p, cells.reshape(TIME_CELLS, LATENCY_CELLS)))
    return out


def plot_latency_time(series: list[Series], path: Path, caption: str) -> bool:
    """Each command's latency against its completion time, from the run's first submit.

    Decimated to the chart's own resolution: the time and log-latency axes are cut into
    TIME_CELLS x LATENCY_CELLS cells of about a pixel, each phase's commands counted into
    them (latency_cells), and each cell holding any command drawn as one dot. Every
    latency that shows on a scatter of all the points shows here, the rarest outlier
    included (a random subsample drops those), and the dots are bounded by the cells, not
    the commands: measured here, matplotlib draws a scatter at about 0.55 s a million
    points (the main job's 36 M: 20 s, and a solid smear), where counting the 36 M into
    cells takes about 0.6 s and the occupied cells (10,213 there) draw in 0.03 s.
    What a smear hides, how many commands a dot stands for, the p50 and p99 lines of each
    time slice say."""
    cells = series[0].latency_cells()
    if cells is None:
        return finish(*plt.subplots(), path, "", "", "", caption)
    fig, ax = _axes(len(cells.counts))
    unit_ns, unit = _time_unit(cells.span)
    for p, grid in cells.counts:
        tc, lc = np.nonzero(grid)
        ax.scatter(cells.time_ns(tc) / unit_ns, cells.latency_ns(lc) / 1e3, s=5, lw=0, alpha=0.8, label=p.label)
    # The p50 and p99 of each time slice, from the cells' counts (to a cell's height).
    total = sum(grid for _, grid in cells.counts)
    n = total.sum(axis=1)
    cum = total.cumsum(axis=1)
    x = cells.time_ns(np.arange(TIME_CELLS)) / unit_ns
    for q, style in ((0.5, "-"), (0.99, "--")):
        cell = (cum < np.ceil(q * n)[:, None]).sum(axis=1)
        # A slice without commands (idle) breaks the line rather than joining its neighbours.
        y = np.where(n > 0, cells.latency_ns(cell) / 1e3, np.nan)
        ax.plot(x, y, color="k", lw=0.8, ls=style, drawstyle="steps-mid", label=f"p{100 * q:g} of each time slice")
    ax.set_yscale("log")
    ax.set_xlim(0, cells.span / unit_ns)
    return finish(fig, ax, path, f"completion time ({unit} from the run's first command)", "latency (us)",
                  "Latency of every command over time (each dot: one or more commands)", caption)


def _one_size(p) -> tuple[int, int] | None:
    """(direction, bytes) of a workload phase whose every command is a read, or every one
    a write, of one transfer size; None otherwise. Fills and sweeps are left out: their
    MB/s is of another test (a fill at QD32 over the whole drive, a sweep's zones at QD1)."""
    r = p.rows
    if p.kind != "workload" or r is None or not r.n or not p.data_bytes:
        return None
    op, lbas = r.op, r["lbas"]
    if op.min() != op.max() or int(op[0]) not in (OP_READ, OP_WRITE) or lbas.min() != lbas.max():
        return None
    return int(op[0]), int(lbas[0]) * 512


def _size_label(b: float) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:g} {unit}"
    return f"{b:g} B"


def plot_sizes(series: list[Series], path: Path, caption: str) -> bool:
    """MB/s against transfer size, a line for reads and one for writes, of the phases that
    moved one size in one direction. Drawn only where they hold at least MIN_SWEEP_SIZES
    sizes in one direction: a torture plan's two torture phases of 4 KiB writes are no
    transfer-size sweep."""
    curves = []
    for s in series:
        got: dict[int, dict[int, list[float]]] = {}
        for p in s.phases:
            if (ds := _one_size(p)) is not None:
                got.setdefault(ds[0], {}).setdefault(ds[1], []).append(p.sweep_mbps if p.is_sweep else p.mbps)
        curves += [(s, d, got[d]) for d in (OP_READ, OP_WRITE) if len(got.get(d, {})) >= MIN_SWEEP_SIZES]
    fig, ax = _axes(len(curves))
    for s, d, sizes in curves:
        x = sorted(sizes)
        # A size run more than once (two phases) is drawn at each; the line goes through their mean.
        line, = ax.plot(x, [np.mean(sizes[b]) for b in x], marker="o" if d == OP_READ else "s", ms=4, lw=1.2,
                        ls=_linestyle(series.index(s)), label=s.label("read" if d == OP_READ else "write"))
        more = [(b, v) for b in x for v in sizes[b] if len(sizes[b]) > 1]
        if more:
            ax.plot(*zip(*more), ".", color=line.get_color(), ms=3)
    if curves:
        ax.set_xscale("log", base=2)
        ticks = sorted({b for _, _, sizes in curves for b in sizes})
        ax.set_xticks(ticks)
        ax.set_xticklabels([_size_label(b) for b in ticks], rotation=45 if len(ticks) > 8 else 0, fontsize=8)
        ax.minorticks_off()
    ax.set_ylim(bottom=0)
    return finish(fig, ax, path, "transfer size", "MB/s", "Transfer-size sweep: MB/s of each size's phase", caption)


# A fill's write speed is drawn in this many windows of what it wrote (a two-hundredth each).
FILL_WINDOWS = 200
MIN_FILL_COMMANDS = 2 * FILL_WINDOWS


def fill_mbps(p) -> tuple[np.ndarray, np.ndarray] | None:
    """A fill's write speed against what it had written, as whole-drive fill charts draw it:
    its writes that ended OK in completion order, cut into FILL_WINDOWS windows of equal
    bytes, each window's MB/s its bytes over the time from the window before's last status
    to its own. (GB written at each window's end, MB/s); None without enough writes."""
    if p.rows is None:
        return None
    keep = p.rows.ok & (p.rows.op == OP_WRITE)
    t = p.rows["t_status_ns"][keep].astype(np.int64)
    if len(t) < MIN_FILL_COMMANDS:
        return None
    order = np.argsort(t, kind="stable")
    t = t[order]
    written = np.cumsum(p.rows["sectors"][keep][order].astype(np.int64) * 512)
    ends = np.searchsorted(written, np.linspace(0, written[-1], FILL_WINDOWS + 1)[1:], side="left")
    ends = np.unique(np.minimum(ends, len(t) - 1))
    starts_t = np.concatenate([[_first_submit(p)], t[ends[:-1]]])
    starts_b = np.concatenate([[0], written[ends[:-1]]])
    dt = np.maximum(t[ends] - starts_t, 1)
    return written[ends] / 1e9, (written[ends] - starts_b) / dt * 1e3


def plot_fill_mbps(series: list[Series], path: Path, caption: str) -> bool:
    """Each fill's write speed against the GB it had written (fill_mbps): where an SLC cache
    runs out, the curve falls (the whole-drive fill chart reviewers publish)."""
    curves = [(s, p, c) for s in series for p in s.phases if p.kind == "fill" for c in [fill_mbps(p)] if c]
    fig, ax = _axes(len(curves))
    for s, p, (gb, mbps) in curves:
        ax.step(gb, mbps, where="pre", lw=1, ls=_linestyle(series.index(s)),
                label=f"{s.label(p.label)}: avg {p.mbps:,.0f} MB/s")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    return finish(fig, ax, path, "GB written", "MB/s",
                  f"Write speed across a fill (a {FILL_WINDOWS}th of its bytes a step)", caption)


def plot_fill_times(series: list[Series], path: Path, caption: str) -> bool:
    """The simulated seconds of each fill phase (its first submit to its last status), a
    bar each, in run and phase order, labelled with the time."""
    bars = [(s, p) for s in series for p in s.phases if p.kind == "fill"]
    fig, ax = _axes(len(bars), figsize=(10, max(2.5, 1.2 + 0.35 * len(bars))))
    if len(bars) >= MIN_FILLS:
        y = np.arange(len(bars))[::-1]
        colors = [f"C{series.index(s) % 10}" for s, _ in bars]
        ax.barh(y, [p.seconds for _, p in bars], color=colors, height=0.6)
        ax.set_yticks(y)
        ax.set_yticklabels([s.label(p.label) for s, p in bars], fontsize=8)
        for yy, (_, p) in zip(y, bars):
            ax.annotate(f" {p.seconds:,.1f} s ({p.mbps:.0f} MB/s)", (p.seconds, yy), va="center", fontsize=8)
        ax.set_xlim(0, max(p.seconds for _, p in bars) * 1.25)
    return finish(fig, ax, path, "simulated seconds (first submit to last status)", "",
                  "Fill times", caption)
