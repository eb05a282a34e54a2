"""A run's command records split by phase once, for every reader of a report: phase_stats
(the headline's and summary.json's "fisrig" figures), fio_json.fio_summary (fio's json+) and
the plots.

Why a module of its own: the main job's report spent most of its time here, on 36 million
records, doing the same work three times over whole-run arrays: masking every column per
phase (is_cmd & marker == m, then a copy per column), np.isin per phase and direction, a
Python list of 36 million markers to find the phases' order, and sorting the same stamps
in phase_stats and in fio_summary. On this machine (a VM: a fresh page of memory costs
about 1 s a GB to fault in), every whole-run temporary of 8-byte values is a quarter of a
second, so the rules here are: a phase's columns are slices of the Parquet table's (phases
run one after another, so a phase is one run of rows), copied at most once and only when
read; what two readers need (sorted stamps, the depth at each submit, the opcode class) is
computed once and kept; and long temporaries are made a chunk at a time.
"""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from fisrig.sata.ata import FLUSHES, READS, TRIMS, WRITES
from fisrig import program_format as pf
from fisrig.records.store import code_of, codes

# Rows a chunk for the element-wise passes: 8 MB of int64 temporaries, which malloc hands
# back and reuses, where a whole 16-million-row phase's would be fresh pages each time.
CHUNK = 1 << 20
# A chunk for searchsorted of the sorted submits among the sorted statuses: each chunk
# searches only the statuses between its first and last submit, which stay in cache
# (the main job's torture phase, 16 M commands: 0.47 s so, 2.0 s in one call).
SEARCH_CHUNK = 1 << 16

# What a command is, by its opcode (one table lookup; np.isin per phase was seconds).
OP_OTHER, OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH = 0, 1, 2, 3, 4
OP_OF = np.zeros(256, dtype=np.int8)
for _code, _ops in ((OP_READ, READS), (OP_WRITE, WRITES), (OP_TRIM, TRIMS), (OP_FLUSH, FLUSHES)):
    OP_OF[list(_ops)] = _code
# An NVMe I/O queue's (nvme.h's NVM opcodes: Read, Write, Dataset Management, Flush); an admin
# command (queue 0) is none of them.
NVME_OP_OF = np.zeros(256, dtype=np.int8)
for _code, _ops in ((OP_READ, (0x02,)), (OP_WRITE, (0x01,)), (OP_TRIM, (0x09,)), (OP_FLUSH, (0x00,))):
    NVME_OP_OF[list(_ops)] = _code
_NVME = int(pf.PROTO["nvme"])


def op_classes(command: np.ndarray, protocol: np.ndarray | None, queue: np.ndarray | None) -> np.ndarray:
    """Each command's class (OP_*) by its protocol's opcodes: ATA's, or NVMe's on an I/O queue."""
    op = OP_OF[command]
    if protocol is None or queue is None:
        return op
    nvme = protocol == _NVME
    if nvme.any():
        op[nvme] = np.where(queue[nvme] != 0, NVME_OP_OF[command[nvme]], OP_OTHER)
    return op

# More runs of rows than this and a phase's rows are found by a mask instead of one by one.
_MAX_RUNS = 4096


