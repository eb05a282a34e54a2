"""The drive's current on the gateware (issue 16, section 2): tests/host/test_current.py's
plan (sampled every 4 us: 400 us idle, 32 queued 64 KiB writes, FLUSH, 128 queued 4 KiB
reads, POWER OFF, 200 us without power) on `--target rtl`, where the sampler is the
engine's (hw/fisrig_hw/engine/current.py) and the samples come from the simulated drive's
current pins (sim/device pins.h), against the model target's sampler on the same plan.

Held to the model: every sample 4 us apart from the sampler's start to its stop, none lost,
the idle draw exactly, nothing without power, the same peak; where the rig is not the limit
(the FLUSH: the drive programs what its cache holds) the same time and mean current to 1%.
The writes' mean is held to 3% (measured 1.9%): the firmware keeps fewer of the 8 writes in
flight than the model's VM (issue 17), so the drive's dies are busy in another order. The
reads' current follows how many commands the rig keeps in flight, which the firmware does
not yet hold on rtl (issue 17): printed, not held. About 40 s once the SoC is built."""
import numpy as np

from fisrig import plan
from fisrig.run import run_plan

from test_current import CURRENT, IDLE_MA, current_facts  # tests/host (pytest.ini)


def test_the_gateware_samples_the_current_as_the_model_does(tmp_path):
    facts = {}
    for target in ("model", "rtl"):
        r = run_plan(plan.from_dict(CURRENT), tmp_path / target, target=target, quiet=True)
        assert r.status == "done", r.outcome
        facts[target] = f = current_facts(r.run_dir)
        cur = f["cur"]
        assert set(np.diff(cur["t_ns"])) == {4000}, target
        assert cur["t_ns"].iloc[0] == f["start"] and f["stop"] - 4000 < cur["t_ns"].iloc[-1] <= f["stop"], target
        assert f["summary"]["lost_samples"] == 0, target
        assert set(cur[cur["marker"] == "idle"]["ma"]) == {IDLE_MA}, target
        assert set(cur[cur["marker"] == "dark"]["ma"]) == {0}, target
    m, g = facts["model"], facts["rtl"]
    print({name: (round(m["mean"].get(name, 0), 1), round(g["mean"].get(name, 0), 1)) for name in g["mean"]})
    assert m["summary"]["peak_ma"] == g["summary"]["peak_ma"]
    flush = [(f["cur"]["marker"] == "flush").sum() for f in (m, g)]
    assert abs(flush[1] - flush[0]) <= 0.01 * flush[0], flush
    assert abs(g["mean"]["flush"] - m["mean"]["flush"]) <= 0.01 * m["mean"]["flush"]
    assert abs(g["mean"]["writes"] - m["mean"]["writes"]) <= 0.03 * m["mean"]["writes"]
