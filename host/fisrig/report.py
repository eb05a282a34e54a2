"""The figures and plots reviewers publish, made from records.parquet alone.

- IOPS averaged per 100,000 commands (the DriveMaster trace-replay plots)
- MB/s across the LBA span, one point per zone (HD Tach's curve), for sweep phases
- latency percentiles per phase
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from .results import READS, WRITES, code_of, codes  # noqa: E402

IOPS_WINDOW = 100_000
MIN_IOPS_PHASE = 1000
REPORT_COLUMNS = ["marker", "kind", "result", "lba", "sectors", "t_submit_ns", "t_status_ns", "latency_ns",
                  "command"]


@dataclass
class Phase:
    label: str
    commands: int
    errors: int
    bytes: int
    seconds: float
    zones: list[tuple[int, float]]  # (first LBA, MB/s) of each sequential run, for sweeps
    latency_ns: np.ndarray
    t_status_ns: np.ndarray
    zone_bytes: int = 0
    zone_seconds: float = 0.0

    @property
    def mbps(self) -> float:
        return self.bytes / self.seconds / 1e6 if self.seconds else 0.0

    @property
    def iops(self) -> float:
        return self.commands / self.seconds if self.seconds else 0.0

    @property
    def is_sweep(self) -> bool:
        return len(self.zones) >= 4

    @property
    def sweep_mbps(self) -> float:
        """A sweep's average: all zones' bytes over all zones' time."""
        return self.zone_bytes / self.zone_seconds / 1e6 if self.zone_seconds else 0.0


def _zones(lba: np.ndarray, sectors: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> tuple[list, int, float]:
    """Runs of back-to-back sequential commands (two or more): an HD Tach zone each."""
    if len(lba) < 2:
        return [], 0, 0.0
    breaks = np.flatnonzero(lba[1:] != lba[:-1] + sectors[:-1]) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(lba)]])
    keep = ends - starts >= 2
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return [], 0, 0.0
    total = np.concatenate([[0], np.cumsum(sectors, dtype=np.int64)])
    nbytes = (total[ends] - total[starts]) * 512
    secs = (t1[ends - 1] - t0[starts]) / 1e9
    mbps = np.where(secs > 0, nbytes / np.maximum(secs, 1e-12) / 1e6, 0.0)
    zones = list(zip(lba[starts].tolist(), mbps.tolist()))
    return zones, int(nbytes.sum()), float(secs.sum())


def phases(table: pa.Table) -> list[Phase]:
    marker, marker_names = codes(table, "marker")
    kind, kind_names = codes(table, "kind")
    result, result_names = codes(table, "result")
    cols = {c: table.column(c).to_numpy() for c in
            ("lba", "sectors", "t_submit_ns", "t_status_ns", "latency_ns", "command")}
    is_cmd = kind == code_of(kind_names, "command")
    is_ok = result == code_of(result_names, "ok")
    moves_data = np.isin(cols["command"], list(READS | WRITES))
    out = []
    for mk in dict.fromkeys(marker[is_cmd].tolist()):
        m = is_cmd & (marker == mk)
        ok = m & is_ok
        data = ok & moves_data  # TRIM ranges are sectors too, but no data moves
        t0, t1 = cols["t_submit_ns"][m], cols["t_status_ns"][m]
        seconds = (t1.max() - t0.min()) / 1e9
        zones, zb, zs = _zones(cols["lba"][data], cols["sectors"][data], cols["t_submit_ns"][data],
                               cols["t_status_ns"][data])
        out.append(Phase(label=marker_names[mk], commands=int(m.sum()), errors=int((m & ~ok).sum()),
                         bytes=int(cols["sectors"][data].astype(np.int64).sum()) * 512, seconds=seconds,
                         zones=zones if len(zones) >= 4 else [], latency_ns=cols["latency_ns"][ok],
                         t_status_ns=cols["t_status_ns"][m], zone_bytes=zb, zone_seconds=zs))
    return out


def headline(ph: list[Phase]) -> list[str]:
    lines = []
    for p in ph:
        if not p.commands:
            continue
        lat = np.percentile(p.latency_ns, [50, 99, 99.9]) / 1e3 if len(p.latency_ns) else [0, 0, 0]
        what = (f"sweep {p.sweep_mbps:8.1f} MB/s ({len(p.zones)} zones)" if p.is_sweep
                else f"{p.iops:10.0f} IOPS {p.mbps:8.1f} MB/s")
        lines.append(f"{p.label:<18} {p.commands:>10} cmds  {what}  "
                     f"latency p50 {lat[0]:.0f} us  p99 {lat[1]:.0f} us  p99.9 {lat[2]:.0f} us"
                     + (f"  {p.errors} errors" if p.errors else ""))
    return lines


def _finish(fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_iops(ph: list[Phase], path: Path) -> None:
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
    _finish(fig, ax, path, "commands", "IOPS", f"IOPS averaged per {IOPS_WINDOW:,} commands (fewer for short phases)")


def plot_lba_mbps(ph: list[Phase], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for p in ph:
        if not p.is_sweep:
            continue
        x = [lba * 512 / 1e9 for lba, _ in p.zones]
        ax.plot(x, [v for _, v in p.zones], label=f"{p.label}: avg {p.sweep_mbps:.0f} MB/s", lw=1)
    ax.set_ylim(bottom=0)
    _finish(fig, ax, path, "position on the drive (GB)", "MB/s", "Sequential speed across the LBA span (HD Tach-style zones)")


def plot_latency(ph: list[Phase], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    nines = np.array([0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999])
    q = 1 - np.logspace(0, -5, 200)
    for p in ph:
        if len(p.latency_ns) < 10:
            continue
        v = np.quantile(p.latency_ns, np.clip(q, 0, 1)) / 1e3
        ax.plot(-np.log10(np.maximum(1 - q, 1e-5)), v, label=p.label, lw=1)
    ax.set_xticks(-np.log10(np.maximum(1 - nines, 1e-5)))
    ax.set_xticklabels([f"{100 * n:g}" for n in nines])
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="minor")
    _finish(fig, ax, path, "percentile", "latency (us)", "Command latency percentiles (submit to status, rig clock)")


PLOTS = {"iops_per_100k.png": plot_iops, "mbps_across_lba.png": plot_lba_mbps,
         "latency_percentiles.png": plot_latency}


def make_report(run_dir: Path, table: pa.Table | None = None) -> tuple[list[Phase], list[Path]]:
    if table is None:
        table = pq.read_table(run_dir / "records.parquet", columns=REPORT_COLUMNS)
    ph = phases(table)
    paths = []
    for name, fn in PLOTS.items():
        fn(ph, run_dir / name)
        paths.append(run_dir / name)
    return ph, paths
