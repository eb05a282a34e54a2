"""`fisrig run --target rtl`: a plan compiled by the host runs in the firmware's VM on the
rig SoC's VexRiscv, through the engine's rings, LiteSATA and the engine, against the
simulated drive; its records come back through the host bridge into the same run directory the
model target writes. The same plan on the model target is the yardstick (DESIGN.md,
decision 7: the model's timing is checked against the RTL's on the same small plans)."""
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fisrig import plan
from fisrig.records.store import read_meta
from fisrig.run import run_plan

PLAN = {
    "plan": {"name": "rtl-small", "description": "a few hundred commands", "profile": "tiny-1gb"},
    "step": [
        {"do": "identify"},
        {"do": "workload", "label": "random write", "transfer_kib": 4, "queue_depth": 32,
         "commands": 150},
        {"do": "workload", "label": "random read", "read_pct": 100, "transfer_kib": 4,
         "queue_depth": 32, "commands": 150},
        {"do": "flush"},
        {"do": "raw", "label": "read", "command": 0x25, "lba": 0, "count": 8, "expect": "ok"},
    ],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    p = plan.from_dict(PLAN)
    out = tmp_path_factory.mktemp("runs")
    return {t: run_plan(p, out / t, target=t, quiet=True) for t in ("model", "rtl")}


def commands(run):
    t = pq.read_table(run.run_dir / "records.parquet").to_pydict()
    return [dict(zip(t, row)) for row in zip(*t.values())]


def test_the_plan_runs_on_the_rtl_rig(runs):
    rtl = runs["rtl"]
    assert rtl.status == "done"
    recs = commands(rtl)
    cmds = [r for r in recs if r["kind"] == "command"]
    assert len(cmds) == 1 + 150 + 150 + 1 + 1
    assert all(r["result"] == "ok" for r in cmds), [r for r in cmds if r["result"] != "ok"][:3]
    for r in cmds:  # every phase stamped by the gateware, in order
        stamps = [r[k] for k in ("t_submit_ns", "t_h2d_ns", "t_accept_ns", "t_setup_ns",
                                 "t_data_first_ns", "t_data_last_ns", "t_status_ns") if r[k]]
        assert stamps == sorted(stamps) and r["t_status_ns"] > r["t_submit_ns"], r
    assert (rtl.run_dir / "summary.json").exists() and rtl.plots
    console = (rtl.run_dir / "console.log").read_text()
    assert "fisrig firmware: link up" in console
    profile = re.search(r"cpu cycles a command (\d+); instruction bus (\d+) words, (\d+) cycles busy; "
                        r"data bus (\d+) words, (\d+) cycles busy", console)
    cycles, ibus_words, ibus_busy, dbus_words, dbus_busy = map(int, profile.groups())
    assert 0 < ibus_busy + dbus_busy < cycles and ibus_words > 0 and dbus_words > 0


def test_model_and_rtl_issue_the_same_commands(runs):
    """The VM is the same C on both; what it sends must be too (completion order may differ)."""
    def key(r):
        return (r["marker"], r["command"], r["lba"], r["sectors"])
    model = sorted(key(r) for r in commands(runs["model"]) if r["kind"] == "command")
    rtl = sorted(key(r) for r in commands(runs["rtl"]) if r["kind"] == "command")
    assert model == rtl


def test_single_command_latency_agrees_with_the_model(runs):
    """A lone command's latency on the model is within 20% of the gateware's: the FIS-level
    arithmetic of the model against LiteSATA's real link (IDENTIFY, then the raw read)."""
    def lone(run):
        cmds = [r for r in commands(run) if r["kind"] == "command"]
        return [cmds[0]["latency_ns"], cmds[-1]["latency_ns"]]
    for m, r in zip(lone(runs["model"]), lone(runs["rtl"])):
        assert abs(m - r) <= 0.2 * r, (m, r)


def data_phase_ns(record):
    return record["t_data_last_ns"] - record["t_data_first_ns"]


def test_the_rig_soc_at_a_lower_link_speed(runs, tmp_path):
    """`--link-gen`: the SoC built for Gen1 (a dword every 4th cycle of the one 150 MHz
    clock); the drive, which starts at Gen3, steps down to it. The same raw read moves its
    4 KiB Data FIS over four times the Gen3 time, on the same counter."""
    gen = 1
    p = plan.from_dict({"plan": {"name": "rtl-gen", "profile": "tiny-1gb"},
                        "step": [PLAN["step"][0], PLAN["step"][-1]]})
    slow = run_plan(p, tmp_path / "gen", target="rtl", quiet=True, link_gen=gen)
    assert slow.status == "done"
    assert read_meta(slow.run_dir)["link_gen"] == gen
    assert read_meta(runs["rtl"].run_dir)["link_gen"] == 3
    read_slow = [r for r in commands(slow) if r["kind"] == "command"][-1]
    read_fast = [r for r in commands(runs["rtl"]) if r["kind"] == "command"][-1]
    assert read_slow["result"] == "ok" and read_slow["command"] == read_fast["command"] == 0x25
    ratio = data_phase_ns(read_slow) / data_phase_ns(read_fast)
    assert 3.9 < ratio < 4.1, (data_phase_ns(read_slow), data_phase_ns(read_fast))


def test_a_host_that_falls_behind_the_record_ring_is_reported(tmp_path, capsys):
    """The host leaves the record ring full until 1 ms after the run's start tick (as a host
    held up by its machine would): the firmware waits for room before the plan's first record,
    counts the ticks, and the run says that the commands after the wait went at the host's
    pace, in run.json and on the CLI's report; the records are all there."""
    from fisrig.cli import _print_report
    from fisrig.run import execute, prepare
    p = prepare(plan.from_dict({"plan": {"name": "rtl-lag", "profile": "tiny-1gb"},
                                "step": [PLAN["step"][0], PLAN["step"][-1]]}), "rtl", None, None, None)
    p.target.host_lag_ticks = 150_000
    r = execute(p, tmp_path / "lag", quiet=True)
    assert r.status == "done" and r.outcome.records == 3
    assert len(r.outcome.notes) == 1 and "waited" in r.outcome.notes[0] and " in 1 wait " in r.outcome.notes[0]
    waited_us = float(re.search(r"waited ([\d.]+) us", r.outcome.notes[0]).group(1))
    # Held 1 ms past the start, less the 0.2 ms to the IDENTIFY's record, plus the host's
    # polling of the counter through the bridge (1.7 ms in all here).
    assert 750 < waited_us < 5000, r.outcome.notes
    assert read_meta(r.run_dir)["outcome"]["notes"] == r.outcome.notes
    _print_report(r.run_dir, r.phases, r.plots, r.status, r.outcome.notes)
    assert "  ! the run: the rig's CPU waited" in capsys.readouterr().out
    assert len([c for c in commands(r) if c["kind"] == "command"]) == 2
