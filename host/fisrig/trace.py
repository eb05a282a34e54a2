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

import math
import os
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from . import program_format as pf
from .plan import PlanError

FORMATS = ("auto", "ops", "csv", "blkparse")
SECTOR = 512
MAX_SECTORS = 65536  # one trace entry (struct fisrig_trace_entry: 1..65536 sectors)
LBA48 = 1 << 48      # the drive size assumed when none is given (ATA's 48-bit LBA)
R, W, T, F = (pf.TRACE_OPS[k] for k in "RWTF")


@dataclass
class Trace:
    """A trace as read: its entries (what the VM replays), its format, the span of its times
    (None for ops, which has none) and what the reader did beyond one line, one command."""
    entries: np.ndarray
    format: str
    seconds: float | None = None
    notes: list[str] = field(default_factory=list)


def _entries(lba: np.ndarray, sectors: np.ndarray, op: np.ndarray) -> np.ndarray:
    out = np.zeros(len(op), dtype=pf.TRACE_ENTRY)
    out["lba"], out["sectors"], out["op"] = lba, sectors, op
    return out


# --- ops: op,lba,sectors ----------------------------------------------------------------

# An op column read dictionary-encoded: a few distinct words, each mapped once, where 37 M
# strings turned into Python objects took 8 s of a 12 s read (measured; now about 4 s).
_OP_COLUMN = pa.dictionary(pa.int32(), pa.string())


def _codes(column: pa.ChunkedArray, words: dict[str, int]) -> np.ndarray:
    """The op code of each row of a dictionary-encoded op column (255: not one of `words`,
    matched trimmed and in any case)."""
    parts = [np.zeros(0, np.uint8)]
    for chunk in column.chunks:
        known = np.array([words.get(v.strip().upper(), 255) for v in chunk.dictionary.to_pylist()] or [255], np.uint8)
        parts.append(known[chunk.indices.to_numpy()])
    return np.concatenate(parts)


def _fast(path: Path, capacity: int) -> np.ndarray | None:
    """The whole trace in one go, or None when it needs the careful reader."""
    with open(path, "rb") as f:
        if b"#" in f.read(1 << 16):
            return None
    try:
        t = pcsv.read_csv(path, read_options=pcsv.ReadOptions(column_names=["op", "lba", "sectors"]),
                          convert_options=pcsv.ConvertOptions(
                              column_types={"op": _OP_COLUMN, "lba": pa.int64(), "sectors": pa.int64()}))
    except pa.ArrowException:
        return None
    if any(t.column(c).null_count for c in t.column_names):
        return None
    op = _codes(t.column("op"), pf.TRACE_OPS)
    lba, sectors = t.column("lba").to_numpy(), t.column("sectors").to_numpy()
    data = op != pf.TRACE_OPS["F"]
    bad = (op == 255) | (lba < 0) | (lba >= capacity) | \
        (data & ((sectors < 1) | (sectors > 65536) | (lba + sectors > capacity)))
    if not len(op) or bad.any():
        return None
    return _entries(lba, np.where(data, sectors, 0), op)


_CHUNK = 1 << 20  # rows gathered per numpy block: a 37-million-line trace never becomes 37 M tuples


class _Rows:
    """Rows of whole numbers read line by line, kept as numpy blocks of _CHUNK rows."""

    def __init__(self, dtype):
        self.dtype, self.blocks, self.rows = dtype, [], []

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) == _CHUNK:
            self.blocks.append(np.array(self.rows, dtype=self.dtype))
            self.rows = []

    def array(self, path: Path) -> np.ndarray:
        """All of them, one row each; PlanError when the trace had none."""
        if self.rows:
            self.blocks.append(np.array(self.rows, dtype=self.dtype))
            self.rows = []
        if not self.blocks:
            raise PlanError(str(path), None, "the trace has no commands")
        return np.concatenate(self.blocks)


def _careful(path: Path, capacity: int) -> np.ndarray:
    rows = _Rows(np.uint64)
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("ascii")
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
    return _entries(arr[:, 0], arr[:, 1], arr[:, 2])


# --- what csv and blkparse share ---------------------------------------------------------

