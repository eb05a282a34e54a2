"""Staged rails and P3 (issue 16, section 2; engine_if.h FISRIG_POWER_STAGE) on the model
target: a `rails` step stages the power pins, and the drive (its profile's power.rails:
tiny-1gb is a 2.5-inch drive on 5 V) runs until a pin it needs switches off, and comes
back once every one is on. tests/hw's cocotb bench holds the gateware's pins to their
offsets to the tick; tests/rtl/test_power_rails_rtl.py runs this plan on the gateware."""
import pandas as pd
import pytest

from fisrig import plan as plan_mod
from fisrig.errors import InputError
from fisrig.run import run_plan

# 12 V off with the cut, 5 V 2 ms later; on: 12 V at once, 5 V 3 ms later. The cut comes
# 1 ms into QD1 writes of 4 KiB.
STAGED = {
    "plan": {"name": "staged-rails", "profile": "tiny-1gb"},
    "step": [
        {"do": "rails", "pins": ["12v", "5v"], "off_ms": [0, 2], "on_ms": [0, 3]},
        {"do": "power_cut_at", "event": "time", "delay_us": 1000},
        {"do": "workload", "label": "writes", "pattern": "sequential", "read_pct": 0, "queue_depth": 1,
         "transfer_kib": 4, "lba_count": 65536, "commands": 400},
        {"do": "power_on", "label": "back"},
    ],
}


def staged_facts(run_dir) -> dict:
    """What a staged run's records say, for this file's plan: when the cut came, the last
    write acknowledged after it, the first the drive's power loss ended, and how long
    POWER ON took."""
    r = pd.read_parquet(run_dir / "records.parquet")
    cut = int(r.loc[(r["kind"] == "power") & (r["tag"] == 240), "t_status_ns"].iloc[0])
    w = r[(r["marker"] == "writes") & (r["kind"] == "command")]
    ok, lost = w[w["result"] == "ok"], w[w["result"] == "link_lost"]
    on = r[(r["marker"] == "back") & (r["kind"] == "power") & (r["protocol"] == 7) & (r["command"] == 2)].iloc[0]
    return {"cut": cut, "last_ok_after_cut_ns": int(ok["t_status_ns"].max()) - cut,
            "oks_after_cut": int((ok["t_status_ns"] > cut).sum()), "lost": len(lost),
            "first_lost_h2d_ns": int(lost["t_submit_ns"].min()) - cut,
            "power_on_ns": int(on["t_status_ns"]) - int(on["t_submit_ns"]), "on_result": on["result"]}


def test_the_drive_runs_until_a_rail_it_needs_falls(tmp_path):
    r = run_plan(plan_mod.from_dict(STAGED), tmp_path / "run", quiet=True)
    f = staged_facts(r.run_dir)
    # 12 V fell with the cut; the drive (5 V) went on acknowledging writes for 2 ms.
    assert f["oks_after_cut"] > 10 and 1_900_000 < f["last_ok_after_cut_ns"] <= 2_000_000, f
    # The first write lost is the one in flight when 5 V fell, or, where one had just ended,
    # the next the rig sent (at QD1 its CPU's gap between a status and the next submit is
    # 8.4 us: sim/model/vm_cpu_time.h); which of the two moves with a few ns of a write's time.
    assert f["lost"] > 0 and f["first_lost_h2d_ns"] <= 2_000_000 + 10_000, f
    # Back once 5 V was on again, 3 ms after POWER ON, and its boot (tiny-1gb: 200 ms) after.
    assert f["on_result"] == "ok" and f["power_on_ns"] >= 3_000_000 + 200_000_000, f


def test_p3_alone_power_cycles_the_drive(tmp_path):
    """Rails left on, P3 asserted with the cut: the drive is off at once."""
    p = {"plan": STAGED["plan"], "step": [dict(STAGED["step"][0], pins=["p3"], off_ms=[0], on_ms=[0])]
         + STAGED["step"][1:]}
    f = staged_facts(run_plan(plan_mod.from_dict(p), tmp_path / "run", quiet=True).run_dir)
    assert f["lost"] > 0 and f["last_ok_after_cut_ns"] <= 0, f


def test_a_cut_no_pin_of_the_drive_feels(tmp_path):
    """12 V alone switched: the 5 V drive never loses power; POWER ON waits for a signature
    that does not come, and says so (TIMEOUT), as the gateware does."""
    p = {"plan": STAGED["plan"], "step": [dict(STAGED["step"][0], pins=["12v"], off_ms=[0], on_ms=[0])]
         + STAGED["step"][1:3] + [{"do": "raw", "protocol": "power", "command": 2, "expect": "any",
                                   "timeout_ms": 5, "label": "back"}]}
    r = run_plan(plan_mod.from_dict(p), tmp_path / "run", quiet=True)
    rec = pd.read_parquet(r.run_dir / "records.parquet")
    w = rec[(rec["marker"] == "writes") & (rec["kind"] == "command")]
    assert (w["result"] == "ok").all() and len(w) == 400
    on = rec[(rec["marker"] == "back") & (rec["kind"] == "power")]
    assert list(on["result"]) == ["timeout"] and (on["latency_ns"] == 5_000_000).all(), on


@pytest.mark.parametrize("step,why", [
    ({"pins": []}, "pins must name"),
    ({"pins": ["5v", "24v"]}, "'24v' is not valid"),
    ({"pins": ["5v", "5v"]}, "named twice"),
    ({"pins": ["5v"], "off_ms": [1, 2]}, "off_ms must give a time in ms for each of the 1 pins"),
    ({"pins": ["5v"], "on_ms": [40000]}, "on_ms = [40000]"),
])
def test_bad_rails_are_refused_with_where_and_why(tmp_path, step, why):
    p = {"plan": STAGED["plan"], "step": [dict({"do": "rails"}, **step)]}
    with pytest.raises(InputError) as e:
        run_plan(plan_mod.from_dict(p), tmp_path / "run", quiet=True)
    assert why in str(e.value) and "step 1 (rails)" in str(e.value), str(e.value)
