"""Traces to replay, in three text formats (docs/traces.md), every line checked against the
drive before anything runs; a bad line is a PlanError naming the file and the line.

- "ops", fisrig's own: one command per line, `op,lba,sectors`, op R (read), W (write), T
  (TRIM) or F (FLUSH, sectors ignored); blank lines and # comments are skipped. What
  `fisrig trace generate` writes (`write`).
- "csv": a header `time,op,lba,length` (or `time,op,lba,bytes`), then one command per
  line: time in seconds, op R/W/T/F or read/write/trim/flush, LBA in 512-byte sectors,
  length in sectors (or bytes, a multiple of 512).
- "blkparse": blkparse's default text output of a blktrace: one command per request, at
  its D event (issued to the driver), or at its Q event in a trace without D events.

Replay is closed-loop at a queue depth: a trace's times are checked (they never go back)
and its span reported, but commands are not held back to them.

Speed (measured on this 2-core machine; docs/traces.md has the table): no format is read
with a Python loop per line. ops and csv go through pyarrow's CSV reader (37.7 M lines: ops
in about 5.5 s, csv in 9.6 s); blkparse's lines are split by pyarrow's whitespace splitter
in 64 MB blocks, two at a time on two threads (about a second a million lines). When
something is wrong, ops and csv are read again line by line to name the line; blkparse
names it from the block it is in.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from fisrig import program_format as pf
from fisrig.plan import PlanError

from fisrig.traces.blkparse import _blkparse, _is_device
from fisrig.traces.csv_trace import _csv, _csv_header
from fisrig.traces.entries import (BOM, LBA48, MAX_SECTORS, OP_COLUMN, SECTOR, F, R, T, Trace, W,  # noqa: F401 - as callers know them
                                   Rows, lines, make_entries, op_codes)

FORMATS = ("auto", "ops", "csv", "blkparse")


# --- ops: op,lba,sectors ----------------------------------------------------------------

def _fast(path: Path, capacity: int) -> np.ndarray | None:
    """The whole trace in one go, or None when it needs the careful reader."""
    with open(path, "rb") as f:
        if b"#" in f.read(1 << 16):
            return None
    try:
        t = pcsv.read_csv(path, read_options=pcsv.ReadOptions(column_names=["op", "lba", "sectors"]),
                          convert_options=pcsv.ConvertOptions(
                              column_types={"op": OP_COLUMN, "lba": pa.int64(), "sectors": pa.int64()}))
    except pa.ArrowException:
        return None
    if any(t.column(c).null_count for c in t.column_names):
        return None
    op = op_codes(t.column("op"), pf.TRACE_OPS)
    lba, sectors = t.column("lba").to_numpy(), t.column("sectors").to_numpy()
    data = op != pf.TRACE_OPS["F"]
    bad = (op == 255) | (lba < 0) | (lba >= capacity) | \
        (data & ((sectors < 1) | (sectors > 65536) | (lba + sectors > capacity)))
    if not len(op) or bad.any():
        return None
    return make_entries(lba, np.where(data, sectors, 0), op)


def _careful(path: Path, capacity: int) -> np.ndarray:
    rows = Rows(np.uint64)
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = (raw.removeprefix(BOM) if n == 1 else raw).decode("ascii")
            except UnicodeDecodeError:
                raise PlanError(str(path), n, "not a text file (a byte that is not ASCII): a trace is op,lba,sectors "
                                              "lines") from None
            if "\0" in line:
                raise PlanError(str(path), n, "not a text file (a NUL byte): a trace is op,lba,sectors lines")
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 3 or parts[0].upper() not in pf.TRACE_OPS:
                raise PlanError(str(path), n, f"expected op,lba,sectors with op one of R W T F: {line!r}")
            try:
                lba, sectors = int(parts[1], 0), int(parts[2], 0)
            except ValueError:
                raise PlanError(str(path), n, f"LBA and sectors must be whole numbers: {line!r}") from None
            op = pf.TRACE_OPS[parts[0].upper()]
            if op != pf.TRACE_OPS["F"]:
                if not 1 <= sectors <= 65536:
                    raise PlanError(str(path), n, f"{sectors} sectors: a command moves 1 to 65536")
                if lba < 0 or lba + sectors > capacity:
                    raise PlanError(str(path), n, f"LBAs {lba}..{lba + sectors - 1} run past the drive's last LBA {capacity - 1}")
            elif not 0 <= lba < capacity:
                raise PlanError(str(path), n, f"LBA {lba} is not on the drive (0..{capacity - 1}), even for a FLUSH")
            else:
                sectors = 0  # a FLUSH moves nothing
            rows.add((lba, sectors, op))
    arr = rows.array(path)
    return make_entries(arr[:, 0], arr[:, 1], arr[:, 2])


# --- the formats together ----------------------------------------------------------------

def detect(path: Path) -> str:
    """The format of a trace, from its first line that is not blank or a # comment."""
    for n, line in lines(Path(path)):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        tok = text.split()
        if text.startswith("Input file ") or (len(tok) >= 4 and _is_device(tok[0]) and tok[1].isdigit()):
            return "blkparse"
        if _csv_header(text):
            return "csv"
        if len(text.split(",")) == 3:
            return "ops"
        raise PlanError(str(path), n, f"cannot tell the trace's format from {text[:60]!r}: expected op,lba,sectors "
                                      f"(ops), a header time,op,lba,length (csv) or a blkparse event line")
    raise PlanError(str(path), None, "the trace has no commands (only blank lines and comments)")