def _lines(path: Path):
    """(line number, text) of a text file; PlanError at the first line that is not text."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if b"\0" in raw:
                raise PlanError(str(path), n, "not a text file (a NUL byte)")
            try:
                yield n, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise PlanError(str(path), n, "not a text file (a byte that is not UTF-8)") from None


def _past_end(lba: int, sectors: int, capacity: int) -> str:
    return f"LBAs {lba}..{lba + sectors - 1} run past the drive's last LBA {capacity - 1}"


def _split(lba: np.ndarray, sectors: np.ndarray, op: np.ndarray, notes: list[str], what: str) -> np.ndarray:
    """Entries, a command of more than 65,536 sectors (a big discard, most often: Linux sends
    SATA SSDs discards of up to 4 M sectors) as consecutive entries of at most 65,536."""
    pieces = np.maximum((sectors + MAX_SECTORS - 1) // MAX_SECTORS, 1)
    if (pieces == 1).all():
        return _entries(lba, sectors, op)
    notes.append(f"{what} over {MAX_SECTORS:,} sectors sent as consecutive commands of at most {MAX_SECTORS:,}: "
                 f"{int((pieces > 1).sum()):,}")
    which = np.repeat(np.arange(len(op)), pieces)
    first = np.cumsum(pieces) - pieces
    k = np.arange(len(which)) - first[which]  # the piece's number within its command
    start = lba[which] + k * MAX_SECTORS
    return _entries(start, np.minimum(sectors[which] - k * MAX_SECTORS, MAX_SECTORS), op[which])


def _with_preflush(lba, sectors, op, preflush) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A FLUSH (lba 0, no sectors) inserted before each command marked `preflush`."""
    if not preflush.any():
        return lba, sectors, op
    n = 1 + preflush.astype(np.int64)
    at = np.cumsum(n) - 1  # where each command lands; its FLUSH, if any, just before
    size = int(at[-1]) + 1 if len(at) else 0
    out_lba, out_sec = np.zeros(size, np.int64), np.zeros(size, np.int64)
    out_op = np.full(size, F, np.uint8)
    out_lba[at], out_sec[at], out_op[at] = lba, sectors, op
    return out_lba, out_sec, out_op


# --- csv: time,op,lba,length --------------------------------------------------------------

_OP_WORDS = {"R": R, "W": W, "T": T, "F": F, "READ": R, "WRITE": W, "TRIM": T, "FLUSH": F}
CSV_COLUMNS = ("time", "op", "lba")  # and "length" (sectors) or "bytes"


def _csv_header(text: str) -> tuple[list[str], str] | None:
    """The column names (as written) and the length unit ("length" or "bytes") of a CSV
    header line, or None when it is not one."""
    names = [p.strip() for p in text.split(",")]
    low = [p.lower() for p in names]
    for unit in ("length", "bytes"):
        if sorted(low) == sorted([*CSV_COLUMNS, unit]):
            return names, unit
    return None


_WHOLE = re.compile(r"[+-]?(?:\d+|0[xX][0-9a-fA-F]+)")


def _whole(text: str) -> int | None:
    """A whole number as pyarrow's CSV reader takes one (decimal, or 0x hex), or None."""
    if not _WHOLE.fullmatch(text):
        return None
    return int(text, 16 if "x" in text.lower() else 10)


def _csv_problem(parts: list[str], order: dict[str, int], unit: str, capacity: int, last: float):
    """(time, op, lba, sectors) of one CSV row, or the message naming what is wrong."""
    if len(parts) != 4:
        return f"expected 4 fields (time,op,lba,{unit}), not {len(parts)}"
    when, op, lba, length = (parts[order[k]].strip() for k in ("time", "op", "lba", unit))
    try:
        t = float(when)
    except ValueError:
        return f"time {when!r} is not seconds (a number)"
    if not math.isfinite(t):
        return f"time {when!r} is not seconds (a finite number)"
    if t < last:
        return f"time {when} goes back (the line before was at {last!r}): a trace is in time order"
    code = _OP_WORDS.get(op.upper())
    if code is None:
        return f"op {op!r} is not one of R W T F (read, write, trim, flush)"
    lba_i, length_i = _whole(lba), _whole(length)
    if lba_i is None or length_i is None:
        return f"lba and {unit} are whole numbers: {lba!r}, {length!r}"
    if code == F:
        return t, code, 0, 0  # a FLUSH has no LBAs: its lba and length are not used
    if lba_i < 0:
        return f"LBA {lba_i} is negative"
    if unit == "bytes":
        if length_i % SECTOR:
            return f"{length_i} bytes is not a whole number of 512-byte sectors"
        length_i //= SECTOR
    if length_i < 1:
        return f"{length} {'bytes' if unit == 'bytes' else 'sectors'}: a command moves at least one sector"
    if lba_i + length_i > capacity:
        return _past_end(lba_i, length_i, capacity)
    return t, code, lba_i, length_i


