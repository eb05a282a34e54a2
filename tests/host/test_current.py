"""The drive's current as the rig samples it (issue 16, section 2; engine_if.h
FISRIG_POWER_SAMPLE) on the model target: a plan's `current_us` samples the whole plan, a
`current` step turns it on and off; current.parquet holds every sample on the commands'
clock, current_windows.parquet the 100 us and 100 ms windows, summary.json the figures,
current_over_time.png both on one time axis. The same plan on the gateware:
tests/rtl/test_current_rtl.py (CURRENT, current_facts)."""
import json

import numpy as np
import pandas as pd

from fisrig import plan
from fisrig.records import run_state
from fisrig.run import run_plan

IDLE_MA = 60  # tiny-1gb's power.idle_ma
CURRENT = {
    "plan": {"name": "current", "profile": "tiny-1gb", "current_us": 4},
    "step": [
        {"do": "idle", "label": "idle", "seconds": 0.0004},
        {"do": "workload", "label": "writes", "read_pct": 0, "queue_depth": 8, "transfer_kib": 64,
         "lba_count": 65536, "commands": 32},
        {"do": "flush", "label": "flush"},
        {"do": "workload", "label": "reads", "read_pct": 100, "queue_depth": 8, "transfer_kib": 4,
         "lba_count": 65536, "commands": 128},
        {"do": "power_off", "label": "off"},
        {"do": "idle", "label": "dark", "seconds": 0.0002},
    ],
}


def current_facts(run_dir) -> dict:
    """What a run of CURRENT says of the current: its samples, the sampler's own records
    (start and stop), each phase's samples and mean mA, and the phases' spans."""
    cur = pd.read_parquet(run_dir / "current.parquet")
    rec = pd.read_parquet(run_dir / "records.parquet")
    sampler = rec[(rec["kind"] == "power") & (rec["protocol"] == 7) & (rec["command"] == 5)]
    return {"cur": cur, "rec": rec, "start": int(sampler["t_submit_ns"].iloc[0]),
            "stop": int(sampler["t_submit_ns"].iloc[-1]), "sampler_results": list(sampler["result"]),
            "mean": cur.groupby("marker", observed=True)["ma"].mean().to_dict(),
            "summary": json.loads((run_dir / "summary.json").read_text())["fisrig"]["current"]}


def test_a_plan_samples_the_drive_current_every_4_us_from_its_start_to_its_end(tmp_path):
    r = run_plan(plan.from_dict(CURRENT), tmp_path / "run", target="model", quiet=True)
    assert r.status == "done", r.outcome
    f = current_facts(r.run_dir)
    cur = f["cur"]
    assert f["sampler_results"] == ["ok", "ok"]
    # Every sample 4 us after the one before, from the sampler's start to its stop.
    assert set(np.diff(cur["t_ns"])) == {4000}
    assert cur["t_ns"].iloc[0] == f["start"] and f["stop"] - 4000 < cur["t_ns"].iloc[-1] <= f["stop"]
    assert len(cur) == (f["stop"] - f["start"]) // 4000 + 1
    # The drive's draw: its idle current while nothing runs, more while NAND works, none
    # once its rails are off.
    # The idle's 400 us start once the rig's CPU has reaped the sampler's start (its record
    # seen and reaped, 750 + 4,590 ns: sim/model/vm_cpu_time.h), so its samples run from the
    # start to 405.34 us after it: 102.
    idle = cur[cur["marker"] == "idle"]["ma"]
    assert len(idle) == (5_340 + 400_000) // 4000 + 1 and set(idle) == {IDLE_MA}
    assert cur[cur["marker"].isin(["writes", "flush"])]["ma"].max() > IDLE_MA
    assert set(cur[cur["marker"] == "dark"]["ma"]) == {0}
    # The records are the commands' own: none of the sampler's is among them.
    assert "current" not in set(f["rec"]["kind"])
    s = f["summary"]
    assert s["samples"] == len(cur) and s["lost_samples"] == 0 and s["period_ns"] == 4000
    assert s["peak_ma"] == cur["ma"].max() and abs(s["mean_ma"] - cur["ma"].mean()) < 0.01
    # The windows are the samples' own: each window's highest sample and mean, from the first.
    w = pd.read_parquet(r.run_dir / "current_windows.parquet")
    for name, width in (("100us", 100_000), ("100ms", 100_000_000)):
        mine = w[w["window"] == name].reset_index(drop=True)
        k = (cur["t_ns"] - cur["t_ns"].iloc[0]) // width
        want = cur.groupby(k)["ma"].agg(["max", "mean", "size"]).reset_index(drop=True)
        assert list(mine["max_ma"]) == list(want["max"]) and list(mine["samples"]) == list(want["size"])
        assert np.allclose(mine["mean_ma"], want["mean"])
        assert s[f"max_{name}_mean_ma"] == round(want["mean"].max(), 2)
    assert (r.run_dir / "current_over_time.png").exists()
    assert "current_over_time.png" in (r.run_dir / "report.html").read_text()
    # Reported again, with records.bin gone: the sampler's records are in current.parquet,
    # not missing (run.json's outcome.current_records), so the run still ended done.
    assert not (r.run_dir / "records.bin").exists()
    state = run_state.inspect(r.run_dir)
    assert state.missing == 0 and state.line() == "done", state.line()