def masked(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """a[mask], without a copy when the mask keeps every row (most phases: every command ok)."""
    return a if mask.all() else a[mask]


def sum_diff(a: np.ndarray, b: np.ndarray) -> int:
    """sum(a - b) as np.sum(a - b) gives it on int64 (wrapping alike), without the
    temporaries: each sum wraps modulo 2**64, and so does their difference."""
    d = (int(a.sum(dtype=np.int64)) - int(b.sum(dtype=np.int64))) % (1 << 64)
    return d - (1 << 64) if d >= 1 << 63 else d


def depth_after_submits(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The commands in flight just after each submit, itself included: the submits so far
    less the statuses at or before it. `starts` and `ends` sorted; not clamped at 1.
    int32 (a depth is at most the commands, and 4 bytes a command less to fault in)."""
    out = np.empty(len(starts), dtype=np.int32 if len(starts) < 1 << 31 else np.int64)
    for a in range(0, len(starts), SEARCH_CHUNK):
        s = starts[a:a + SEARCH_CHUNK]
        lo = int(np.searchsorted(ends, s[0], side="right"))
        hi = int(np.searchsorted(ends, s[-1], side="right"))
        out[a:a + len(s)] = np.arange(a + 1, a + len(s) + 1) - lo - np.searchsorted(ends[lo:hi], s, side="right")
    return out


# sort_values: at least this many values before counting pays for its fixed costs (the
# bins), and at most this many bins (128 MB of counts).
COUNT_SORT_MIN = 1 << 16
COUNT_BINS_MAX = 1 << 24


def sort_values(a: np.ndarray) -> np.ndarray:
    """np.sort(a), the same array, for an integer array: the values in [0, B) are counted
    (np.bincount) and laid out in order (np.repeat), and only the rest are sorted. B is the
    power of two above the 99.9th percentile of a strided sample, at most COUNT_BINS_MAX and
    never more bins than values. Why: a phase's latencies are sorted for its percentiles,
    fio's bins and the latency chart, and a long run's end waits for them; counting takes
    less than half np.sort's time on them (docs/performance.md, "The report's time and
    memory"). Other dtypes, and short arrays, go to np.sort. tests/host/test_sort_values.py
    holds it to np.sort."""
    n = len(a)
    if n < COUNT_SORT_MIN or a.dtype.kind not in "iu" or a.dtype.itemsize != 8:
        return np.sort(a)
    sample = np.sort(a[::max(1, n >> 14)])
    top = int(sample[min(len(sample) - 1, len(sample) * 999 // 1000)])
    bins = 1 << max(10, top.bit_length()) if top >= 0 else 0
    bins = min(bins, COUNT_BINS_MAX, n)
    if bins < 1024:
        return np.sort(a)
    small = a.view(np.uint64) < bins  # negatives too are left to the sort: as uint64 they are huge
    counted = np.bincount(a[small], minlength=bins)
    rest = np.sort(a[~small])
    del small
    below = int(np.searchsorted(rest, 0)) if a.dtype.kind == "i" else 0  # the negatives come first
    out = np.empty(n, dtype=a.dtype)
    out[:below] = rest[:below]
    k = below + int(counted.sum())
    out[below:k] = np.repeat(np.arange(bins, dtype=a.dtype), counted)
    out[k:] = rest[below:]
    return out


def take_rows(col: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    """col.take(rows) for ascending `rows`, chunk by chunk: each chunk gives its own rows,
    and a numeric column without nulls is gathered by numpy into one array (one copy).
    Why: this pyarrow's (19.0.1) ChunkedArray.take puts the whole column together first, a
    copy of every row of the run for each column of each phase: the SNIA PTS client plan's
    report (79.5 M records in 625 chunks, 58 phases, 56 of them visited once a round) spent
    133 s of its 140 in phase_stats.compute so, 0.71 s a take of 3 M rows (0.013 s here)."""
    if not len(rows):
        return col.slice(0, 0)
    bounds = np.cumsum([0, *(len(c) for c in col.chunks)])
    at = np.searchsorted(rows, bounds)  # rows[at[i]:at[i + 1]] are chunk i's
    pieces = [(i, a, b) for i, (a, b) in enumerate(zip(at[:-1].tolist(), at[1:].tolist())) if b > a]
    if (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)) and not col.null_count:
        out = np.empty(len(rows), dtype=col.type.to_pandas_dtype())
        for i, a, b in pieces:
            out[a:b] = col.chunk(i).to_numpy()[rows[a:b] - bounds[i]]
        return pa.chunked_array([pa.array(out)])
    return pa.chunked_array([col.chunk(i).take(pa.array(rows[a:b] - bounds[i])) for i, a, b in pieces],
                            type=col.type)


def is_sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool((a[1:] >= a[:-1]).all())

def visits(positions: np.ndarray) -> list[slice]:
    """A phase's visits: runs of its records that follow each other among the run's command
    records (`positions`, its records' ranks there, ascending). A phase inside a loop
    (PTS rounds) is visited once a pass; its time is its visits' time, not the span from
    its first visit to its last, which holds the other phases' passes."""
    breaks = np.flatnonzero(np.diff(positions) > 1) + 1
    edges = [0, *breaks.tolist(), len(positions)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]



class PhaseRows:
    """One phase's command records, read a column at a time, and what several readers
    derive from them, each computed once."""

    def __init__(self, table: pa.Table, label: str, sel: slice | np.ndarray, ranks: np.ndarray | None):
        self.table, self.label, self.sel = table, label, sel
        self.n = sel.stop - sel.start if isinstance(sel, slice) else len(sel)
        self.ranks = ranks  # the rows' places among the run's command records, when not one run
        self._cache: dict[str, np.ndarray] = {}
        self._locks: dict[str, threading.Lock] = {}

    def _column(self, name: str) -> pa.ChunkedArray:
        col = self.table.column(name)
        return col.slice(self.sel.start, self.n) if isinstance(self.sel, slice) else take_rows(col, self.sel)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._memo(name, lambda: self._column(name).to_numpy())

    def _memo(self, key: str, make) -> np.ndarray:
        """make() once: two threads that ask at once (report.during_run's) wait for one making."""
        if key not in self._cache:
            with self._locks.setdefault(key, threading.Lock()):
                if key not in self._cache:
                    self._cache[key] = make()
        return self._cache[key]

    @property
    def ok(self) -> np.ndarray:
        """Which commands completed without error."""
        def make():
            col = self._column("result")
            if not all(pa.types.is_dictionary(c.type) for c in col.chunks):
                result, names = codes(pa.table({"result": col}), "result")
                return result == code_of(names, "ok")
            # Chunk by chunk, each against its own dictionary: no int32 code per record.
            return np.concatenate([np.asarray(c.indices) == code_of(c.dictionary.to_pylist(), "ok")
                                   for c in col.chunks] or [np.zeros(0, dtype=bool)])
        return self._memo("ok", make)

    @property
    def op(self) -> np.ndarray:
        """Each command's class: OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH or OP_OTHER."""
        def make():
            names = self.table.column_names
            return op_classes(self["command"], self["protocol"] if "protocol" in names else None,
                              self["queue"] if "queue" in names else None)
        return self._memo("op", make)

    def sorted(self, name: str) -> np.ndarray:
        """A stamp column in ascending order: itself when it already is (statuses come in
        completion order), else a stable sort (timsort takes the nearly sorted submits in
        about one pass, where numpy's default sort took 0.7 s of a 16 M phase)."""
        def make():
            a = self[name]
            return a if is_sorted(a) else np.sort(a, kind="stable")
        return self._memo("sorted:" + name, make)

    def sorted_latency(self, mask: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        """The latencies of the rows in `mask`, ascending (`values`: those latencies, when
        the caller has them already). Kept for the rows that completed OK (`ok`), whose
        sort serves the headline's percentiles, summary.json's and the latency chart alike:
        one sort of a 16 M-command phase (0.3 s) where each had selected or bucketed its
        own (1.3 s)."""
        ok = self.ok
        if mask is not ok and not np.array_equal(mask, ok):
            return sort_values(masked(self["latency_ns"], mask) if values is None else values)
        return self._memo("sorted:latency_ok", lambda: sort_values(masked(self["latency_ns"], ok)))

    def order(self) -> np.ndarray:
        """The commands in submit order (a stable argsort: ties stay in record order)."""
        return self._memo("order", lambda: np.argsort(self["t_submit_ns"], kind="stable"))

    def depth(self) -> np.ndarray:
        """depth_after_submits over the whole phase, in submit order."""
        return self._memo("depth", lambda: depth_after_submits(self.sorted("t_submit_ns"),
                                                               self.sorted("t_status_ns")))

    def load(self, *names: str) -> None:
        """Reads `names`: columns, "ok", "op", "sorted:COLUMN"."""
        for name in names:
            if name == "ok" or name == "op":
                getattr(self, name)
            elif name.startswith("sorted:"):
                self.sorted(name.removeprefix("sorted:"))
            else:
                self[name]

    def keep_only(self, *names: str) -> None:
        """Reads `names` (load's) and lets go of the table and of everything else: a
        comparison holds several runs' phases at once (the main job's: about 4 GB each with
        the table, 0.8 GB so)."""
        self.load(*names)
        self._cache = {k: v for k, v in self._cache.items() if k in names}
        self.table = None

    def visits(self) -> list[slice]:
        """The runs of its records that follow each other among the run's command records
        (visits): one, unless the phase is in a loop."""
        if self.ranks is None:
            return [slice(0, self.n)]
        return visits(self.ranks)


def command_runs(marker: np.ndarray, is_cmd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first rows, rows after the last) of the runs of command records with one marker."""
    if not len(marker):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    edges = np.flatnonzero((marker[1:] != marker[:-1]) | (is_cmd[1:] != is_cmd[:-1])) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [len(marker)]])
    keep = is_cmd[starts]
    return starts[keep], ends[keep]


def split(table: pa.Table) -> list[PhaseRows]:
    """Each phase's command records (one per marker that has any), in the order the phases
    first appear in the records. A phase that is one run of rows (the usual case) is a
    slice of the table; one split by other records (a loop's passes, a power record) is the
    indices of its rows, with their places among the command records."""
    if not table.num_rows:
        return []
    marker, names = codes(table, "marker")
    kind, kind_names = codes(table, "kind")
    is_cmd = kind == code_of(kind_names, "command")
    starts, ends = command_runs(marker, is_cmd)
    first: dict[int, list[tuple[int, int]]] = {}
    if len(starts) <= _MAX_RUNS:
        for a, b in zip(starts.tolist(), ends.tolist()):
            first.setdefault(int(marker[a]), []).append((a, b))
    else:  # many runs: the markers in order of their first run, their rows by a mask
        mk = marker[starts]
        _, at = np.unique(mk, return_index=True)
        first = {int(mk[i]): [] for i in sorted(at.tolist())}
    rank = None
    out = []
    for m, runs in first.items():
        if len(runs) == 1:
            out.append(PhaseRows(table, names[m], slice(*runs[0]), None))
            continue
        if rank is None:
            rank = np.cumsum(is_cmd) - 1
        rows = (np.concatenate([np.arange(a, b) for a, b in runs]) if runs
                else np.flatnonzero(is_cmd & (marker == m)))
        out.append(PhaseRows(table, names[m], rows, rank[rows]))
    return out


# fio's percentile list (its default, plus the tail a drive review needs): what the
# phases' figures and fio's JSON give.
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)


def percentiles(lat_ns: np.ndarray, pcts=PERCENTILES, ordered: bool = False) -> dict[str, int]:
    """Latency percentiles keyed as fio keys them ("99.900000"). Each is a latency some
    command had (the inverted CDF, never a value between two commands'): numpy's
    inverted_cdf ranks (n q - 1, up to the next whole rank unless it is one), looked up in
    the values sorted (`ordered`: they are already, as PhaseRows.sorted_latency gives
    them). The headline and summary.json both take theirs from here."""
    if not len(lat_ns):
        return {}
    v = lat_ns if ordered else sort_values(lat_ns)
    q = np.true_divide(np.asanyarray(list(pcts)), 100)
    index = len(v) * q - 1
    rank = np.floor(index)
    rank = np.where(index - rank == 0, rank, rank + 1).astype(np.intp)
    rank[rank < 0] = 0
    return {f"{p:.6f}": int(x) for p, x in zip(pcts, v[rank])}
