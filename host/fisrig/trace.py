"""Traces to replay: one command per line, `op,lba,sectors`, op R (read), W (write),
T (TRIM) or F (FLUSH, sectors ignored); blank lines and # comments are skipped. Every
line is checked against the drive before anything runs."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import program_format as pf
from .plan import PlanError


def load(path: Path, capacity: int) -> np.ndarray:
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
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
            entries.append((lba, sectors, op))
    if not entries:
        raise PlanError(str(path), None, "the trace has no commands")
    out = np.zeros(len(entries), dtype=pf.TRACE_ENTRY)
    arr = np.array(entries, dtype=np.uint64)
    out["lba"], out["sectors"], out["op"] = arr[:, 0], arr[:, 1], arr[:, 2]
    return out
