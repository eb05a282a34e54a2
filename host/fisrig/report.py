"""The figures and plots reviewers publish, made from records.parquet and run.json.

- the console headline: one line per phase, from phase_stats (the figures summary.json's
  "fisrig" blocks hold), and a warning line for each thing that phase did not do as asked
- IOPS averaged per 100,000 commands (the DriveMaster trace-replay plots)
- MB/s across the LBA span, one point per zone (HD Tach's curve), for sweep phases
- latency percentiles per phase

Every plot carries the drive, profile, target, plan and date it came from; a plot with
nothing to draw is not written.
"""
from __future__ import annotations

import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from . import phase_stats  # noqa: E402
from .phase_stats import PhaseStats  # noqa: E402

IOPS_WINDOW = 100_000
MIN_IOPS_PHASE = 1000
MIN_LATENCY_COMMANDS = 10
REPORT_COLUMNS = phase_stats.COLUMNS


def _rate(v: float) -> str:
    return f"{v:.3g}" if v < 1e5 else f"{v:.3e}"


def headline(ph: list[PhaseStats]) -> list[str]:
    """One line per phase, printed from the same dict summary.json holds for it, and a
    "!" line under it for each warning."""
    lines = []
    for p in ph:
        j = p.to_json()
        # A rate over one command is 1 / its latency (a FLUSH "ran at 6 million IOPS"): the
        # latency says it, a rate would mislead.
        one = j["commands"] < 2
        if j["kind"] == "sweep":
            what = f"{'sweep':<12} {j['sweep']['mb_per_s']:8.1f} MB/s ({j['sweep']['zones']} zones)"
        elif j["trimmed_lbas"] and not j["data_bytes"]:
            what = (f"{j['kind']:<12} {'one command' if one else format(j['iops'], '8.0f') + ' IOPS'}  "
                    f"trimmed {j['trimmed_lbas']} LBAs ({j['trimmed_lbas'] * 512 / 1e9:.1f} GB)"
                    + ("" if one else f", {_rate(j['trimmed_lbas_per_s'])} LBAs/s"))
        elif one:
            what = f"{j['kind']:<12} {'one command':>28}"
        else:
            what = f"{j['kind']:<12} {j['iops']:8.0f} IOPS {j['data_mb_per_s']:8.1f} MB/s"
            if j["trimmed_lbas"]:
                what += f"  trimmed {j['trimmed_lbas']} LBAs"
        qd = j["queue_depth"]
        depth = (f"QD {qd['held_mean']:.2f} held (max {qd['held_max']})"
                 + (f" of {qd['asked']}" if qd["asked"] else ""))
        pct = j["latency_ns"]["percentile"]
        lat = ("latency " + "  ".join(f"p{k:g} {pct[f'{k:.6f}'] / 1e3:.0f} us"
                                      for k in phase_stats.HEADLINE_PERCENTILES)) if pct else "no latency (no command completed OK)"
        issued = f", issued {j['issue_rate']:.0f}/s" if j["commands"] > 1 else ""
        lines.append(f"{p.label:<18} {j['commands']:>10} cmds  {what}  {depth}{issued}  {lat}"
                     + (f"  {j['errors']} errors" if j["errors"] else ""))
        lines += [f"  ! {p.label}: {w}" for w in j["warnings"]]
    return lines


def caption(meta: dict) -> str:
    """What a plot came from: the drive, its profile, the target, the plan, the date."""
    ident = meta.get("identify", {})
    started = meta.get("started")
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)) if started else "date unknown"
    target = meta.get("target", "target unknown")
    if meta.get("link_gen") and target == "rtl":
        target += f" (SATA Gen{meta['link_gen']})"
    return (f"{ident.get('model') or 'drive unknown'} (fw {ident.get('firmware') or '?'}), "
            f"profile {meta.get('profile') or '?'}, target {target}, "
            f"plan {meta.get('plan', {}).get('name') or '?'}, {date}")


def _finish(fig, ax, path: Path, xlabel: str, ylabel: str, title: str, meta: dict) -> bool:
    """Saves the plot with its caption; writes nothing (and removes an earlier one) when
    nothing was drawn. Returns whether it was written."""
    if not ax.lines and not ax.collections:
        plt.close(fig)
        path.unlink(missing_ok=True)
        return False
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.text(0.01, 0.01, caption(meta), fontsize=7, color="0.35", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    # The caption also goes in the PNG's own metadata, for tools that index plots.
    fig.savefig(path, dpi=110, metadata={"Description": caption(meta), "Software": "fisrig"})
    plt.close(fig)
    return True


def plot_iops(ph: list[PhaseStats], path: Path, meta: dict) -> bool:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x0 = 0
    for p in ph:
        if p.is_sweep or p.commands < MIN_IOPS_PHASE:
            continue  # a handful of commands (an erase, a TRIM) makes no IOPS curve
        t = np.sort(p.t_status_ns)
        window = min(IOPS_WINDOW, max(len(t) // 20, 1))
        idx = np.arange(window, len(t), window)
        if not len(idx):
            continue
        iops = window / ((t[idx] - t[idx - window]) / 1e9)
        ax.step(x0 + idx, iops, where="post", label=f"{p.label} (per {window:,} commands)")
        x0 += len(t)
    return _finish(fig, ax, path, "commands", "IOPS",
                   f"IOPS averaged per {IOPS_WINDOW:,} commands (fewer for short phases)", meta)


def plot_lba_mbps(ph: list[PhaseStats], path: Path, meta: dict) -> bool:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for p in ph:
        if not p.is_sweep:
            continue
        x = [lba * 512 / 1e9 for lba, _ in p.zones]
        ax.plot(x, [v for _, v in p.zones], label=f"{p.label}: avg {p.sweep_mbps:.0f} MB/s", lw=1)
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, path, "position on the drive (GB)", "MB/s",
                   "Sequential speed across the LBA span (HD Tach-style zones)", meta)


def plot_latency(ph: list[PhaseStats], path: Path, meta: dict) -> bool:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    nines = np.array([0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999])
    q = 1 - np.logspace(0, -5, 200)
    for p in ph:
        if len(p.latency_ns) < MIN_LATENCY_COMMANDS:
            continue
        v = np.quantile(p.latency_ns, np.clip(q, 0, 1), method="inverted_cdf") / 1e3  # as summary.json
        ax.plot(-np.log10(np.maximum(1 - q, 1e-5)), v, label=p.label, lw=1)
    ax.set_xticks(-np.log10(np.maximum(1 - nines, 1e-5)))
    ax.set_xticklabels([f"{100 * n:g}" for n in nines])
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="minor")
    return _finish(fig, ax, path, "percentile", "latency (us)",
                   "Command latency percentiles (submit to status, rig clock)", meta)


PLOTS = {"iops_per_100k.png": plot_iops, "mbps_across_lba.png": plot_lba_mbps,
         "latency_percentiles.png": plot_latency}


def make_report(run_dir: Path, table: pa.Table | None = None, meta: dict | None = None,
                phases: list[PhaseStats] | None = None) -> tuple[list[PhaseStats], list[Path]]:
    """The phases' figures and the plots that have something to draw (only those are written)."""
    if meta is None:
        from .results import read_meta
        meta = read_meta(run_dir)
    if phases is None:
        if table is None:
            table = pq.read_table(run_dir / "records.parquet", columns=REPORT_COLUMNS)
        phases = phase_stats.compute(table, meta)
    paths = [run_dir / name for name, fn in PLOTS.items() if fn(phases, run_dir / name, meta)]
    return phases, paths