def test_a_current_step_samples_from_there_until_it_is_turned_off(tmp_path):
    steps = [{"do": "idle", "label": "before", "seconds": 0.0002},
             {"do": "current", "label": "on", "every_us": 10},
             {"do": "idle", "label": "sampled", "seconds": 0.001},
             {"do": "current", "label": "off", "on": False},
             {"do": "idle", "label": "after", "seconds": 0.0002}]
    r = run_plan(plan.from_dict({"plan": {"name": "current-step", "profile": "tiny-1gb"}, "step": steps}),
                 tmp_path / "run", target="model", quiet=True)
    assert r.status == "done", r.outcome
    f = current_facts(r.run_dir)
    cur = f["cur"]
    assert set(np.diff(cur["t_ns"])) == {10000}
    # From the start's tick to the stop's (which takes none): the step that turns it on
    # lasts while the rig's CPU reaps the start's record (5.34 us: sim/model/vm_cpu_time.h),
    # which holds the first sample, and the 1 ms idle after it 100 more.
    assert cur.groupby("marker", observed=True).size().to_dict() == {"on": 1, "sampled": 100}
    assert set(cur["ma"]) == {IDLE_MA}


def test_a_plan_without_sampling_has_no_current_files(tmp_path):
    r = run_plan(plan.from_dict({"plan": {"name": "none", "profile": "tiny-1gb"},
                                 "step": [{"do": "identify"}]}), tmp_path / "run", target="model", quiet=True)
    assert r.status == "done"
    assert not list(r.run_dir.glob("current*"))
    assert "current" not in json.loads((r.run_dir / "summary.json").read_text())["fisrig"]


def test_over_nvme_the_plan_samples_the_ssd_behind_the_controller(tmp_path):
    """The same plan over NVMe (the NVMe engine's sampler, sim/model/current_sampler.h as the
    SATA engine's): a sample every 4 us from the start to the stop, the SSD's idle current
    while nothing runs, more while its NAND works, none once the rails are off."""
    r = run_plan(plan.from_dict({**CURRENT, "plan": {**CURRENT["plan"], "protocol": "nvme"}}), tmp_path / "run",
                 target="model", quiet=True)
    assert r.status == "done", r.outcome
    f = current_facts(r.run_dir)
    cur = f["cur"]
    assert f["sampler_results"] == ["ok", "ok"]
    assert set(np.diff(cur["t_ns"])) == {4000}
    # To the stop, but a sample due on the stop's own tick (none is taken there, as in the
    # gateware; here the stop falls on one: the NVMe engine's VM takes no CPU time).
    assert cur["t_ns"].iloc[0] == f["start"] and len(cur) == (f["stop"] - 1 - f["start"]) // 4000 + 1
    assert set(cur[cur["marker"] == "idle"]["ma"]) == {IDLE_MA}
    assert cur[cur["marker"].isin(["writes", "flush"])]["ma"].max() > IDLE_MA
    # None after the rails went off (a sample on the cut's own tick is taken with the power
    # the drive still had, as the SATA engine's).
    rec = f["rec"]
    cut = rec.loc[(rec["kind"] == "power") & (rec["tag"] == 240), "t_status_ns"].iloc[0]
    assert set(cur.loc[cur["t_ns"] > cut, "ma"]) == {0} and len(cur[cur["marker"] == "dark"]) > 40
    assert f["summary"]["lost_samples"] == 0
    assert (r.run_dir / "current_over_time.png").exists()
