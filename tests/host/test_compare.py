"""fisrig.compare and `fisrig compare` on model runs of the built-in targets-agree plan: a run
agrees with itself to the tick; a changed answer, a missing phase and a phase's times moved
past the tolerance are each found; what is not a run is one line, exit 2."""
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fisrig import plan
from fisrig.cli import main
from fisrig.compare import compare
from fisrig.errors import InputError
from fisrig.run import run_plan


@pytest.fixture(scope="module")
def agree_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("agree")
    return run_plan(plan.load(plan.find("targets-agree")), out / "model", quiet=True).run_dir


def _edit(run_dir, dest, fn):
    """A copy of the run whose records.parquet `fn` changed (columns as numpy arrays)."""
    shutil.copytree(run_dir, dest)
    t = pq.read_table(dest / "records.parquet")
    cols = {c: t.column(c) for c in t.column_names}
    fn(cols)
    pq.write_table(pa.table(cols), dest / "records.parquet")
    return dest


def test_a_run_agrees_with_itself(agree_run):
    c = compare(agree_run, agree_run)
    assert c.mismatches == []
    assert c.rows and all(r.diff_pct == 0 for r in c.rows)
    assert c.worst_latency_pct == 0
    assert {"identify", "ncq read 4k", "dma write 128k", "trim queued", "trim", "flush", "error"} <= \
        {r.phase for r in c.rows}


def test_a_changed_answer_and_a_missing_phase_are_found(agree_run, tmp_path):
    def change(cols):
        status = cols["status"].to_numpy().copy()
        setup = cols["t_setup_ns"].to_numpy().copy()
        kind = np.asarray(cols["kind"].to_pylist())
        first, second = np.flatnonzero(kind == "command")[3:5]
        status[first] ^= 1
        setup[second] = 0
        cols["status"], cols["t_setup_ns"] = pa.array(status), pa.array(setup)
    other = _edit(agree_run, tmp_path / "other", change)
    c = compare(other, agree_run)
    assert len(c.mismatches) == 2
    assert "status" in c.mismatches[0] and "t_setup_ns present" not in c.mismatches[0]
    assert "t_setup_ns absent != present" in c.mismatches[1]


def test_latency_past_the_tolerance_is_found(agree_run, tmp_path):
    def slower(cols):
        marker = np.asarray(cols["marker"].to_pylist())
        status = cols["t_status_ns"].to_numpy().copy()
        h2d = cols["t_h2d_ns"].to_numpy()
        sel = marker == "dma read 4k"
        status[sel] = h2d[sel] + ((status[sel] - h2d[sel]) * 1.03).astype(np.int64)  # 3% longer
        cols["t_status_ns"] = pa.array(status)
    slow = _edit(agree_run, tmp_path / "slow", slower)
    c = compare(slow, agree_run)
    failing = c.failing(2.0)
    assert {(r.phase, r.what) for r in failing} == {("dma read 4k", "latency")}
    assert 2.9 < c.worst_latency_pct < 3.1
    assert not c.failing(3.5)
    assert main(["compare", str(slow), str(agree_run)]) == 1
    assert main(["compare", str(agree_run), str(agree_run)]) == 0


def test_records_in_another_completion_order_match_in_any_order(agree_run, tmp_path):
    """Two commands of a phase that ended the other way round: a difference record by record,
    none as a multiset (`--any-order`, for queued plans); the phase's IOPS do not change."""
    def swap(cols):
        kind = np.asarray(cols["kind"].to_pylist())
        i, j = np.flatnonzero(kind == "command")[10:12]  # both in "ncq write 4k"
        order = np.arange(len(kind))
        order[[i, j]] = order[[j, i]]
        for name in cols:
            cols[name] = cols[name].take(pa.array(order))
    swapped = _edit(agree_run, tmp_path / "swapped", swap)
    assert len(compare(swapped, agree_run).mismatches) == 2
    c = compare(swapped, agree_run, in_order=False)
    assert c.mismatches == [] and c.worst_iops_pct == 0
    assert main(["compare", str(swapped), str(agree_run)]) == 1
    assert main(["compare", "--any-order", "--iops", str(swapped), str(agree_run)]) == 0


def test_a_slower_phase_fails_on_its_iops_when_asked(agree_run, tmp_path):
    """Every stamp of a phase's commands 3% later from its first submit: its IOPS 3% lower,
    which `--iops` holds to the tolerance; the latencies from the H2D barely move."""
    def later(cols):
        marker = np.asarray(cols["marker"].to_pylist())
        sel = marker == "ncq read 4k"
        t0 = cols["t_submit_ns"].to_numpy()[sel].min()
        for name in [c for c in cols if c.startswith("t_") and c.endswith("_ns")]:
            v = cols[name].to_numpy().copy()
            v[sel & (v > 0)] = t0 + ((v[sel & (v > 0)] - t0) * 1.03).astype(np.int64)
            cols[name] = pa.array(v)
    slow = _edit(agree_run, tmp_path / "later", later)
    c = compare(slow, agree_run)
    model, ref = c.iops["ncq read 4k"]
    assert 2.8 < (ref - model) * 100 / ref < 3.1
    assert 2.8 < c.worst_iops_pct < 3.1
    assert main(["compare", "--iops", str(slow), str(agree_run)]) == 1


def test_what_is_not_a_run_is_one_line(agree_run, tmp_path, capsys):
    with pytest.raises(InputError, match="no records.parquet"):
        compare(tmp_path, agree_run)
    assert main(["compare", str(tmp_path), str(agree_run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no records.parquet" in err
    old = _edit(agree_run, tmp_path / "old", lambda cols: cols.pop("d2h_lba"))
    assert main(["compare", str(old), str(agree_run)]) == 2
    assert "has no d2h_lba column" in capsys.readouterr().err
