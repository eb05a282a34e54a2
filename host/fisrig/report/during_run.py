"""The report's work on each long phase, done while the run still runs.

On a 2-core machine the model takes one core and records.parquet's conversion about half
of the other (results.ParquetStream), so the report's per-phase work can run in the rest:
each long phase's figures (phase_stats), its fio job (fio_json.job_body) and its latency
curve (plots.latency_curve) are made on a thread of their own as soon as the records have
moved past the phase. What is left at the end of the run is the phases made since the
last one, the plots and the files. The main job's first half (its first fill and torture,
18 of its 36 million commands) is made so while the model runs the second.

The stream hands this the report's columns of each row group it writes (ParquetStream's
`work`), and these tables then are the report's: records.parquet is checked against them
when it is read back (its rows and the sums of results.CHECKED), not read twice.

What is made here is taken at the end only for a phase that turns out to be the one run
of rows it was made from (phase_stats.compute's `ready`): a phase that comes back later
(a loop's) is made again from all of its rows, as it would have been without this.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from fisrig import program_format as pf

# A run of a phase's rows shorter than this is left to the end: making it costs the end
# about as little, and a short phase is more often one of a loop's (made again anyway).
MIN_ROWS = 1 << 18
_COMMAND = pf.RECORD_KINDS.index("command")


def _behind_the_run() -> None:
    """The work's thread yields to the target's process (the model, which it would slow
    else: the main job's took 1.9 s longer beside it, measured) and to the conversion.
    Linux's niceness is a thread's own; elsewhere the thread runs as it is."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


class PhaseWork:
    """max_rows: the most records whose report columns it keeps; past them it drops what it
    kept and made, and does nothing more (the report, if it fits at the end, reads the file).
    min_rows: the shortest run of a phase's rows it makes (MIN_ROWS)."""

    def __init__(self, meta: dict, max_rows: int | None = None, min_rows: int = MIN_ROWS):
        from fisrig.report import fio_json
        from fisrig.analysis import phase_stats
        self.columns = list(phase_stats.COLUMNS)
        self.plan = phase_stats.plan_phases(meta)
        self.sequential = fio_json.sequential_phases(meta)
        self.engine = fio_json.engine_of(meta)
        self.chunks: list[pa.Table] = []
        self.rows = 0
        self.max_rows, self.min_rows, self.dropped = max_rows, min_rows, False
        self._open: tuple[int, bool, int] | None = None  # (marker code, is a command, first row) of the last run
        self._names: list[str] = []  # the phases' names, by marker code
        self._marker, self._marker_rows = None, 0  # the last record's marker as it came, and its records so far
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="phase work", initializer=_behind_the_run)
        self._side = ThreadPoolExecutor(1, thread_name_prefix="phase work's fio job", initializer=_behind_the_run)
        self._made: list[tuple[tuple[str, int, int], Future]] = []

    def long_phase_ends(self, marker: np.ndarray) -> list[int]:
        """Where among records coming (their markers, as the target wrote them) a phase of
        min_rows records or more ends: the stream writes its row group there."""
        if self.dropped or not len(marker):
            return []
        changes = np.flatnonzero(marker[1:] != marker[:-1]) + 1
        if self._marker is not None and marker[0] != self._marker:
            changes = np.concatenate([[0], changes])
        began = np.concatenate([[-self._marker_rows], changes[:-1]])
        self._marker = marker[-1]
        self._marker_rows = len(marker) - int(changes[-1]) if len(changes) else self._marker_rows + len(marker)
        return changes[changes - began >= self.min_rows].tolist()

    def add(self, table: pa.Table) -> None:
        """The next row group (the stream's table of it; its report columns are kept)."""
        if self.dropped:
            return
        if self.max_rows is not None and self.rows + table.num_rows > self.max_rows:
            self.close()
            return
        table = table.select(self.columns)
        self.chunks.append(table)
        start, self.rows = self.rows, self.rows + table.num_rows
        if not table.num_rows:
            return
        marker = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in table.column("marker").chunks])
        is_cmd = np.concatenate([c.indices.to_numpy(zero_copy_only=False) == _COMMAND
                                 for c in table.column("kind").chunks])
        self._names = self._names or table.column("marker").chunk(0).dictionary.to_pylist()  # the stream's, one for all
        if self._open is not None and (self._open[0], self._open[1]) != (int(marker[0]), bool(is_cmd[0])):
            self._close(start)
        if self._open is None:
            self._open = (int(marker[0]), bool(is_cmd[0]), start)
        for at in (np.flatnonzero((marker[1:] != marker[:-1]) | (is_cmd[1:] != is_cmd[:-1])) + 1).tolist():
            self._close(start + at)
            self._open = (int(marker[at]), bool(is_cmd[at]), start + at)

    def phase_ends(self) -> None:
        """The records after the last row group are another phase's: the run of rows open
        at its end is over."""
        self._close(self.rows)

    def _close(self, end: int) -> None:
        """The run of rows open is over at `end`: made if it is a long one of commands."""
        if self._open is None:
            return
        code, is_cmd, first = self._open
        self._open = None
        if is_cmd and end - first >= self.min_rows:
            label = self._names[code]
            table = pa.concat_tables(self.chunks)
            self._made.append(((label, first, end), self._pool.submit(self._make, table, label, first, end)))

    def _make(self, table: pa.Table, label: str, first: int, end: int):
        """The phase of rows [first, end) of `table`: its PhaseStats, with its fio job,
        percentiles, latency curve and sorted statuses made."""
        from fisrig.report import fio_json, plots
        from fisrig.analysis import phase_stats
        from fisrig.analysis.arrays import PhaseRows
        r = PhaseRows(table, label, slice(first, end), None)
        pp = self.plan.get(label, phase_stats.PlanPhase())
        # Its two halves on two threads (numpy lets go of the GIL), what both read made
        # once (PhaseRows' memo): the fio job, and the rest. The main job's 16 M-command
        # torture phase: 1.2 s and 1.3 s of work, which the end of the run waits for when
        # it is the last long phase.
        r.load("t_submit_ns", "t_status_ns", "latency_ns", "lbas", "ok", "op")
        job = self._side.submit(fio_json.job_body, r, phase_stats.qd_asked(pp), self.sequential.get(label, False),
                                self.engine)
        p = phase_stats.compute_phase(r, pp, bool(self.plan))
        p.latency_percentiles()
        if len(p.latency_ns) >= plots.MIN_LATENCY_COMMANDS:
            plots.latency_curve(p)
        r.sorted("t_status_ns")  # plot_iops'
        p.fio_job = job.result()
        return p

    def table(self) -> pa.Table:
        """Every row group's report columns so far, as one table (no copy); None when it
        has none (or dropped them)."""
        return pa.concat_tables(self.chunks) if self.chunks else None

    def ready(self) -> dict:
        """What was made, by (label, first row, row after the last), once all of it is:
        phase_stats.compute's `ready`. A phase whose making failed is left out (the end
        makes it again, and says why if it fails again)."""
        out = {}
        for key, future in self._made:
            try:
                out[key] = future.result()
            except Exception:  # noqa: BLE001 - made again at the end, where it is reported
                pass
        self._pool.shutdown()
        self._side.shutdown()
        return out

    def close(self) -> None:
        """Drops what was kept and made, and what was still to be made."""
        self.dropped, self._open = True, None
        for _, future in self._made:
            future.cancel()
        self._pool.shutdown(wait=False)
        self._side.shutdown(wait=False)
        self.chunks, self._made = [], []
