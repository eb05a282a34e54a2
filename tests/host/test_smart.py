"""A plan's `smart` step (program.h struct fisrig_op_smart, analysis/smart.py): the drive's
SMART attributes read by the rig's firmware, and a phase's write amplification from the
readings around it, as reviewers read it from a real drive; greedy GC's analytic curve the
WA sweep is held to (analysis/greedy_gc.py)."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from cli_run import fisrig
from fisrig import plan
from fisrig.analysis import greedy_gc
from fisrig.errors import InputError
from fisrig.run import run_plan


def smart_plan(steps: list[dict]) -> plan.Plan:
    return plan.from_dict({"plan": {"name": "smart", "profile": "tiny-1gb"}, "step": steps})


WRITES = {"do": "workload", "pattern": "uniform", "queue_depth": 32, "transfer_kib": 4}


def test_the_drive_counts_what_the_rig_wrote_and_a_phase_read_around_has_its_wa(tmp_path):
    r = run_plan(smart_plan([
        {"do": "fill", "label": "fill"},
        {"do": "smart", "label": "read 1", "attributes": [241, 249, 12, 200]},
        {**WRITES, "label": "random", "gib": 0.5},
        {"do": "smart", "label": "read 2"},
        {**WRITES, "label": "more", "commands": 1000},
        {**WRITES, "label": "reads", "read_pct": 100, "commands": 100},
        {"do": "smart", "label": "read 3"},
    ]), tmp_path / "run", quiet=True)
    assert r.status == "done"
    t = pd.read_parquet(r.run_dir / "records.parquet")
    smart = t[t.kind == "smart"]
    assert list(smart.lbas) == [241, 249, 12, 200, 241, 249, 241, 249]
    assert list(smart.detail) == [0, 0, 0, 1, 0, 0, 0, 0]  # the drive's table has no attribute 200
    assert smart.lba.iloc[2] == 1  # power cycles: the one power-on
    assert smart.lba.iloc[4] - smart.lba.iloc[0] == 2**29 // 512  # 241: host sectors, exactly what went
    jobs = {j["jobname"]: j["fisrig"] for j in json.loads((r.run_dir / "summary.json").read_text())["jobs"]}
    wa = jobs["random"]["write_amplification"]
    assert wa["host_bytes"] == 2**29 and wa["value"] == wa["nand_bytes"] / wa["host_bytes"] > 1
    # Two phases between readings 2 and 3: neither has a figure; nor has the fill, read after only.
    assert "write_amplification" not in jobs["more"] and "write_amplification" not in jobs["fill"]
    done = fisrig("report", str(r.run_dir))
    assert f"WA {wa['value']:.2f} (SMART)" in done.stdout


@pytest.mark.parametrize("step, what", [
    ({"do": "smart", "attributes": [0]}, "attributes = [0]: 1 to 8 SMART attribute ids, each 1..255"),
    ({"do": "smart", "attributes": [241, 300]}, "each 1..255"),
    ({"do": "smart", "attributes": list(range(1, 10))}, "1 to 8 SMART attribute ids"),
    ({"do": "smart", "attributes": []}, "1 to 8 SMART attribute ids"),
    ({"do": "smart", "ids": [241]}, "unknown key 'ids'"),
])
def test_a_bad_smart_step_is_refused_with_its_key(tmp_path, step, what):
    from fisrig.compile import compile_plan
    with pytest.raises(InputError, match=".*" + what.replace("[", r"\[").replace("]", r"\]")):
        compile_plan(smart_plan([step]), 1 << 21)


def test_smart_is_refused_over_nvme(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[plan]\nname = "n"\nprotocol = "nvme"\nprofile = "consumer-tlc-nvme-1tb"\n\n'
                    '[[step]]\ndo = "smart"\n')
    done = fisrig("run", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    # (NVMe's health log, Get Log Page 02h, counts host writes but no NAND writes.)
    assert f"{path}:7: step 1 (smart): a smart step has no NVMe form yet" in done.stderr


def test_greedy_gc_curve_is_the_published_one():
    # Xiang and Kurkoski's expression at a spare factor of 0.3: 2.36 (their simulation 2.35);
    # Agarwal and Marrow's 2.17 there.
    assert round(greedy_gc.write_amplification(30), 2) == 2.36
    assert round(greedy_gc.agarwal(30), 2) == 2.17
    for op in (5, 7, 28, 100):
        a = 1 + op / 100
        x = 1 / greedy_gc.write_amplification(op)
        assert math.isclose(1 - x, math.exp(-a * x), rel_tol=1e-12)  # the victim's valid share solves it
    with pytest.raises(ValueError):
        greedy_gc.write_amplification(0)
