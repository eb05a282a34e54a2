"""The blkparse trace format (docs/traces.md): blkparse's default text output of a
blktrace, a command per request at its D event (or Q without D events); split by pyarrow's
whitespace splitter in 64 MB blocks, two at a time."""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fisrig.plan import PlanError

from fisrig.traces.entries import BOM, F, R, T, Trace, W, past_end, split, with_preflush


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
            return past_end(lba, n, capacity)
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
            if first_line == 1 and not rest:  # the file's first bytes: a byte-order mark is not text
                chunk = chunk.removeprefix(BOM)
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
    lba, sectors, op = with_preflush(lba, sectors, op, pre)
    entries = split(lba, sectors, op, notes, "requests")
    return Trace(entries, "blkparse", chosen.last_time - chosen.first_time, notes)