def read(path: Path, capacity: int | None = None, fmt: str = "auto") -> Trace:
    """The trace at `path` in format `fmt` ("auto": from its first line), checked against a
    drive of `capacity` sectors (None: any LBA48 drive); PlanError naming the line of the
    first bad one."""
    path = Path(path)
    capacity = LBA48 if capacity is None else capacity
    if fmt not in FORMATS:
        raise PlanError(str(path), None, f"no trace format {fmt!r} (valid: {', '.join(FORMATS)})")
    if not path.is_file():
        raise PlanError(str(path), None, "no such trace file" + (" (a directory)" if path.is_dir() else ""))
    if fmt == "auto":
        fmt = detect(path)
    if fmt == "csv":
        return _csv(path, capacity)
    if fmt == "blkparse":
        return _blkparse(path, capacity)
    fast = _fast(path, capacity)
    return Trace(fast if fast is not None else _careful(path, capacity), "ops")


def load(path: Path, capacity: int | None = None, fmt: str = "auto") -> np.ndarray:
    """The trace's entries (read()'s), as a replay step sends them."""
    return read(path, capacity, fmt).entries


def write(path: Path, entries: np.ndarray) -> None:
    """Entries as op,lba,sectors lines (the ops format) by pyarrow's CSV writer: 37 M lines
    in about 5 s here. No header comment: a # sends the reader to its careful path."""
    letters = pa.array(sorted(pf.TRACE_OPS, key=pf.TRACE_OPS.get)).take(pa.array(entries["op"]))
    table = pa.table({"op": letters, "lba": entries["lba"], "sectors": entries["sectors"]})
    pcsv.write_csv(table, path, write_options=pcsv.WriteOptions(include_header=False, quoting_style="none"))


# --- what a trace holds ------------------------------------------------------------------

SEQ_WINDOW = 64  # writes looked back at to call one sequential (stats)
SPAN_BANDS = ((0.0, 0.05), (0.05, 0.20), (0.20, 1.0))  # JESD219's LBA bands, for any trace


def sequential(lba: np.ndarray, sectors: np.ndarray, window: int = SEQ_WINDOW) -> np.ndarray:
    """Per write: it starts where one of the `window` writes before it ended (the previous
    write of its stream, when a few streams interleave). One vectorised compare per step
    back."""
    end = lba + sectors
    if len(end) and int(end.max()) < 1 << 32:  # half the bytes to compare: 1.5 s for the 64 steps, from 3.3
        lba, end = lba.astype(np.uint32), end.astype(np.uint32)
    seq = np.zeros(len(lba), bool)
    same = np.empty(len(lba), bool)
    for k in range(1, min(window, len(lba) - 1) + 1):
        np.equal(lba[k:], end[:-k], out=same[k:])
        np.logical_or(seq[k:], same[k:], out=seq[k:])
    return seq


def stats(entries: np.ndarray, capacity: int) -> dict:
    """What a trace holds, as `fisrig trace stats` prints it: commands by kind, bytes, the
    mean write, the random/sequential split of writes (sequential: starts where one of the
    64 writes before it ended), 4 KiB alignment, where on the drive writes land (JESD219's
    bands), the commonest write sizes, TRIMs (summed, and the share of the drive they cover
    once) and flushes."""
    op = entries["op"]
    w = op == W
    lba, sectors = entries["lba"][w].view(np.int64), entries["sectors"][w]  # LBAs are under 2^48
    writes = int(w.sum())
    seq = int(sequential(lba, sectors.astype(np.int64)).sum()) if writes else 0
    big = sectors >= 8
    counts = np.bincount(sectors) if writes else np.zeros(1, np.int64)  # sizes are 1..65536: no sort of 37 M
    sizes = np.flatnonzero(counts)
    counts = counts[sizes]
    top = np.argsort(-counts, kind="stable")[:8]
    t = op == T
    t_lba, t_sec = entries["lba"][t].astype(np.int64), entries["sectors"][t].astype(np.int64)
    covered = 0
    if t.any():  # the union of the TRIMs' ranges: sorted by start, each counted past the furthest end so far
        o = np.argsort(t_lba, kind="stable")
        s, e = t_lba[o], t_lba[o] + t_sec[o]
        reach = np.maximum.accumulate(e)
        prev = np.concatenate([[0], reach[:-1]])
        covered = int(np.clip(e - np.maximum(s, prev), 0, None).sum())
    flushes = int((op == F).sum())
    return {
        "commands": int(len(op)), "writes": writes, "reads": int((op == R).sum()), "trims": int(t.sum()),
        "flushes": flushes,
        "write_bytes": int(sectors.sum(dtype=np.int64)) * SECTOR,
        "read_bytes": int(entries["sectors"][op == R].astype(np.int64).sum()) * SECTOR,
        "mean_write_bytes": float(sectors.mean(dtype=np.float64) * SECTOR) if writes else 0.0,
        "sequential_share": seq / writes if writes else 0.0,
        "random_share": 1 - seq / writes if writes else 0.0,
        "aligned_4k_share": float((lba[big] % 8 == 0).mean()) if big.any() else 0.0,
        "under_4k_share": float((~big).mean()) if writes else 0.0,
        "band_shares": [float(((lba >= int(a * capacity)) & (lba < int(b * capacity))).mean()) if writes else 0.0
                        for a, b in SPAN_BANDS],
        "write_sizes": [(int(sizes[i]) * SECTOR, float(counts[i] / writes)) for i in top],
        "trimmed_bytes": int(t_sec.sum()) * SECTOR,
        "trimmed_share": int(t_sec.sum()) / capacity,
        "trimmed_once_share": covered / capacity,
        "writes_per_flush": writes / flushes if flushes else None,
        "capacity_sectors": int(capacity),
    }