def _csv(path: Path, capacity: int) -> Trace:
    """pyarrow's reader from the header on, every row checked at once; on any problem the
    file is read again line by line to name the first bad line."""
    head, offset = None, 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            text = raw.decode("utf-8", "replace").split("#", 1)[0].strip()
            if text:
                head = (n, text)
                break
            offset += len(raw)
        if head is None:
            raise PlanError(str(path), None, "the trace has no commands")
        parsed = _csv_header(head[1])
        if parsed is None:
            raise PlanError(str(path), head[0], f"a CSV trace starts with the header time,op,lba,length (or "
                                                f"time,op,lba,bytes), not {head[1][:60]!r}")
        names, unit = parsed
        f.seek(offset)
        try:
            t = pcsv.read_csv(f, read_options=pcsv.ReadOptions(column_names=names, skip_rows=1),
                              convert_options=pcsv.ConvertOptions(column_types={
                                  name: (pa.float64() if name.lower() == "time" else
                                         _OP_COLUMN if name.lower() == "op" else pa.int64()) for name in names}))
            ok = t.num_rows > 0 and not any(t.column(c).null_count for c in t.column_names)
        except (pa.ArrowException, UnicodeDecodeError):
            ok = False
    order = {n.lower(): i for i, n in enumerate(names)}
    if ok:
        col = {n.lower(): t.column(n) for n in names}
        op = _codes(col["op"], _OP_WORDS)
        times = col["time"].to_numpy()
        lba, length = col["lba"].to_numpy(), col[unit].to_numpy()
        if not (op == 255).any() and np.isfinite(times).all() and not (np.diff(times) < 0).any():
            data = op != F
            if unit == "bytes":
                ok = not (data & (length % SECTOR != 0)).any()
                length = length // SECTOR
            if ok and not (data & ((lba < 0) | (length < 1) | (lba + length > capacity))).any():
                notes: list[str] = []
                entries = _split(np.where(data, lba, 0), np.where(data, length, 0), op, notes, "commands")
                return Trace(entries, "csv", float(times[-1] - times[0]), notes)
    rows = _Rows(np.int64)
    last, first = -math.inf, None
    for n, line in _lines(path):
        text = line.split("#", 1)[0].strip()
        if not text or n <= head[0]:
            continue
        got = _csv_problem(text.split(","), order, unit, capacity, last)
        if isinstance(got, str):
            raise PlanError(str(path), n, f"{got}: {text[:80]!r}")
        last = got[0]
        first = last if first is None else first
        rows.add(got[1:])
    arr = rows.array(path)
    notes = []
    entries = _split(arr[:, 1], arr[:, 2], arr[:, 0].astype(np.uint8), notes, "commands")
    return Trace(entries, "csv", last - first, notes)


# --- blkparse ----------------------------------------------------------------------------
#
# blkparse's default line (blkparse_fmt.c, process_default; blkparse 1.2.0 as Debian ships it):
#   "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s " device, cpu, sequence, time, pid, action, RWBS,
# then for Q/D (and I, C, M, G, ...) "sector + sectors [process]", or "[process]" alone for a
# request without data, or for a SCSI/ATA passthrough request "bytes (cdb) [process]".
# After the events it prints a summary per CPU and device (`CPU0 (sda):`, `Total (sda):`,
# `Throughput`, `Events`, `Skips`) and `Input file ... added`; those are skipped.
# RWBS (fill_rwbs): F if a preflush; then D (discard), W (write), R (read) or N (no data);
# then F (FUA), A (readahead), S (sync), M (metadata).

