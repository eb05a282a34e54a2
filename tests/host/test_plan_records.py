"""Every built-in plan's records held to their digests (tests/host/plan_records.py): on the
model target by test_stamp_order.py's runs of each (shortened as it runs them), and here the
plans that check the rig at full length on rtl (smoke-tiny there is 20 minutes of wall time)."""
from __future__ import annotations

import pytest

from fisrig import plan as plan_mod
from fisrig.run import run_plan

import plan_records

# At full length on the gateware (a minute of wall time together once the SoC is built).
RTL_PLANS = ("targets-agree", "targets-agree-qd32")


@pytest.mark.parametrize("name", RTL_PLANS)
def test_rtl_records_of_the_rig_plans(name, tmp_path):
    r = run_plan(plan_mod.load(plan_mod.find(name)), tmp_path / "run", target="rtl", quiet=True)
    assert r.status == "done", r.status
    plan_records.check(f"{name} rtl", r.status, r.run_dir)


@pytest.mark.skipif(plan_records.UPDATE, reason="the digests are being made")
def test_every_builtin_plan_has_its_digests_and_every_digest_a_plan():
    names = set(plan_mod.builtin_plans())
    kept = plan_records.known()
    model = {k.split(" ")[0] for k in kept if k.split(" ")[1] == "model"}
    rtl = {k.split(" ")[0] for k in kept if k.split(" ")[1] == "rtl"}
    assert model == names, f"without a model digest: {sorted(names - model)}; of no plan: {sorted(model - names)}"
    assert rtl == set(RTL_PLANS)
