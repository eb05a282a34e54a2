"""Faults that must not break the rig (issue 16, section 4) on the model target: each of the
drive's fault knobs under a QD32 workload whose plan asks for its errors to be retried
(program.h, struct fisrig_op_policy), then a clean workload. For each, the records say what
happened to every command and every attempt, the rig recovers (the engine reads log 10h
after an NCQ error; the VM waits for the link after a timeout's COMRESET; commands go again
as the plan's policy says, and no more), the plan goes on, and no record goes missing.
tests/rtl/test_fault_recovery_rtl.py runs the same plans on the gateware and holds it to
the same facts (`recovery_facts`, `CASES`)."""
import numpy as np
import pandas as pd
import pytest

from fisrig_hw import contract as _c

from fisrig import plan as plan_mod
from fisrig import program_format as pf
from fisrig.errors import InputError
from fisrig.run import run_plan

UNC, IDNF, ICRC, ABRT = _c.FISRIG_ATA_ERROR_UNC, _c.FISRIG_ATA_ERROR_IDNF, _c.FISRIG_ATA_ERROR_ICRC, _c.FISRIG_ATA_ERROR_ABRT
FAULTY, AFTER = 64, 16  # commands: small enough for the gateware's simulation

# The knob and what its commands must show: results seen in the faulty step (each at least
# once), the ATA error bits one of its failing records has, whether some command failed
# for good (the policy's 3 retries spent), how much longer than the clean drive's the
# faulty step took at least, and how long some write's data phase took at least (ns).
CASES = {
    "clean": dict(faults=[], seen=set()),
    "crc": dict(faults=["data_fis_crc_error_rate=0.1"], seen={"ata_error", "ncq_aborted"}, error=ICRC | ABRT),
    "r_err": dict(faults=["r_err_rate=0.1"], seen={"ata_error", "ncq_aborted"}, error=ICRC | ABRT),
    "hold": dict(faults=["hold_storm_rate=0.1", "hold_storm_us=100"], seen=set(), held_ns=100_000),
    "busy": dict(faults=["busy_rate=0.3", "busy_us=50"], seen=set(), slower_ns=50_000),
    "unc": dict(faults=["unc=512+128"], seen={"ata_error"}, error=UNC, gives_up=True),
    "idnf": dict(faults=["idnf=1024+128"], seen={"ata_error"}, error=IDNF, gives_up=True),
    "hang": dict(faults=["hang_after_commands=24"], seen={"timeout", "link_lost"}, link_waits=True),
    "link_drop": dict(faults=["link_drop_after_commands=24"], seen={"link_lost"}, link_waits=True),
}


def fault_plan(cut: bool = False) -> dict:
    """64 reads, writes and a few TRIMs (their range lists go again from the VM's data
    window) of 4 and 16 KiB at QD32 over the first 1 MiB, then 16 at QD4 over
    the next MiB (the knob stays on: its faults come there too, and must not stop it),
    each command retried up to 3 times, 1 ms timeouts (fast-1gb answers in tens of us). With
    `cut`, the power is cut 2 us after the 10th Data FIS of the first workload and back
    before the second."""
    steps = [{"do": "workload", "label": "faulty", "read_pct": 45, "trim_pct": 5, "queue_depth": 32,
              "sizes_kib": [[4, 3], [16, 1]],
              "lba_start": 0, "lba_count": 2048, "commands": FAULTY},
             {"do": "workload", "label": "after", "read_pct": 50, "queue_depth": 4, "transfer_kib": 4,
              "lba_start": 4096, "lba_count": 2048, "commands": AFTER}]
    if cut:
        steps = [{"do": "power_cut_at", "event": "data", "count": 10, "delay_us": 2}, steps[0],
                 {"do": "power_on", "label": "back"}, steps[1]]
    return {"plan": {"name": "fault-recovery", "profile": "fast-1gb", "seed": 3, "on_error": "retry",
                     "retries": 3, "timeout_ms": 1, "link_timeout_ms": 20}, "step": steps}


