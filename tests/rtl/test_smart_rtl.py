"""A plan's `smart` step on the gateware (issue 61: write amplification from the drive's own
counters): the rig's firmware sends SMART READ DATA into its RAM and reads the attributes
out of the table, as on the model target; both give the same records (ids, raw values, an
attribute the drive lacks marked) and the same write amplification. Seconds once the SoC
is built."""
import json

import pyarrow.parquet as pq

from fisrig import plan
from fisrig.run import run_plan

IDS = [241, 249, 12, 200]
PLAN = {"plan": {"name": "smart-rtl", "profile": "tiny-1gb"}, "step": [
    {"do": "smart", "label": "before", "attributes": IDS},
    {"do": "workload", "label": "writes", "pattern": "uniform", "queue_depth": 8, "transfer_kib": 4, "commands": 200},
    {"do": "flush"},
    {"do": "smart", "label": "after", "attributes": IDS},
]}


def test_the_gateware_reads_smart_as_the_model_does(tmp_path):
    got = {}
    for target in ("model", "rtl"):
        r = run_plan(plan.from_dict(PLAN), tmp_path / target, target=target, quiet=True)
        assert r.status == "done", (target, r.outcome)
        t = pq.read_table(r.run_dir / "records.parquet", columns=["kind", "marker", "lba", "lbas", "detail"])
        t = t.to_pandas()
        smart = t[t.kind == "smart"]
        jobs = {j["jobname"]: j["fisrig"] for j in json.loads((r.run_dir / "summary.json").read_text())["jobs"]}
        got[target] = (smart[["marker", "lbas", "lba", "detail"]].astype(str).values.tolist(),
                       jobs["writes"]["write_amplification"])
    assert got["rtl"] == got["model"]
    records, wa = got["model"]
    assert [r[1] for r in records] == [str(i) for i in IDS] * 2 and [r[3] for r in records] == ["0", "0", "0", "1"] * 2
    assert wa["host_bytes"] == 200 * 4096
