"""Traces to replay: one command per line, `op,lba,sectors`, op R (read), W (write),
T (TRIM) or F (FLUSH, sectors ignored); blank lines and # comments are skipped. Every
line is checked against the drive before anything runs.

A trace without comments is read by pyarrow's CSV reader (tens of millions of lines in
seconds); when anything is wrong, the careful line-by-line reader names the line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from . import program_format as pf
from .plan import PlanError


def _entries(lba: np.ndarray, sectors: np.ndarray, op: np.ndarray) -> np.ndarray:
    out = np.zeros(len(op), dtype=pf.TRACE_ENTRY)
    out["lba"], out["sectors"], out["op"] = lba, sectors, op
    return out


def _fast(path: Path, capacity: int) -> np.ndarray | None:
    """The whole trace in one go, or None when it needs the careful reader."""
    with open(path, "rb") as f:
        if b"#" in f.read(1 << 16):
            return None
    try:
        t = pcsv.read_csv(path, read_options=pcsv.ReadOptions(column_names=["op", "lba", "sectors"]),
                          convert_options=pcsv.ConvertOptions(
                              column_types={"op": pa.string(), "lba": pa.int64(), "sectors": pa.int64()}))
    except pa.ArrowException:
        return None
    if any(t.column(c).null_count for c in t.column_names):
        return None
    op_text = pc.utf8_upper(pc.utf8_trim_whitespace(t.column("op"))).to_numpy(zero_copy_only=False)
    op = np.full(len(op_text), 255, dtype=np.uint8)
    for name, code in pf.TRACE_OPS.items():
        op[op_text == name] = code
    lba, sectors = t.column("lba").to_numpy(), t.column("sectors").to_numpy()
    data = op != pf.TRACE_OPS["F"]
    bad = (op == 255) | (lba < 0) | (lba >= capacity) | \
        (data & ((sectors < 1) | (sectors > 65536) | (lba + sectors > capacity)))
    if not len(op) or bad.any():
        return None
    return _entries(lba, np.where(data, sectors, 0), op)


_CHUNK = 1 << 20  # rows gathered per numpy block: a 37-million-line trace never becomes 37 M tuples


def _careful(path: Path, capacity: int) -> np.ndarray:
    blocks: list[np.ndarray] = []
    rows: list[tuple[int, int, int]] = []
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
            rows.append((lba, sectors, op))
            if len(rows) == _CHUNK:
                blocks.append(np.array(rows, dtype=np.uint64))
                rows = []
    if rows:
        blocks.append(np.array(rows, dtype=np.uint64))
    if not blocks:
        raise PlanError(str(path), None, "the trace has no commands")
    arr = np.concatenate(blocks)
    return _entries(arr[:, 0], arr[:, 1], arr[:, 2])


def load(path: Path, capacity: int) -> np.ndarray:
    """The trace's entries; PlanError naming the line of the first bad one (or a file that
    is not a text trace at all)."""
    path = Path(path)
    if not path.is_file():
        raise PlanError(str(path), None, "no such trace file" + (" (a directory)" if path.is_dir() else ""))
    fast = _fast(Path(path), capacity)
    return fast if fast is not None else _careful(Path(path), capacity)
