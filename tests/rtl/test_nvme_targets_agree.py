"""An NVMe plan on both targets (issue 63): the built-in plan targets-agree-nvme (IDENTIFY,
4 KiB and 128 KiB reads and writes at QD1 and QD32 on one queue and on four, a deallocate,
a flush, a raw admin command and one that fails) on the model target and on the NVMe rig's
gateware in Verilator (`--target rtl`: the root port and the NVMe queue engine, the VM
beside them), over the rig's own link (the fast-1gb-nvme-rig profile: PCIe Gen2 x4, the
rig's memory behind its root port).

What holds: the same commands, record for record, with the same answers; the gateware
repeats a run tick for tick; the one-command phases and the reads at QD1 agree within 2%.
What does not yet: the writes (3 to 8%: the controller at its TLP interface has a write's
data fetched before it sees the command, where part 1's controller fetches it as it
works), the QD1 rates (5 to 8%: the rig's own time from a record to the next descriptor),
and the tails at QD32 (12 to 29%). scripts/bench_rtl_nvme.py measures the worst
(nvme_model_vs_rtl.published_err_pct); docs/nvme-rig.md keeps the figures."""
import pytest

from fisrig import plan
from fisrig.report.compare import compare
from fisrig.run import run_plan

AGREE = ("identify", "read 128k qd1", "deallocate")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    p = plan.load(plan.find("targets-agree-nvme"))
    out = tmp_path_factory.mktemp("agree-nvme")
    runs = {name: run_plan(p, out / name.replace(" ", "-"), target=name.split()[0], quiet=True, keep_raw=True)
            for name in ("model", "rtl", "rtl again")}
    for name, r in runs.items():
        assert r.status == "done", (name, r.outcome)
    return runs


@pytest.fixture(scope="module")
def comparison(runs):
    return compare(runs["model"].run_dir, runs["rtl"].run_dir, in_order=False)


def test_the_same_commands_with_the_same_answers(comparison):
    assert comparison.records[0] == comparison.records[1] == 1765
    assert not comparison.mismatches and not comparison.differing_records


def test_the_gateware_repeats_an_nvme_plan_tick_for_tick(runs):
    first, again = (runs[n].run_dir / "records.bin" for n in ("rtl", "rtl again"))
    assert first.read_bytes() == again.read_bytes()


def test_the_run_says_how_the_nvme_rig_ran(runs):
    notes = runs["rtl"].outcome.notes
    assert any("NVMe rig" in n and "Gen2 x4" in n for n in notes), notes


def test_what_agrees_within_two_percent(comparison):
    over = [f for f in comparison.published_failing(2.0) if f.phase in AGREE]
    assert not over, "\n".join(comparison.published_table(2.0))
    assert comparison.published_err_pct < 35   # the worst of the rest: docs/nvme-rig.md
