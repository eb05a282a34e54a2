"""Stamps never out of order (issue 58, section 5), on the model target: every record of
every built-in plan (shortened as tests/host/test_builtin_plans.py runs them) and of the
raw mismatch plan (tests/host/raw_mismatch.py) keeps engine_if.h's phases in the order
their definitions put them, wherever each is set (non-zero):

    t_submit <= t_h2d <= t_accept <= t_setup <= t_data_first <= t_data_last <= t_status

- ts_submit: the engine took the descriptor, before its H2D went;
- ts_accept, NCQ: the D2H that released the command, before its DMA Setup (the device
  sends a queued command's data phase only after releasing it). Where the drive answered a
  command it does not queue (a raw command sent under a queued protocol), the D2H the
  rig took for the release is that command's status, after its data: there ts_accept is
  held between ts_h2d and ts_status only;
- ts_setup: the first DMA Setup, DMA Activate or PIO Setup, before the data it asks for;
- ts_status: the D2H or SDB after the data; PIO in: its last data dword itself (equal).
A power record is a POWER descriptor's or the engine's event (a cut's ts_h2d is the tick
its delay counted from, before the cut's own): its stamps are held at or before its
ts_status. An end record, a loop pass and the current sampler's carry no command's
phases.

Before: READ DMA EXT sent as a queued read stamped its "setup" 13 ns before its H2D, and
IDENTIFY sent as DMA in its status 33 ns before its last data dword."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from fisrig import plan as plan_mod
from fisrig.sata.ata import PROTOCOL_OF
from fisrig.run import run_plan

import plan_records
import raw_mismatch
from test_builtin_plans import scaled_profile, shortened

ORDER = ("t_submit_ns", "t_h2d_ns", "t_accept_ns", "t_setup_ns", "t_data_first_ns", "t_data_last_ns", "t_status_ns")
# An NVMe command's (docs/nvme.md, "Records"): submit, doorbell, SQE in, data, CQE, then the
# MSI-X message where t_setup_ns is.
NVME_ORDER = ("t_submit_ns", "t_h2d_ns", "t_accept_ns", "t_data_first_ns", "t_data_last_ns", "t_status_ns", "t_setup_ns")
NVME = 9
QUEUED = ("fpdma_in", "fpdma_out")
PROTOCOL_NAMES = dict(enumerate(raw_mismatch.PROTOCOLS))  # enum fisrig_protocol's first seven
CHAINED = ("command", "link", "stamp", "identify")


def out_of_order(rows: list[dict]) -> list[str]:
    """Each record whose set stamps break the order, with why (at most 20)."""
    bad = []
    for i, r in enumerate(rows):
        if r["kind"] == "power":
            late = [k for k in ORDER if r[k] > r["t_status_ns"]]
            if late:
                bad.append(f"record {i} ({r['marker']}, power): {', '.join(late)} after t_status_ns")
            continue
        if r["kind"] not in CHAINED:
            continue
        order = NVME_ORDER if r["protocol"] == NVME else ORDER
        released_by_status = (PROTOCOL_NAMES.get(r["protocol"]) in QUEUED and r["command"] in PROTOCOL_OF
                              and PROTOCOL_OF[r["command"]] not in QUEUED)
        if released_by_status and r["t_accept_ns"]:
            order = tuple(k for k in ORDER if k != "t_accept_ns")
            if not r["t_h2d_ns"] <= r["t_accept_ns"] <= r["t_status_ns"]:
                bad.append(f"record {i} ({r['marker']}): t_accept_ns {r['t_accept_ns']} not between its H2D "
                           f"{r['t_h2d_ns']} and status {r['t_status_ns']}")
        seen = [(k, r[k]) for k in order if r[k]]
        for (ka, a), (kb, b) in zip(seen, seen[1:]):
            if a > b:
                bad.append(f"record {i} ({r['marker']}, command {r['command']:#04x} as "
                           f"{PROTOCOL_NAMES.get(r['protocol'], r['protocol'])}, {r['result']}): {ka} {a} after {kb} {b}")
                break
        if len(bad) >= 20:
            break
    return bad


def records(run_dir) -> list[dict]:
    return pq.read_table(run_dir / "records.parquet").to_pylist()


def test_the_check_finds_what_it_should():
    r = dict.fromkeys(ORDER, 0) | {"kind": "command", "marker": "m", "command": 0x25, "protocol": 5,
                                   "result": "ok", "t_submit_ns": 1, "t_h2d_ns": 10, "t_setup_ns": 5,
                                   "t_data_first_ns": 20, "t_data_last_ns": 30, "t_status_ns": 40}
    assert out_of_order([r]) == ["record 0 (m, command 0x25 as fpdma_in, ok): t_h2d_ns 10 after t_setup_ns 5"]
    # PIO in: the status is the last data dword; an accept after the data only where the
    # opcode is not a queued one
    assert out_of_order([r | {"t_setup_ns": 15, "t_status_ns": 30}]) == []
    assert out_of_order([r | {"t_setup_ns": 15, "t_accept_ns": 35}]) == []
    assert out_of_order([r | {"command": 0x60, "t_setup_ns": 15, "t_accept_ns": 35}])
    assert out_of_order([{**r, "kind": "power", "t_h2d_ns": 50}])


def test_the_raw_mismatch_plan(tmp_path):
    r = run_plan(raw_mismatch.plan(), tmp_path / "run", quiet=True)
    assert r.status == "done"
    rows = records(r.run_dir)
    assert set(raw_mismatch.commands(rows)) == raw_mismatch.labels()
    assert not out_of_order(rows), "\n".join(out_of_order(rows))


def test_the_smoke_plan(smoke_run):
    assert not out_of_order(records(smoke_run.run_dir)), "\n".join(out_of_order(records(smoke_run.run_dir)))
    plan_records.check("smoke-tiny model", smoke_run.status, smoke_run.run_dir)


# Every other built-in plan, shortened as test_builtin_plans.py runs them (a drive 1/32 of
# its profile's, the work with it), and then more: their timed work 8 times shorter and the
# JEDEC test's replays 100,000 commands (the sandforce plan's tortures took 285 s at 1/32
# here; the order of a command's stamps does not depend on how long a phase runs). The plans on
# the fast 1 GB drive and the power-loss sweep (its drive is 8 MiB) run as they are: their
# drives cannot be made smaller, and each runs in seconds. The compressing drive is held by
# sandforce-torture-trim's own profile and by steady-state-states on sandforce-240gb.
# whole-drive-fill's run is test_builtin_plans.py's (its drive and cache at 1/32), which holds
# its order and digest: a minute of wall time once is enough.
OTHERS = sorted(set(plan_mod.builtin_plans()) - {"smoke-tiny", "whole-drive-fill"})
AS_THEY_ARE = {"targets-agree", "targets-agree-qd32", "targets-agree-nvme", "power-loss-sweep"}
FURTHER = 8


def _shortened(name: str, tmp_path, profile: str | None = None) -> plan_mod.Plan:
    if name in AS_THEY_ARE:
        return plan_mod.load(plan_mod.find(name))
    p = shortened(name, scaled_profile(profile or plan_mod.load(plan_mod.find(name)).profile, tmp_path))
    for s in p.steps:
        for key in ("minutes", "seconds", "seconds_per_cell"):
            if key in s.args:
                s.args[key] /= FURTHER
        if s.do == "replay":
            s.args["commands"] = 100_000
    return p


@pytest.mark.parametrize("name,profile", [(n, None) for n in OTHERS] + [("steady-state-states", "sandforce-240gb")])
def test_every_builtin_plan(name, profile, tmp_path):
    r = run_plan(_shortened(name, tmp_path, profile), tmp_path / "run", quiet=True)
    assert r.status == "done", r.outcome
    bad = out_of_order(records(r.run_dir))
    assert not bad, "\n".join(bad)
    # The same records, held to their digest (tests/host/plan_records.py).
    plan_records.check(f"{name} model" + ("" if name in AS_THEY_ARE else " shortened") +
                       (f" {profile}" if profile else ""), r.status, r.run_dir)