def recovery_facts(run_dir) -> dict:
    """What a fault plan's records say, with the invariants every run must hold checked
    on the way (an AssertionError says which)."""
    r = pd.read_parquet(run_dir / "records.parquet")
    end = r[r["kind"] == "end"]
    assert len(end) == 1 and end["result"].iloc[0] == "ok", end  # the END record: the run ended done
    cmd = r[r["kind"] == "command"].copy()
    cmd["attempt"] = (cmd["detail"].astype(int) & pf.DETAIL_ATTEMPT_MASK) // (1 << pf.DETAIL_ATTEMPT_SHIFT)
    cmd["again"] = (cmd["detail"].astype(int) & pf.DETAIL_SENT_AGAIN) != 0
    facts = {}
    for label, c in cmd.groupby("marker", observed=True):
        # Every attempt the VM said goes again has its record, and none that it did not.
        for k in range(int(c["attempt"].max()) + 1):
            assert (c["attempt"] == k + 1).sum() == (c["again"] & (c["attempt"] == k)).sum(), (label, k)
        assert (c.loc[c["again"], "result"] != "ok").all(), label
        last = c[~c["again"]]  # each command's last word
        facts[label] = {
            "commands": int((c["attempt"] == 0).sum()), "records": len(c),
            "results": set(c["result"].astype(str)), "ok": int((last["result"] == "ok").sum()),
            "failed": last.loc[last["result"] != "ok", ["result", "error", "attempt"]].to_dict("records"),
            "errors": set(c.loc[c["result"] == "ata_error", "error"].astype(int)),
            "sent_again": int(c["again"].sum()), "most_attempts": int(c["attempt"].max()),
            "own_sent_again": int((c["again"] & ~c["result"].isin(["ncq_aborted", "link_lost"])).sum()),
            "span_ns": int(c["t_status_ns"].max() - c["t_submit_ns"].min()),
            "longest_write_data_ns": int((c["t_data_last_ns"] - c["t_data_first_ns"])[
                (c["command"] == 0x61) & (c["result"] == "ok")].max()),
        }
    links = r[(r["kind"] == "link") & (r["marker"] != "back")]  # the VM's, not a power_on step's
    facts["link_waits"] = [(int(x.command), str(x.result)) for x in links.itertuples()]
    facts["cut"] = r[(r["kind"] == "power") & (r["tag"] == pf.EVENT_POWER_CUT)]["t_status_ns"].tolist()
    facts["lost_at_cut"] = cmd[(cmd["result"] == "link_lost") & (cmd["marker"] == "faulty")]
    return facts


def check_case(name: str, facts: dict, clean: dict) -> None:
    """The facts one knob's run must show, on either target (`clean`: the clean drive's)."""
    case = CASES[name]
    f, a = facts["faulty"], facts["after"]
    assert f["commands"] == FAULTY and a["commands"] == AFTER, (f, a)  # the plan went on, whole
    assert a["ok"] == AFTER, a  # and the drive works after it
    assert case["seen"] <= f["results"], f
    if "error" in case:
        assert any(e & case["error"] == case["error"] for e in f["errors"]), f
    if case.get("gives_up"):  # a lasting error: its commands tried 4 times at least (3 retries), then failed
        assert f["failed"] and all(x["result"] == "ata_error" and x["error"] & case["error"] and x["attempt"] >= 3
                                   for x in f["failed"]), f
    else:  # a passing one: every command ends OK at last
        assert f["ok"] == FAULTY and not f["failed"], f
    if case["seen"] & {"ncq_aborted", "link_lost", "timeout"}:
        assert f["sent_again"] > 0 and f["most_attempts"] >= 1, f
    if not case["seen"]:
        assert f["results"] == {"ok"} and f["sent_again"] == 0, f
    if "held_ns" in case:  # a write the drive held: its data phase took that long
        assert f["longest_write_data_ns"] >= case["held_ns"] > clean["faulty"]["longest_write_data_ns"], (f, clean)
    if "slower_ns" in case:
        assert f["span_ns"] >= clean["faulty"]["span_ns"] + case["slower_ns"], (f, clean["faulty"])
    waits = facts["link_waits"]
    if case.get("link_waits"):  # after a timeout's COMRESET, the VM waited for the link
        assert waits and all(w == (pf.LINK_WAIT_UP, "ok") for w in waits), waits
    else:
        assert not waits, waits


