"""Progress lines: the phase, its commands and percent and time left where its stop is
known, the run's commands, simulated time and rate; only when asked for."""
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fisrig import plan as plan_mod
from fisrig import program_format as pf
from fisrig import progress
from fisrig.compile import compile_plan
from fisrig.errors import InputError

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def records(marker: int, n: int, first_tick: int, kind: str = "command") -> bytes:
    r = np.zeros(n, pf.RECORD_DTYPE)
    r["kind"], r["marker"] = pf.RECORD_KINDS.index(kind), marker
    r["ts_submit"] = first_tick + np.arange(n) * 1000
    r["ts_status"] = r["ts_submit"] + 500
    return r.tobytes()


def test_goals_come_from_each_phases_steps():
    plan = plan_mod.from_dict({"plan": {"name": "g"}, "step": [
        {"do": "workload", "label": "a", "commands": 300, "read_pct": 100},
        {"do": "workload", "commands": 200},  # no label: it goes on phase a
        {"do": "workload", "label": "b", "seconds": 2},
        {"do": "flush", "label": "c"}, {"do": "workload", "seconds": 1}]}, "<plan>")
    compiled = compile_plan(plan, 1 << 21)
    g = progress.goals(compiled)
    by_label = {compiled.markers[m]: goal for m, goal in g.items()}
    assert by_label["a"].commands == 500 and by_label["a"].known == "commands"
    assert by_label["b"].timed_ticks == 2 * pf.TICK_HZ and by_label["b"].known == "time"
    assert by_label["c"].known is None  # a counted FLUSH and a timed step: no percent


def test_a_line_says_phase_percent_rate_and_time_left():
    clock, out = Clock(), io.StringIO()
    goals = {1: progress.Goal(commands=1000, counted=True), 2: progress.Goal(timed_ticks=10 * pf.TICK_HZ)}
    p = progress.Progress({1: "fill", 2: "soak"}, goals, stream=out, every_s=2, clock=clock)
    clock.t += 1  # a second of boot before the first records: not counted in any rate
    p.take(records(1, 250, 0))
    assert out.getvalue() == ""  # under every_s since the last line
    clock.t += 1
    p.take(records(1, 0, 0) + records(1, 50, 250_000))
    line = out.getvalue().splitlines()[-1]
    # 50 commands in the second since the first batch: 700 more take 14 s; the run's percent
    # is not shown, as soak stops by time
    assert line == ("fisrig: fill: 300 of 1,000 commands (30%), about 14 s left | run 300 commands, "
                    "0.002 s simulated, 50 commands/s")
    clock.t += 2
    p.take(records(1, 700, 300_000) + records(2, 10, pf.TICK_HZ))
    clock.t += 3
    p.take(records(2, 10, pf.TICK_HZ + 2 * pf.TICK_HZ))
    # soak began after the batch at 102 s: 2 of its 10 simulated seconds in 5 s, 8 more in 20 s
    assert out.getvalue().splitlines()[-1] == (
        "fisrig: soak: 20 commands, 20% of its 10 s simulated, about 20 s left | run 1,020 commands, "
        "3.000 s simulated, 128 commands/s")
    p.finish()
    assert out.getvalue().splitlines()[-1] == \
        "fisrig: 1,020 commands, 3.000 s simulated, in 7.0 s of wall time (128 commands/s)"