_BLOCK = 64 << 20  # bytes read and split at once: bounds memory on a multi-gigabyte trace
_SPLITS = 10  # tokens looked at: device .. sectors (0..9); the process name and a cdb are not
_RWBS_KIND = {"D": T, "W": W, "R": R, "N": None}
_RWBS_TAIL = "FASM"
_EVENT_SHAPE = "'maj,min cpu sequence seconds.nanoseconds pid action RWBS ...'"


def _rwbs(text: str) -> tuple[int | None, bool, bool] | None:
    """(op or None for no data, preflush, FUA) of an RWBS field, or None when it is not one."""
    pre = len(text) > 1 and text[0] == "F" and text[1] in _RWBS_KIND
    body = text[1:] if pre else text
    if not body or body[0] not in _RWBS_KIND:
        return None
    tail = body[1:]
    if any(c not in _RWBS_TAIL for c in tail) or len(set(tail)) != len(tail):
        return None
    return _RWBS_KIND[body[0]], pre, "F" in tail


def _is_device(tok: str) -> bool:
    maj, comma, minor = tok.partition(",")
    return bool(comma) and maj.isdigit() and minor.isdigit()


def _is_seconds(tok: str) -> bool:
    s, dot, ns = tok.partition(".")
    return bool(dot) and s.isdigit() and ns.isdigit()


def _blk_line(text: str, capacity: int):
    """What one line is, for the lines the vectorised pass flags: ("blank" | "other"), an
    event ("event", action, ...) or the message saying what is wrong with an event line."""
    tok = text.split()
    if not tok:
        return ("blank",)
    if not _is_device(tok[0]):
        return ("other",)
    if len(tok) < 7:
        return f"a blkparse event line is {_EVENT_SHAPE}; this one has {len(tok)} fields"
    if not (tok[1].isdigit() and tok[2].isdigit() and tok[4].isdigit()):
        return f"cpu, sequence and pid are whole numbers ({tok[1]!r}, {tok[2]!r}, {tok[4]!r}): {_EVENT_SHAPE}"
    if not _is_seconds(tok[3]):
        return f"time {tok[3]!r} is not seconds.nanoseconds: {_EVENT_SHAPE}"
    act = tok[5]
    if act not in ("D", "Q"):
        return ("event", act)
    rw = _rwbs(tok[6])
    if rw is None:
        return f"RWBS {tok[6]!r} is not blkparse's (F for a preflush, then D, W, R or N, then F A S M)"
    kind, pre, _ = rw
    rest = tok[7:]
    if len(rest) >= 3 and rest[1] == "+":
        if not (rest[0].isdigit() and rest[2].isdigit()):
            return f"a {act} event's range is 'sector + sectors', not {' '.join(rest[:3])!r}"
        if kind is None:
            return f"RWBS {tok[6]!r} says no data, yet the event has a range ({' '.join(rest[:3])})"
        lba, n = int(rest[0]), int(rest[2])
        if n < 1:
            return f"{n} sectors: a request moves at least one"
        if lba + n > capacity:
            return _past_end(lba, n, capacity)
        return ("event", act)
    if rest and rest[0].startswith("["):
        if kind is None or pre:
            return ("event", act)
        return f"a {act} event of {tok[6]} (data) needs 'sector + sectors' before its [process]: {' '.join(rest)[:60]!r}"
    if rest and rest[0].isdigit() and (len(rest) == 1 or rest[1][:1] in "(["):
        return ("event", act)  # a passthrough request: "bytes (cdb) [process]"
    return f"a {act} event is '... RWBS sector + sectors [process]', not '... {tok[6]} {' '.join(rest)[:60]}'"


def _blocks(path: Path):
    """blkparse's text in blocks of whole lines: (first line's number, bytes, line offsets,
    the lines as a pyarrow string array). Line i runs from the newline before it to its own
    (excluded): that newline is leading whitespace to the splitter, so no bytes are copied."""
    first_line = 1
    with open(path, "rb") as f:
        rest = b""
        while True:
            chunk = f.read(_BLOCK)
            data = rest + chunk
            if not data:
                return
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            if cut == 0:  # a line longer than a block: read on
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
            nl = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
            ends = nl if len(nl) and nl[-1] == len(data) - 1 else np.append(nl, len(data))
            offsets = np.concatenate([[0], ends]).astype(np.int64)
            yield first_line, data, offsets, pa.LargeStringArray.from_buffers(
                len(ends), pa.py_buffer(offsets), pa.py_buffer(data))
            first_line += len(ends)


