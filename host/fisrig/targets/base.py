"""What every target is: it takes a compiled program and the sinks of its records, runs it,
and says how it went (RunOutcome); it knows its drive's IDENTIFY data."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from fisrig import program_format as pf


@dataclass
class RunOutcome:
    status: str           # the VM's status: done, expect_failed, ...
    records: int
    commands: int
    errors: int
    sim_ns: int
    wall_s: float
    error: str
    error_offset: int
    # What the target says about how the run went that the records cannot: where the rig
    # could not run the plan as it was asked (printed after the run, kept in run.json).
    notes: list[str] = field(default_factory=list)


@dataclass
class RunSinks:
    """Where a run's records go as the target takes them, and what else the run asks of it."""
    progress: object = None  # fisrig.progress.Progress: fed the records, prints progress lines
    records: object = None   # fisrig.records.store.ParquetStream: records.parquet made as the run runs
    data_in: Path | None = None  # where the bytes data-in commands return go (a target that captures_data_in)
    read_back: bool = False  # the program reads written data back into RAM (a power_loss step's verify)
    records_expected: int = 0  # the most records the run makes (its estimate's records_max; 0: not known)
    capture: Path | None = None  # where the analyzer's capture windows go (capture.bin), when the program arms one


class Target:
    """A place a program runs, with the drive of `profile` (and `faults`, where it is simulated)."""

    name = ""
    # The bytes data-in commands return can be kept (RunSinks.data_in): what `raw` shows.
    captures_data_in = False
    # What the program's commands go over: "sata", or "nvme" (the model target's NVMe engine).
    protocol = "sata"

    def __init__(self, profile: str, faults: list[str] | None = None):
        self.profile, self.faults, self.link_gen = profile, list(faults or []), 3

    def identify(self) -> list[int]:
        """The drive's IDENTIFY words, from the drive with this profile and these faults (so the
        drive checks both first: drive_catalog.DriveRefused with its message when it says no)."""
        from fisrig.targets.drive_catalog import ask
        args = ["identify", "--profile", self.profile]
        for f in self.faults:
            args += ["--fault", f]
        out = ask(*args)
        words = [int(w, 16) for w in out.split()]
        if len(words) != 256:
            raise RuntimeError("fisrig-drive identify did not print 256 words")
        return words

    def run(self, program: Path, records: Path, sinks: RunSinks, quiet: bool = False) -> RunOutcome:
        """Runs `program`, its records into `records` (records.bin) and the sinks."""
        raise NotImplementedError

    @contextlib.contextmanager
    def records_file(self, records: Path, sinks: RunSinks):
        """records.bin for a target whose records come to the host one by one (rtl, board):
        yields keep(raw), which appends them, flushed (a run stopped half-way keeps every
        record it took), and hands them to the sinks' progress and records."""
        progress, store = sinks.progress, sinks.records
        with open(records, "wb") as out:
            out.write(pf.RECORDS_HEADER.pack(pf.RECORDS_MAGIC, pf.RECORDS_VERSION, pf.RECORD_DTYPE.itemsize, 0))

            def keep(raw: bytes) -> None:
                out.write(raw)
                out.flush()
                if progress:
                    progress.take(raw)
                if store:
                    store.take(raw)
            try:
                yield keep
            finally:
                if progress:
                    progress.stop()
        if progress:
            progress.finish()