def test_the_run_percent_when_no_step_stops_by_time_and_never_100_before_the_end():
    clock, out = Clock(), io.StringIO()
    goals = {1: progress.Goal(commands=100, counted=True), 2: progress.Goal(commands=100, counted=True)}
    p = progress.Progress({1: "a", 2: "b"}, goals, stream=out, every_s=0, clock=clock)
    clock.t += 10
    p.take(records(1, 100, 0) + records(2, 50, 10**6))
    assert out.getvalue().splitlines()[-1] == \
        "fisrig: b: 50 of 100 commands (50%) | run 150 commands, 0.007 s simulated, 75%"  # no rate yet
    clock.t += 10
    p.take(records(2, 10, 2 * 10**6))
    assert out.getvalue().splitlines()[-1].endswith(
        "b: 60 of 100 commands (60%), about 40 s left | run 160 commands, 0.013 s simulated, 1 commands/s, "
        "80%, about 40 s left".split("b: ", 1)[1])
    p.take(records(2, 60, 3 * 10**6))  # an expected count passed: 99%, not 120%, and no time left
    assert out.getvalue().splitlines()[-1].startswith("fisrig: b: 120 of 100 commands (99%) | run 220 commands")
    assert out.getvalue().splitlines()[-1].endswith(", 99%")


def test_only_when_asked():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    assert progress.wanted(False, Tty(), {}) and not progress.wanted(True, Tty(), {})
    assert not progress.wanted(False, io.StringIO(), {})
    assert progress.wanted(False, io.StringIO(), {"FISRIG_PROGRESS": "1"})
    assert not progress.wanted(False, Tty(), {"FISRIG_PROGRESS": "0"})
    assert progress.every_s({"FISRIG_PROGRESS_S": "0.5"}) == 0.5 and progress.every_s({}) == progress.EVERY_S
    for bad in ("-1", "soon", "inf", "nan"):
        with pytest.raises(InputError, match=f"FISRIG_PROGRESS_S={bad}: must be a number of seconds"):
            progress.every_s({"FISRIG_PROGRESS_S": bad})


def test_the_follower_takes_whole_records_as_they_are_written(tmp_path):
    f = tmp_path / "records.bin"
    follow = progress.RecordsFollower(f)
    assert follow.new() == b""  # not there yet
    one = records(1, 3, 0)
    f.write_bytes(pf.RECORDS_HEADER.pack(0, 0, 0, 0) + one[:200])
    assert follow.new() == one[:pf.RECORD_DTYPE.itemsize]  # the half-written second waits
    f.write_bytes(pf.RECORDS_HEADER.pack(0, 0, 0, 0) + one)
    assert follow.new() == one[pf.RECORD_DTYPE.itemsize:] and follow.new() == b""


def run_cli(tmp_path, *extra, env_extra=None):
    plan = tmp_path / "p.toml"
    plan.write_text('[plan]\nname = "p"\nprofile = "tiny-1gb"\n[[step]]\ndo = "workload"\nlabel = "reads"\n'
                    'read_pct = 100\nqueue_depth = 32\ncommands = 1000000\n')
    env = {"PATH": "/usr/bin:/bin", **(env_extra or {})}
    if "FISRIG_BUILD" in os.environ:
        env["FISRIG_BUILD"] = os.environ["FISRIG_BUILD"]
    return subprocess.run([sys.executable, "-m", "fisrig.cli", "run", str(plan), "--out", str(tmp_path / "run"),
                           *extra], capture_output=True, text=True, cwd=REPO, env=env)


def test_fisrig_progress_prints_the_phase_and_percent_on_the_model(tmp_path):
    r = run_cli(tmp_path, env_extra={"FISRIG_PROGRESS": "1", "FISRIG_PROGRESS_S": "0"})
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    # the model's million commands take about a second; its records are looked at every 0.25 s
    assert any(l.startswith("fisrig: reads: ") and " of 1,000,000 commands (" in l and "%)" in l
               and " s simulated, " in l for l in lines[:-1]), lines
    assert lines[-1].startswith("fisrig: 1,000,000 commands, ") and " s simulated, in " in lines[-1]


def test_no_progress_when_quiet_or_not_asked(tmp_path):
    r = run_cli(tmp_path, "--quiet", env_extra={"FISRIG_PROGRESS": "1"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = run_cli(tmp_path, "--force")  # stderr is a pipe here, and no FISRIG_PROGRESS
    assert r.returncode == 0 and r.stderr == "", r.stderr
