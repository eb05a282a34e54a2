"""Staged rails on the gateware (issue 16, section 2): tests/host/test_power_rails.py's plan
(12 V off with a cut at 1 ms, 5 V 2 ms later; on, 5 V 3 ms after POWER ON) on `--target
rtl`: the power controller's pins reach the simulated drive's device side, which runs on
5 V, so the drive acknowledges writes for 2 ms after the cut and its link falls then; it
is back 3 ms after POWER ON and its boot (the rtl target boots drives in 100 us). The
pins' offsets to the tick: tests/hw's cocotb bench. About 40 s once the SoC is built."""
import pandas as pd

from fisrig import plan
from fisrig.run import run_plan

from test_power_rails import STAGED, staged_facts  # tests/host (pytest.ini)


def test_the_drive_on_the_gateware_runs_until_its_rail_falls(tmp_path):
    facts = {}
    for target in ("rtl", "model"):
        r = run_plan(plan.from_dict(STAGED), tmp_path / target, target=target, quiet=True)
        assert r.status == "done", r.outcome
        facts[target] = staged_facts(r.run_dir)
    f = facts["rtl"]
    # The rig's CPU issues a write every few tens of us there: fewer fit in the 2 ms.
    assert f["oks_after_cut"] >= 3 and 1_500_000 < f["last_ok_after_cut_ns"] <= 2_000_000, facts
    assert f["lost"] >= 1 and f["on_result"] == "ok" and f["power_on_ns"] >= 3_000_000 + 100_000, facts
    rec = pd.read_parquet(tmp_path / "rtl" / "records.parquet")
    down = rec[(rec["kind"] == "power") & (rec["tag"] == 241)]  # the link's fall
    assert len(down) == 1 and 2_000_000 <= int(down["t_status_ns"].iloc[0]) - f["cut"] < 2_200_000, down
    m = facts["model"]
    assert 1_900_000 < m["last_ok_after_cut_ns"] <= 2_000_000, facts
