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


def test_what_is_not_a_run_is_one_line(agree_run, tmp_path, capsys):
    with pytest.raises(InputError, match="no records.parquet"):
        compare(tmp_path, agree_run)
    assert main(["compare", str(tmp_path), str(agree_run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no records.parquet" in err
    old = _edit(agree_run, tmp_path / "old", lambda cols: cols.pop("d2h_lba"))
    assert main(["compare", str(old), str(agree_run)]) == 2
    assert "has no d2h_lba column" in capsys.readouterr().err
