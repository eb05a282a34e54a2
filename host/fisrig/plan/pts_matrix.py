"""The SNIA SSS PTS IOPS matrix a `pts_iops` step runs each round: its block sizes and R/W
mixes, the order a round runs them in, each cell's phase label, and the step's defaults.
The plan's language defines it, so the compiler (compile/traces.py), the plan's phase
goals (analysis/phase_stats.py) and the analysis of a run (analysis/pts.py) take it from here."""
from __future__ import annotations

BLOCK_SIZES_KIB = [1024, 128, 64, 32, 16, 8, 4, 0.5]
READ_PCTS = [100, 95, 65, 50, 35, 5, 0]
DEFAULTS = {"max_rounds": 25, "window": 5, "range_pct": 20, "slope_pct": 10, "track_kib": 4,
            "track_read_pct": 0, "seconds_per_cell": 60}
# The PTS's own cell: a minute of each workload (SNIA SSS PTS 2.0.2).
SPEC_SECONDS_PER_CELL = 60


def cells(args: dict) -> list[tuple[float, int]]:
    """The matrix in the order a round runs it: each R/W mix (percent read), then each block
    size (KiB), largest first, as the PTS orders them."""
    sizes = args.get("block_sizes_kib", BLOCK_SIZES_KIB)
    return [(k, r) for r in args.get("read_pcts", READ_PCTS) for k in sorted(sizes, reverse=True)]


def cell_label(base: str, kib: float, read_pct: int) -> str:
    return f"{base} {kib:g} KiB {read_pct}/{100 - read_pct}"
