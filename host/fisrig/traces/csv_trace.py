"""The csv trace format (docs/traces.md): a header `time,op,lba,length` (or `bytes`), then a
command a line; read by pyarrow's CSV reader, and line by line when something is wrong, to
name the line."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from fisrig.plan import PlanError

from fisrig.traces.entries import OP_COLUMN, SECTOR, F, R, Rows, T, Trace, W, lines, op_codes, past_end, split


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
        return past_end(lba_i, length_i, capacity)
    return t, code, lba_i, length_i


def _csv(path: Path, capacity: int) -> Trace:
    """pyarrow's reader from the header on, every row checked at once; on any problem the
    file is read again line by line to name the first bad line."""
    head, offset = None, 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            text = raw.decode("utf-8-sig" if n == 1 else "utf-8", "replace").split("#", 1)[0].strip()
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
                                         OP_COLUMN if name.lower() == "op" else pa.int64()) for name in names}))
            ok = t.num_rows > 0 and not any(t.column(c).null_count for c in t.column_names)
        except (pa.ArrowException, UnicodeDecodeError):
            ok = False
    order = {n.lower(): i for i, n in enumerate(names)}
    if ok:
        col = {n.lower(): t.column(n) for n in names}
        op = op_codes(col["op"], _OP_WORDS)
        times = col["time"].to_numpy()
        lba, length = col["lba"].to_numpy(), col[unit].to_numpy()
        if not (op == 255).any() and np.isfinite(times).all() and not (np.diff(times) < 0).any():
            data = op != F
            if unit == "bytes":
                ok = not (data & (length % SECTOR != 0)).any()
                length = length // SECTOR
            if ok and not (data & ((lba < 0) | (length < 1) | (lba + length > capacity))).any():
                notes: list[str] = []
                entries = split(np.where(data, lba, 0), np.where(data, length, 0), op, notes, "commands")
                return Trace(entries, "csv", float(times[-1] - times[0]), notes)
    rows = Rows(np.int64)
    last, first = -math.inf, None
    for n, line in lines(path):
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
    entries = split(arr[:, 1], arr[:, 2], arr[:, 0].astype(np.uint8), notes, "commands")
    return Trace(entries, "csv", last - first, notes)

