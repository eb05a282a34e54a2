"""What a run will cost, from its compiled program, before it starts: commands, records, disk
and simulated time; and the refusal of a run the disk would not hold.

The compiler notes one Cost per instruction it emits. Counted steps (commands, bytes, a
sweep, a fill, a trace, TRIM ranges) give their commands exactly, or as an expected value
for a weighted size mix stopped by bytes. A step stopped by time has no count until it has
run: it is bounded by the link, as if the drive took every command as fast as the SATA link
could carry it (600 MB/s at Gen3), so its figure is an upper bound and is printed as one.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from fisrig import program_format as pf
from fisrig.errors import InputError

LINK_BYTES_PER_S = 600e6  # SATA Gen3 payload: 6 Gb/s, 8b/10b
# The least FIS traffic one command needs (Register H2D and a status FIS, with SOF, CRC
# and EOF): the smaller this is, the higher (and safer) the bound on a timed step.
MIN_FIS_BYTES_PER_CMD = 64
# records.parquet against records.bin: smoke-tiny's 48,462 records take 468,060 bytes of
# Parquet (zstd, stamps and LBAs delta-coded: results.DELTA_COLUMNS), 9.7 bytes a record
# (0.09 of the 104-byte raw record); allow 0.15. The disk a run needs is at its peak when
# both are there, before records.bin goes.
PARQUET_PER_RAW = 0.15
PLOTS_AND_JSON = 1 << 20
EVENT_SLACK = 4  # records the engine adds of its own per power or link step (edges, link up)


@dataclass
class Cost:
    """One instruction's share: `commands` exact (or expected), or timed for `ticks`."""
    commands: float = 0
    extra_records: int = 0
    data_bytes: float = 0     # moved by the counted commands
    timed_ticks: int = 0      # a workload stopped by time: commands unknown until it runs
    bytes_per_cmd: float = 0  # its mean wire bytes a command (for the link bound)
    idle_ticks: int = 0
    sample_period_ticks: int = 0  # the current sampler runs through it, every so many ticks


@dataclass
class Estimate:
    commands: int             # counted steps (exact, or expected for a size mix)
    timed_commands_max: int   # timed steps, at most (the link bound)
    records: int
    records_max: int
    disk_bytes: int
    disk_bytes_max: int
    sim_s_min: float          # idle + timed + the counted steps' data at link speed

    def line(self) -> str:
        timed = (f" + at most {self.timed_commands_max:,} in timed steps (at the link's speed)"
                 if self.timed_commands_max else "")
        disk = size_text(self.disk_bytes) + (f" (at most {size_text(self.disk_bytes_max)})"
                                             if self.timed_commands_max else "")
        return (f"estimate: {self.commands:,} commands{timed}, {self.records:,} records, "
                f"disk {disk}, simulated time at least {_duration(self.sim_s_min)}")


def size_text(n: int) -> str:
    """Bytes as GB, or MB under 10 MB (estimates, and run's memory check)."""
    return f"{n / 1e9:.2f} GB" if n >= 1e7 else f"{n / 1e6:.1f} MB"


def _duration(s: float) -> str:
    if s >= 5400:
        return f"{s / 3600:.1f} h"
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.1f} s"


def workload_cost(*, sizes: list[tuple[int, int]], read_pct: int, trim_pct: int, flush_pct: int,
                  stop_commands: int, stop_bytes: int, stop_ticks: int) -> Cost:
    weight = sum(w for _, w in sizes)
    mean_sectors = sum(s * w for s, w in sizes) / weight
    moving = (100 - trim_pct - flush_pct) / 100  # reads and writes; TRIM and FLUSH move no data
    data_per_cmd = mean_sectors * 512 * moving
    wire = data_per_cmd + trim_pct / 100 * 512 + MIN_FIS_BYTES_PER_CMD
    if stop_commands:
        return Cost(commands=stop_commands, data_bytes=stop_commands * data_per_cmd)
    if stop_bytes:  # the VM counts read and write bytes at issue and stops at stop_bytes
        n = -(-stop_bytes // int(mean_sectors * 512)) if moving == 1 and len(sizes) == 1 \
            else stop_bytes / data_per_cmd
        return Cost(commands=n, data_bytes=stop_bytes)
    return Cost(timed_ticks=stop_ticks, bytes_per_cmd=wire)


def of(costs: list[Cost], program_bytes: int) -> Estimate:
    counted = sum(c.commands for c in costs)
    timed = sum(c.timed_ticks / pf.TICK_HZ * LINK_BYTES_PER_S / c.bytes_per_cmd
                for c in costs if c.timed_ticks)
    extra = sum(c.extra_records for c in costs) + 1  # the END record
    # The current sampler's records, 30 samples each, over the steps' least simulated time.
    extra += round(sum((c.timed_ticks + c.idle_ticks + c.data_bytes / LINK_BYTES_PER_S * pf.TICK_HZ)
                       / (pf.CURRENT_SAMPLES * c.sample_period_ticks) for c in costs if c.sample_period_ticks))
    records, records_max = round(counted) + extra, round(counted + timed) + extra

    def disk(n: int) -> int:
        raw = pf.RECORDS_HEADER.size + n * pf.RECORD_DTYPE.itemsize
        return int(raw * (1 + PARQUET_PER_RAW)) + program_bytes + PLOTS_AND_JSON
    sim_s = sum(c.timed_ticks + c.idle_ticks for c in costs) / pf.TICK_HZ + \
        sum(c.data_bytes for c in costs) / LINK_BYTES_PER_S
    return Estimate(commands=round(counted), timed_commands_max=round(timed), records=records,
                    records_max=records_max, disk_bytes=disk(records), disk_bytes_max=disk(records_max),
                    sim_s_min=sim_s)


def free_bytes(out: Path) -> tuple[Path, int]:
    """Free space where `out` will be: its nearest existing ancestor's file system."""
    at = Path(out).absolute()
    while not at.exists() and at != at.parent:
        at = at.parent
    return at, shutil.disk_usage(at).free


def check_disk(est: Estimate, out: Path, force: bool) -> str | None:
    """InputError when the run's counted part alone would not fit. A timed step's bound
    assumes a drive that keeps up with the link (about 10x what the torture plan's drive
    does), so a run that fits without it but not with it is not refused: the returned
    warning says so, and the user decides."""
    at, free = free_bytes(out)
    if force or est.disk_bytes_max <= free:
        return None
    if est.disk_bytes <= free:
        return (f"warning: the run may need up to {est.disk_bytes_max / 1e9:.2f} GB (its timed steps counted as "
                f"if the drive kept up with the link; {est.disk_bytes / 1e9:.2f} GB without them) and {at} "
                f"has {free / 1e9:.2f} GB free")
    raise InputError(f"--out {out}", f"the run needs about {est.disk_bytes / 1e9:.2f} GB without its timed steps "
                                     f"and {at} has {free / 1e9:.2f} GB free; add --force to run it anyway")
