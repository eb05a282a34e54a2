"""Progress lines on stderr while a run runs, from its records as the target takes them.

Each line says the phase (the marker label the records carry), its commands, and its
percent and time left where the phase's stop is known before it runs (commands, bytes, a
sweep, a fill, TRIM: the compiler's per-instruction Cost, fisrig.estimate); then the run's
commands, simulated time and command rate, and the run's percent and time left when no
step is stopped by time. A phase stopped by time gives its percent by simulated time. A size mix stopped
by bytes is counted by its expected commands, so its percent is near, not exact (it is
never shown over 99% before the phase ends). Time left is the work left at the rate so
far: "about".

Only when asked (wanted()): not --quiet, and stderr a terminal or FISRIG_PROGRESS=1
(FISRIG_PROGRESS=0: never). On a terminal the line is redrawn in place; elsewhere it is one
line every FISRIG_PROGRESS_S seconds (default 2). At the end, one line: the commands, the
simulated time and the wall time they took.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fisrig import program_format as pf

EVERY_S = 2.0  # wall seconds between lines unless FISRIG_PROGRESS_S says
_COMMAND = pf.RECORD_KINDS.index("command")


def wanted(quiet: bool, stream=None, env=None) -> bool:
    stream = stream or sys.stderr
    env = os.environ if env is None else env
    asked = env.get("FISRIG_PROGRESS")
    return not quiet and asked != "0" and (asked == "1" or stream.isatty())


def every_s(env=None) -> float:
    """FISRIG_PROGRESS_S, a number of seconds (0: a line for every batch of records), else
    EVERY_S; anything else is refused by name."""
    from fisrig.errors import InputError
    text = (os.environ if env is None else env).get("FISRIG_PROGRESS_S")
    if text is None:
        return EVERY_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise InputError(f"FISRIG_PROGRESS_S={text}", "must be a number of seconds, 0 or more")
    return value


@dataclass
class Goal:
    """What one phase (marker) will do, as far as it is known before it runs."""
    commands: float = 0    # its counted steps' commands (exact, or expected for a size mix)
    timed_ticks: int = 0   # its steps stopped by time
    counted: bool = False  # it has a step with a known count

    @property
    def known(self) -> str | None:
        """How its percent is measured: "commands", "time", or None (a mix of both)."""
        if self.counted and not self.timed_ticks:
            return "commands"
        return "time" if self.timed_ticks and not self.counted else None


def goals(compiled) -> dict[int, Goal]:
    """Each marker's Goal, from the compiler's costs and the marker of each."""
    out: dict[int, Goal] = {}
    for cost, marker in zip(compiled.costs, compiled.cost_markers):
        g = out.setdefault(marker, Goal())
        if cost.timed_ticks:
            g.timed_ticks += cost.timed_ticks
        elif cost.commands:
            g.commands += cost.commands
            g.counted = True
    return out


def _duration(s: float) -> str:
    if s >= 5400:
        return f"{s / 3600:.1f} h"
    if s >= 90:
        return f"{s / 60:.1f} min"
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


class Progress:
    """Takes records (bytes of struct fisrig_run_record, whole ones) and prints a line at
    most every `every_s` wall seconds, and one at finish(). Rates are measured from the
    first batch of records on, so a SoC build or boot before them is not taken for
    slowness: a phase's from the batch before its first record (or the first batch), the
    run's from the first batch."""

    def __init__(self, markers: dict[int, str], phase_goals: dict[int, Goal], stream=None,
                 every_s: float = EVERY_S, clock=time.monotonic):
        self.markers, self.goals = markers, phase_goals
        self.stream = stream or sys.stderr
        self.every_s, self.clock = every_s, clock
        self.redraw = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = self.last = clock()
        self.done: dict[int, int] = {}   # commands per marker
        self.commands = 0
        self.ticks = 0                   # the latest record's status time
        self.origin: tuple[float, int] | None = None  # (wall, commands) at the first batch
        self.taken_at = self.start       # the wall time of the last batch taken
        self.marker = 0                  # the last record's
        self.phase_ticks = 0             # the simulated time the current phase began at
        # where the current phase's rates are measured from: wall time, its commands, ticks
        self.phase_base = (self.start, 0, 0)
        self.lines = 0

    def note(self, text: str) -> None:
        """A line of its own (the SoC build, say)."""
        self._end_redraw()
        print(f"fisrig: {text}", file=self.stream, flush=True)

    def take(self, raw: bytes) -> None:
        if not raw:
            return
        now = self.clock()
        recs = np.frombuffer(raw, pf.RECORD_DTYPE, len(raw) // pf.RECORD_DTYPE.itemsize)
        commands = recs[recs["kind"] == _COMMAND]
        if len(commands):
            ids, counts = np.unique(commands["marker"], return_counts=True)
            for m, n in zip(ids.tolist(), counts.tolist()):
                self.done[m] = self.done.get(m, 0) + n
            self.commands += len(commands)
        self.ticks = max(self.ticks, int(recs["ts_status"].max()))
        first = self.origin is None
        marker = recs["marker"]
        changes = np.flatnonzero(marker != np.concatenate(([self.marker], marker[:-1])))
        if len(changes):  # a new phase: where it began in simulated time
            i = changes[-1]
            self.marker, self.phase_ticks = int(marker[i]), int(recs["ts_submit"][i])
            # it began after the last batch, which did not have it yet; in the first batch,
            # rates start from the batch itself
            self.phase_base = ((now, self.done.get(self.marker, 0), self.ticks) if first
                               else (self.taken_at, 0, self.phase_ticks))
        if first:
            self.origin = (now, self.commands)
        self.taken_at = now
        if now - self.last >= self.every_s:
            self.show()

    def show(self) -> None:
        self.last = self.clock()
        end = "\r\033[K" if self.redraw else ""
        print(f"{end}fisrig: {self.line()}", file=self.stream, end="" if self.redraw else "\n", flush=True)
        self.lines += 1

    def finish(self) -> None:
        """The last line: what the run did, in what wall time."""
        self._end_redraw()
        rate = self._run_rate()
        print(f"fisrig: {self.commands:,} commands, {self.ticks / pf.TICK_HZ:.3f} s simulated, in "
              f"{self.clock() - self.start:.1f} s of wall time" + (f" ({rate:,.0f} commands/s)" if rate else ""),
              file=self.stream, flush=True)

    def stop(self) -> None:
        """The run stopped early (an exception on its way up): the redrawn line is ended."""
        self._end_redraw()

    def _end_redraw(self) -> None:
        if self.redraw and self.lines:
            print(file=self.stream, flush=True)
            self.lines = 0

    def _run_rate(self) -> float | None:
        """Commands a wall second since the first batch; None before a second batch."""
        if self.origin is None:
            return None
        wall, n = self.origin
        return (self.commands - n) / (self.clock() - wall) if self.clock() > wall and self.commands > n else None

    def line(self) -> str:
        """`fill: 12,345 of 65,536 commands (18%), about 12 s left | run 13,002 commands,
        0.532 s simulated, 41,200 commands/s`, and the run's percent and time left when
        every phase is counted."""
        now = self.clock()
        label = self.markers.get(self.marker, "starting" if not self.marker else f"marker {self.marker}")
        goal = self.goals.get(self.marker, Goal())
        done = self.done.get(self.marker, 0)
        since, base_done, base_ticks = self.phase_base
        secs = now - since
        phase = f"{label}: {done:,} commands"
        if goal.known == "commands" and goal.commands:
            phase = f"{label}: {done:,} of {round(goal.commands):,} commands ({_capped(done / goal.commands):.0%})"
            if secs > 0 and goal.commands > done > base_done:
                phase += f", about {_duration((goal.commands - done) * secs / (done - base_done))} left"
        elif goal.known == "time":
            end = self.phase_ticks + goal.timed_ticks
            phase += f", {_capped((self.ticks - self.phase_ticks) / goal.timed_ticks):.0%} of its " \
                     f"{_duration(goal.timed_ticks / pf.TICK_HZ)} simulated"
            if secs > 0 and end > self.ticks > base_ticks:
                phase += f", about {_duration((end - self.ticks) * secs / (self.ticks - base_ticks))} left"
        run = f"run {self.commands:,} commands, {self.ticks / pf.TICK_HZ:.3f} s simulated"
        rate = self._run_rate()
        if rate:
            run += f", {rate:,.0f} commands/s"
        total = sum(g.commands for g in self.goals.values())
        if total and not any(g.timed_ticks for g in self.goals.values()):  # no step stopped by time
            run += f", {_capped(self.commands / total):.0%}"
            if rate and total > self.commands:
                run += f", about {_duration((total - self.commands) / rate)} left"
        return f"{phase} | {run}"


def _capped(frac: float) -> float:
    """An expected count can be passed before the phase ends: never 100% until it has."""
    return min(max(frac, 0.0), 0.99)


class RecordsFollower:
    """The whole records a records file (records.bin) has gained since the last call,
    while its writer is still writing it."""

    def __init__(self, path: Path):
        self.path, self.offset = Path(path), pf.RECORDS_HEADER.size

    def new(self) -> bytes:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return b""
        n = (size - self.offset) // pf.RECORD_DTYPE.itemsize * pf.RECORD_DTYPE.itemsize
        if n <= 0:
            return b""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            raw = f.read(n)
        raw = raw[:len(raw) - len(raw) % pf.RECORD_DTYPE.itemsize]
        self.offset += len(raw)
        return raw