def knob_facts(name: str, out, target: str = "model") -> dict:
    r = run_plan(plan_mod.from_dict(fault_plan()), out / name, target=target, quiet=True, faults=CASES[name]["faults"])
    assert r.status == "done", r.outcome
    return recovery_facts(r.run_dir)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return knob_facts("clean", tmp_path_factory.mktemp("clean"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_fault_knob_is_recorded_recovered_and_the_plan_goes_on(name, clean, tmp_path):
    check_case(name, knob_facts(name, tmp_path), clean)


def check_cut(facts: dict) -> None:
    """A power cut in mid-command (the plan's own): the workload ends there, what it caught
    ends LINK_LOST and never goes again, the drive is back and the plan goes on."""
    f, lost = facts["faulty"], facts["lost_at_cut"]
    assert len(facts["cut"]) == 1 and len(lost) > 0, facts
    assert f["sent_again"] == 0 and f["commands"] < FAULTY, f
    assert (lost["t_status_ns"] >= facts["cut"][0]).all()
    assert facts["after"]["ok"] == AFTER, facts["after"]
    assert not facts["link_waits"], facts["link_waits"]


def test_a_power_cut_in_mid_command_ends_the_step_and_nothing_goes_again(tmp_path):
    r = run_plan(plan_mod.from_dict(fault_plan(cut=True)), tmp_path / "run", quiet=True)
    assert r.status == "done", r.outcome
    check_cut(recovery_facts(r.run_dir))


def test_fail_sends_nothing_again_and_requeue_only_what_another_ended(tmp_path):
    """The policy decides, and nothing else: with `fail` an NCQ error's innocent commands
    end NCQ_ABORTED for good; with `requeue` they go again (until they end OK) but a
    failing read never does. Its commands are 64 KiB: the drive's data phases, not the
    rig's CPU (VmCpuTime: 7.5 us a 4 KiB command), set the pace, so the queue is full when
    the read fails (at 4 and 16 KiB the first failing read went with one other in flight),
    and 32 of them take 3.5 ms: the timeout is 20 ms."""
    facts = {}
    for policy in ("fail", "requeue"):
        p = fault_plan()
        p["step"][0].update(on_error=policy, retries=0 if policy == "fail" else 3, sizes_kib=[[64, 1]])
        p["plan"]["timeout_ms"] = 20
        r = run_plan(plan_mod.from_dict(p), tmp_path / policy, quiet=True, faults=CASES["unc"]["faults"])
        facts[policy] = recovery_facts(r.run_dir)["faulty"]
    fail, requeue = facts["fail"], facts["requeue"]
    assert fail["sent_again"] == 0 and any(x["result"] == "ncq_aborted" for x in fail["failed"]), fail
    assert requeue["sent_again"] > 0 and requeue["own_sent_again"] == 0, requeue
    assert requeue["failed"] and all(x["result"] == "ata_error" for x in requeue["failed"]), requeue


@pytest.mark.parametrize("key, value, says", [
    ("on_error", "again", "on_error = 'again' is not valid (closest: "),
    ("retries", 16, "retries = 16: must be 0..15"),
    ("timeout_ms", 40_000, "timeout_ms = 40000: a timeout is over one tick and at most 28633 ms"),
    ("link_timeout_ms", 1e-6, "link_timeout_ms = 1e-06: a timeout is over one tick"),
])
def test_a_bad_policy_is_refused_where_it_is_written(key, value, says):
    for where in ("plan", "step"):
        p = fault_plan()
        (p["plan"] if where == "plan" else p["step"][0]).update({key: value})
        with pytest.raises(InputError, match=None) as e:
            from fisrig.compile import compile_plan
            compile_plan(plan_mod.from_dict(p), 2_000_000)
        assert says in str(e.value), str(e.value)


def test_retries_without_a_policy_that_retries_is_refused():
    p = fault_plan()
    p["step"][0].update(on_error="fail")  # the plan's retries = 3 with the step's fail
    from fisrig.compile import compile_plan
    with pytest.raises(InputError, match='retries = 3 with on_error = "fail": nothing is sent again'):
        compile_plan(plan_mod.from_dict(p), 2_000_000)
