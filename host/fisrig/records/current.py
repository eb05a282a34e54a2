"""The drive's supply current as the rig sampled it (a plan's `current_us`, or a `current`
step: engine_if.h FISRIG_POWER_SAMPLE), in open formats beside the records.

The sampler's records (struct fisrig_current_record, 30 samples each) are taken out of the
record stream as it is written and become current.parquet, one row per sample: its time on
the rig's clock (the commands' t_*_ns), the mA, and the phase it fell in. At the run's end
current_windows.parquet holds what a power module shows at its averaging windows: per
100 us and per 100 ms window (from the first sample), the highest sample, the mean and the
samples in it; summary.json's `fisrig.current` the run's peak and the highest window means (a
drive's datasheet gives its peak current over 100 us and its average over 100 ms or more).
Samples the sampler lost (a record ring that stayed full) leave a gap in the times, never a
made-up value; the record after one says so, and `lost_samples` counts them.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fisrig import program_format as pf

CURRENT = "current.parquet"
WINDOWS = "current_windows.parquet"
WINDOWS_NS = {"100us": 100_000, "100ms": 100_000_000}
_PER_RECORD = pf.CURRENT_SAMPLES


def samples_of(rec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The samples of CURRENT records (records.bin's dtype): their ticks, mA, markers, and
    each sampler record's (first tick, period, samples, records dropped before it)."""
    raw = np.ascontiguousarray(rec).view(np.uint8).reshape(len(rec), pf.RECORD_DTYPE.itemsize)
    cur = raw[:, :pf.CURRENT_DTYPE.itemsize].copy().view(pf.CURRENT_DTYPE).reshape(-1)
    at = pf.CURRENT_DTYPE.fields["ma"][1]
    ma = raw[:, at:at + 2 * _PER_RECORD].copy().view("<u2").reshape(len(rec), _PER_RECORD)
    n = np.minimum(cur["samples"].astype(np.int64), _PER_RECORD)
    # The VM gives a sampler record's samples in pieces, one a phase (program.h): this
    # record's are lbas from index lba.
    first = rec["lba"].astype(np.int64)
    index = np.arange(_PER_RECORD)[None, :]
    keep = (index >= first[:, None]) & (index < np.minimum(first + rec["lbas"], n)[:, None])
    ticks = cur["ts_first"][:, None].astype(np.uint64) + \
        np.arange(_PER_RECORD, dtype=np.uint64)[None, :] * cur["period_ticks"][:, None].astype(np.uint64)
    markers = np.broadcast_to(rec["marker"][:, None], keep.shape)
    whole = first == 0  # a sampler record's first piece: its head counts once
    return ticks[keep], ma[keep], markers[keep], np.stack([cur["ts_first"].astype(np.int64),
                                                         cur["period_ticks"].astype(np.int64), n,
                                                         cur["dropped"].astype(np.int64)], axis=1)[whole]


class _Windows:
    """Windows of width_ns from the run's first sample, taken as the samples come: each
    window's start, highest sample, mean and samples (a window with none is left out)."""

    def __init__(self, width_ns: int):
        self.width = width_ns
        self.t0: int | None = None
        self.open: list | None = None  # [k, max, sum, n] of the window the samples are in
        self.done: list[np.ndarray] = []  # rows of (k, max, sum, n)

    def add(self, t_ns: np.ndarray, ma: np.ndarray) -> None:
        if self.t0 is None:
            self.t0 = int(t_ns[0])
        k = (t_ns - self.t0) // self.width
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])  # samples come in time order
        rows = np.stack([k[starts], np.maximum.reduceat(ma, starts).astype(np.int64),
                         np.add.reduceat(ma.astype(np.int64), starts), np.diff(np.r_[starts, len(k)])], axis=1)
        if self.open is not None:
            if rows[0, 0] == self.open[0]:
                rows[0, 1] = max(rows[0, 1], self.open[1])
                rows[0, 2] += self.open[2]
                rows[0, 3] += self.open[3]
            else:
                self.done.append(np.array([self.open]))
        self.done.append(rows[:-1])
        self.open = list(rows[-1])

    def table(self, name: str) -> pa.Table:
        rows = np.concatenate(self.done + ([np.array([self.open])] if self.open is not None else []))
        return pa.table({"window": pa.array([name] * len(rows)), "t_ns": self.t0 + rows[:, 0] * self.width,
                         "max_ma": rows[:, 1].astype(np.uint16), "mean_ma": rows[:, 2] / rows[:, 3],
                         "samples": rows[:, 3]})


