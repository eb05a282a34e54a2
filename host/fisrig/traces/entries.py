"""What every trace reader shares (traces/'s ops reader, traces/csv_trace.py, traces/blkparse.py):
the entries the VM replays, a trace as read, and the checks and splits each reader makes."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from fisrig import program_format as pf
from fisrig.plan import PlanError

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


def make_entries(lba: np.ndarray, sectors: np.ndarray, op: np.ndarray) -> np.ndarray:
    out = np.zeros(len(op), dtype=pf.TRACE_ENTRY)
    out["lba"], out["sectors"], out["op"] = lba, sectors, op
    return out


# --- what csv and blkparse share ---------------------------------------------------------

# UTF-8's byte-order mark: what Windows tools (Excel's "CSV UTF-8", Notepad) put before a
# text file's first line. Every trace reader skips it (the first line read as "utf-8-sig";
# pyarrow's CSV reader skips it itself), where it was refused as part of the first line.
BOM = b"\xef\xbb\xbf"


def lines(path: Path):
    """(line number, text) of a text file, a byte-order mark before its first line left out;
    PlanError at the first line that is not text."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if b"\0" in raw:
                raise PlanError(str(path), n, "not a text file (a NUL byte)")
            try:
                yield n, raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError:
                raise PlanError(str(path), n, "not a text file (a byte that is not UTF-8)") from None


def past_end(lba: int, sectors: int, capacity: int) -> str:
    return f"LBAs {lba}..{lba + sectors - 1} run past the drive's last LBA {capacity - 1}"


def split(lba: np.ndarray, sectors: np.ndarray, op: np.ndarray, notes: list[str], what: str) -> np.ndarray:
    """Entries, a command of more than 65,536 sectors (a big discard, most often: Linux sends
    SATA SSDs discards of up to 4 M sectors) as consecutive entries of at most 65,536."""
    pieces = np.maximum((sectors + MAX_SECTORS - 1) // MAX_SECTORS, 1)
    if (pieces == 1).all():
        return make_entries(lba, sectors, op)
    notes.append(f"{what} over {MAX_SECTORS:,} sectors sent as consecutive commands of at most {MAX_SECTORS:,}: "
                 f"{int((pieces > 1).sum()):,}")
    which = np.repeat(np.arange(len(op)), pieces)
    first = np.cumsum(pieces) - pieces
    k = np.arange(len(which)) - first[which]  # the piece's number within its command
    start = lba[which] + k * MAX_SECTORS
    return make_entries(start, np.minimum(sectors[which] - k * MAX_SECTORS, MAX_SECTORS), op[which])


def with_preflush(lba, sectors, op, preflush) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


# An op column read dictionary-encoded: a few distinct words, each mapped once, where 37 M
# strings turned into Python objects took 8 s of a 12 s read (measured; now about 4 s).
OP_COLUMN = pa.dictionary(pa.int32(), pa.string())


def op_codes(column: pa.ChunkedArray, words: dict[str, int]) -> np.ndarray:
    """The op code of each row of a dictionary-encoded op column (255: not one of `words`,
    matched trimmed and in any case)."""
    parts = [np.zeros(0, np.uint8)]
    for chunk in column.chunks:
        known = np.array([words.get(v.strip().upper(), 255) for v in chunk.dictionary.to_pylist()] or [255], np.uint8)
        parts.append(known[chunk.indices.to_numpy()])
    return np.concatenate(parts)


CHUNK = 1 << 20  # rows gathered per numpy block: a 37-million-line trace never becomes 37 M tuples


class Rows:
    """Rows of whole numbers read line by line, kept as numpy blocks of CHUNK rows."""

    def __init__(self, dtype):
        self.dtype, self.blocks, self.rows = dtype, [], []

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) == CHUNK:
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