def _text(data: bytes, offsets: np.ndarray, i: int) -> str:
    return data[offsets[i]:offsets[i + 1]].decode("utf-8", "replace").strip()


_SPACE = np.zeros(256, bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True  # what the splitter calls whitespace


def _tokens(data: bytes, offsets: np.ndarray, lines: pa.Array):
    """Per line: its token count (blank lines 0) and a function giving token k of the rows
    asked (an empty string past a line's end). A line's leading newline (or blank) gives an
    empty first piece and a trailing \r or blank an empty last one: neither is counted."""
    pieces = _SPLITS + 2  # a leading empty piece, the tokens looked at, and the rest of the line
    parts = pc.ascii_split_whitespace(lines, max_splits=pieces - 1)
    offs = parts.offsets.to_numpy()
    flat = parts.values
    count = np.diff(offs)
    buf = np.frombuffer(data, np.uint8)
    size = np.diff(offsets)
    lead = np.ones(len(count), bool)  # every line but the block's first starts with its newline
    lead[0] = size[0] == 0 or _SPACE[buf[0]]
    trail = (count > 1) & (count < pieces) & (size > 0) & _SPACE[buf[np.maximum(offsets[1:] - 1, 0)]]
    n = count - lead - trail.astype(np.int64)
    base = offs[:-1] + lead

    def tok(k: int, rows: np.ndarray) -> pa.Array:
        has = n[rows] > k
        got = pc.take(flat, pa.array(np.where(has, base[rows] + k, 0)))
        return got if has.all() else pc.if_else(pa.array(has), got, "")

    return n, tok


def _ints(a: pa.Array, kind=pa.int64()) -> np.ndarray | None:
    """The numbers of a string array, or None when one is not a number."""
    try:
        return pc.cast(a, kind).to_numpy()
    except pa.ArrowInvalid:
        return None


def _decimal(a: pa.Array) -> np.ndarray:
    """Each string is digits only (and not empty)."""
    return pc.and_(pc.ascii_is_decimal(a), pc.greater(pc.utf8_length(a), 0)).to_numpy(zero_copy_only=False)


@dataclass
class _Block:
    """What one block of lines holds: its first problem line (None, or the line's number
    in the file and the message), its first line that is neither an event nor blank, its
    last event's line, and per action (D, Q) the columns of its events."""
    bad: tuple[int, str] | None = None
    stray: tuple[int, str] | None = None
    first_event: int = 0
    last_event: int = 0
    events: dict = field(default_factory=dict)


def _block(first_line: int, data: bytes, offsets: np.ndarray, lines: pa.Array, capacity: int) -> _Block:
    out = _Block()
    n, tok = _tokens(data, offsets, lines)

    def bad(i: int) -> _Block:
        """The block with line i as its problem, in the careful reader's words."""
        text = _text(data, offsets, i)
        what = _blk_line(text, capacity)
        msg = what if isinstance(what, str) else f"not a blkparse event line: {_EVENT_SHAPE}"
        out.bad = (first_line + i, f"{msg}: {text[:100]!r}")
        return out

    def first_bad(rows: np.ndarray) -> _Block:
        """The first of `rows` the careful reader finds wrong (for a cast that failed on one)."""
        for i in rows:
            if isinstance(_blk_line(_text(data, offsets, int(i)), capacity), str):
                return bad(int(i))
        return bad(int(rows[0]))

    some = np.flatnonzero(n > 0)
    device = np.zeros(len(n), bool)
    device[some] = pc.match_substring_regex(tok(0, some), r"^\d+,\d+$").to_numpy(zero_copy_only=False)
    for i in np.flatnonzero((n > 0) & ~device):
        text = _text(data, offsets, int(i))
        if not text.startswith("Input file "):  # blkparse's note of each file it read
            out.stray = (first_line + int(i), text)
            break
    ev = np.flatnonzero(device)
    if not len(ev):
        return out
    out.first_event, out.last_event = first_line + int(ev[0]), first_line + int(ev[-1])
    if out.stray is not None and out.stray[0] < out.last_event:
        out.bad = (out.stray[0], f"not a blkparse event line (blkparse's summary comes after the last event): "
                                 f"{out.stray[1][:100]!r}")
        return out
    short = ev[n[ev] < 7]
    if len(short):
        return bad(int(short[0]))
    act = tok(5, ev)
    for action in ("D", "Q"):
        r = ev[pc.equal(act, action).to_numpy(zero_copy_only=False)]
        if not len(r):
            continue
        head = [_ints(tok(k, r)) for k in (1, 2, 4)]
        secs = tok(3, r)
        when = _ints(secs, pa.float64())
        if any(h is None or (h < 0).any() for h in head) or when is None or not (np.isfinite(when) & (when >= 0)).all() \
                or not pc.all(pc.match_substring(secs, ".")).as_py():
            return first_bad(r)
        rwbs = tok(6, r)
        kinds = pc.unique(rwbs).to_pylist()  # a few dozen distinct at most
        parsed = [_rwbs(k) for k in kinds]
        if None in parsed:
            return bad(int(r[np.flatnonzero(pc.equal(rwbs, kinds[parsed.index(None)]).to_numpy(
                zero_copy_only=False))[0]]))
        idx = pc.index_in(rwbs, value_set=pa.array(kinds)).to_numpy()
        op = np.array([255 if p[0] is None else p[0] for p in parsed], np.uint8)[idx]
        pre = np.array([p[1] for p in parsed], bool)[idx]
        fua = np.array([p[2] for p in parsed], bool)[idx]
        t7, t8 = tok(7, r), tok(8, r)
        ranged = (n[r] >= 10) & pc.equal(t8, "+").to_numpy(zero_copy_only=False)
        named = pc.starts_with(t7, "[").to_numpy(zero_copy_only=False)
        nodata = op == 255
        lba = np.zeros(len(r), np.int64)
        sectors = np.zeros(len(r), np.int64)
        passthrough = np.zeros(len(r), bool)
        ok = named & (nodata | pre)
        if ranged.any():
            rr = np.flatnonzero(ranged)
            start, count = _ints(t7.take(pa.array(rr))), _ints(tok(9, r[rr]))
            if start is None or count is None:
                return first_bad(r[rr])
            lba[rr], sectors[rr] = start, count
        if not ok.all():
            odd = ~ranged & ~named  # a passthrough request: "bytes (cdb) [process]"
            if odd.any():
                o = np.flatnonzero(odd)
                passthrough[o] = _decimal(t7.take(pa.array(o))) & (
                    (n[r[o]] == 8) | pc.match_substring_regex(t8.take(pa.array(o)), r"^[(\[]").to_numpy(
                        zero_copy_only=False))
        ok |= (ranged & ~nodata & (lba >= 0) & (sectors >= 1) & (lba + sectors <= capacity)) | passthrough
        if not ok.all():
            return bad(int(r[np.flatnonzero(~ok)[0]]))
        out.events[action] = {
            "line": first_line + r, "time": when, "device": tok(0, r), "lba": lba, "sectors": sectors,
            "op": np.where(ranged, op, F).astype(np.uint8), "pre": pre & ranged, "keep": ranged | (named & pre),
            "passthrough": passthrough, "nodata": named & nodata & ~pre, "fua": fua & ranged & (op == W)}
    return out


class _Events:
    """The D (or Q) events of a trace as its blocks go by: the commands they give, what was
    skipped, and the first problem that only matters if these are the events replayed (time
    going back, a second device)."""

    def __init__(self, action: str):
        self.action = action
        self.blocks: list[tuple[np.ndarray, ...]] = []
        self.counts = {"passthrough": 0, "nodata": 0, "fua": 0, "pre": 0}
        self.device: str | None = None
        self.first_time = self.last_time = None
        self.last_line = 0
        self.problem: tuple[int, str] | None = None

    def add(self, e: dict) -> None:
        lines, times, devices = e["line"], e["time"], e["device"]
        if self.problem is None:
            if self.device is None:
                self.device, self.first_time = devices[0].as_py(), float(times[0])
            odd = np.flatnonzero(~pc.equal(devices, self.device).to_numpy(zero_copy_only=False))
            prev = np.concatenate([[self.last_time if self.last_time is not None else times[0]], times[:-1]])
            back = np.flatnonzero(times < prev)
            if len(back) and (not len(odd) or back[0] < odd[0]):
                i = int(back[0])
                before = int(lines[i - 1]) if i else self.last_line
                self.problem = (int(lines[i]), f"time {times[i]:.9f} goes back (the {self.action} event before it, "
                                               f"line {before}, was at {prev[i]:.9f}): a trace is in time order")
            elif len(odd):
                i = int(odd[0])
                self.problem = (int(lines[i]), f"an event of device {devices[i].as_py()} in a trace of {self.device}: "
                                               f"a replay is of one device (blkparse -i sda, for /dev/sda's files)")
        self.last_time, self.last_line = float(times[-1]), int(lines[-1])
        for k in ("passthrough", "nodata", "fua"):
            self.counts[k] += int(e[k].sum())
        keep = e["keep"]
        self.counts["pre"] += int(e["pre"][keep].sum())
        self.blocks.append((e["lba"][keep], e["sectors"][keep], e["op"][keep], e["pre"][keep]))


THREADS = min(2, os.cpu_count() or 1)  # blocks split at once (pyarrow and numpy let go of the GIL)


def _blkparse(path: Path, capacity: int) -> Trace:
    src = str(path)
    events = {"D": _Events("D"), "Q": _Events("Q")}
    stray: tuple[int, str] | None = None  # the first line that is neither an event nor blank
    with ThreadPoolExecutor(THREADS) as pool:
        pending: deque = deque()
        blocks = _blocks(path)
        while True:
            while len(pending) < THREADS + 1:  # a block or two ahead, never the whole file in memory
                nxt = next(blocks, None)
                if nxt is None:
                    break
                pending.append(pool.submit(_block, *nxt, capacity))
            if not pending:
                break
            b = pending.popleft().result()
            if stray is not None and b.first_event:
                raise PlanError(src, stray[0], f"not a blkparse event line (blkparse's summary comes after the last "
                                               f"event): {stray[1][:100]!r}")
            if b.bad:
                raise PlanError(src, *b.bad)
            stray = stray or b.stray
            for action, e in b.events.items():
                events[action].add(e)
    chosen = events["D"] if events["D"].blocks else events["Q"]
    if not chosen.blocks:
        if stray is not None:
            raise PlanError(src, stray[0], f"not a blkparse event line: {stray[1][:100]!r} (and the file holds no "
                                           f"D or Q events)")
        raise PlanError(src, None, "the trace has no commands (no D or Q events)")
    if chosen.problem:
        raise PlanError(src, *chosen.problem)
    notes = [f"{chosen.action} events: " + ("requests as issued to the driver (after the block layer merged and split "
                                            "them)" if chosen.action == "D" else
                                            "requests as queued (the trace has no D events)")]
    for key, what in (("passthrough", "passthrough (SCSI/ATA pass-through) requests skipped, no command to replay"),
                      ("nodata", "requests without data that flush nothing skipped"),
                      ("fua", "FUA writes replayed as plain writes (a trace entry has no FUA)"),
                      ("pre", "preflush requests replayed as a FLUSH, then the request")):
        if chosen.counts[key]:
            notes.append(f"{what}: {chosen.counts[key]:,}")
    lba, sectors, op, pre = (np.concatenate([b[k] for b in chosen.blocks]) for k in range(4))
    if not len(op):
        raise PlanError(src, None, f"the trace has no commands (its {chosen.action} events move no data and flush "
                                   f"nothing)")
    lba, sectors, op = _with_preflush(lba, sectors, op, pre)
    entries = _split(lba, sectors, op, notes, "requests")
    return Trace(entries, "blkparse", chosen.last_time - chosen.first_time, notes)


# --- the formats together ----------------------------------------------------------------

def detect(path: Path) -> str:
    """The format of a trace, from its first line that is not blank or a # comment."""
    for n, line in _lines(Path(path)):
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