class CurrentStream:
    """current.parquet written as the records come (ParquetStream hands it the CURRENT
    records), and its windows; finish() puts them in place, abandon() removes them."""

    def __init__(self, run_dir: Path, markers: dict[int, str]):
        from fisrig.records.schema import marker_dictionary, ticks_to_ns
        self._ns, self._dictionary = ticks_to_ns, marker_dictionary(markers)
        self.run_dir = Path(run_dir)
        self.tmp = self.run_dir / (CURRENT + ".tmp")
        self._writer: pq.ParquetWriter | None = None
        self._windows = {name: _Windows(width) for name, width in WINDOWS_NS.items()}
        self.records = 0
        self.samples = 0
        self.lost = 0
        self.peak = 0
        self._total = 0
        self._times: list[int] = []  # the first two samples' times: the period
        self._next: tuple[int, int] | None = None  # where the next record's first sample is due

    # Records a piece: the samples' arrays of 32 Ki records are about 8 MB each. smoke-tiny
    # sampled at 4 us, the host's peak: 430 MB taking a poll's worth at once, 258 MB so
    # (194 MB without sampling).
    PIECE = 1 << 15

    def take(self, rec: np.ndarray) -> None:
        for i in range(0, len(rec), self.PIECE):
            self._take(rec[i:i + self.PIECE])

    def _take(self, rec: np.ndarray) -> None:
        ticks, ma, markers, heads = samples_of(rec)
        for first, period, n, dropped in heads:
            # The gap before a record that says the sampler dropped records is what it lost
            # (a gap before another is the sampler stopped, or off).
            if dropped and self._next is not None and first > self._next[0] and period == self._next[1]:
                self.lost += (first - self._next[0]) // period
            self._next = (int(first + n * period), int(period))
        self.records += len(rec)
        if not len(ma):
            return
        t_ns = self._ns(ticks)
        table = pa.table({"t_ns": t_ns, "ma": ma.astype(np.uint16), "marker": self._dictionary(markers)})
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.tmp, table.schema, compression="zstd",
                                            column_encoding={"t_ns": "DELTA_BINARY_PACKED"},
                                            use_dictionary=["ma", "marker"])
        self._writer.write_table(table)
        for w in self._windows.values():
            w.add(t_ns, ma)
        self.samples += len(ma)
        self.peak = max(self.peak, int(ma.max()))
        self._total += int(ma.astype(np.int64).sum())
        self._times = (self._times + [int(t) for t in t_ns[:2]])[:2]

    def figures(self, windows: dict[str, pa.Table]) -> dict:
        """What summary.json says of the samples (`fisrig.current`), with their windows."""
        out = {"samples": self.samples, "lost_samples": int(self.lost),
               "period_ns": self._times[1] - self._times[0] if len(self._times) == 2 else 0,
               "peak_ma": self.peak, "mean_ma": round(self._total / self.samples, 2)}
        for name, table in windows.items():
            out[f"max_{name}_mean_ma"] = round(float(table.column("mean_ma").to_numpy().max()), 2)
        return out

    def finish(self) -> None:
        """current.parquet and current_windows.parquet in place (the figures in the
        windows' metadata); none when the run sampled nothing (files of an earlier making go)."""
        (self.run_dir / WINDOWS).unlink(missing_ok=True)
        if self._writer is None:
            (self.run_dir / CURRENT).unlink(missing_ok=True)
            return
        self._writer.close()
        windows = {name: w.table(name) for name, w in self._windows.items()}
        table = pa.concat_tables(windows.values())
        table = table.replace_schema_metadata({"fisrig_current": json.dumps(self.figures(windows))})
        pq.write_table(table, self.run_dir / WINDOWS, compression="zstd")
        self.tmp.replace(self.run_dir / CURRENT)

    def abandon(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.tmp.unlink(missing_ok=True)


def summary(run_dir: Path) -> dict | None:
    """summary.json's `current`: samples, the period, samples lost, the peak and mean mA and
    the highest 100 us and 100 ms window means (None: the run sampled nothing)."""
    path = Path(run_dir) / WINDOWS
    if not path.exists():
        return None
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[b"fisrig_current"]) if b"fisrig_current" in meta else None
