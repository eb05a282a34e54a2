"""Faults that must not break the rig (issue 16, section 4) on the gateware: every plan of
tests/host/test_fault_recovery.py (each of the drive's fault knobs under a QD32 workload
that retries its errors, then a second workload; and a power cut in mid-command) runs on
`--target rtl`, the drive's faults made at the transceiver pins by sim/device, and must show
the same facts as on the model: every attempt recorded, the engine's NCQ recovery (log
10h) and timeout COMRESET, the VM's link wait and re-sends, the plan going on, the END
record, nothing missing. The records are not compared between the targets: the faults
are drawn per FIS and the rig's CPU keeps fewer commands in flight than the model's
(issue 17), so which command meets which fault differs."""
import pytest

from test_fault_recovery import CASES, check_case, check_cut, fault_plan, knob_facts, recovery_facts  # tests/host (pytest.ini)

from fisrig import plan as plan_mod
from fisrig.run import run_plan


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return knob_facts("clean", tmp_path_factory.mktemp("clean"), target="rtl")


@pytest.mark.parametrize("name", sorted(set(CASES) - {"clean"}))
def test_every_fault_knob_on_the_gateware(name, clean, tmp_path):
    check_case(name, knob_facts(name, tmp_path, target="rtl"), clean)


def test_a_power_cut_in_mid_command_on_the_gateware(tmp_path):
    r = run_plan(plan_mod.from_dict(fault_plan(cut=True)), tmp_path / "run", target="rtl", quiet=True)
    assert r.status == "done", r.outcome
    check_cut(recovery_facts(r.run_dir))
