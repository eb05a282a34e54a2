"""fisrig.compare and `fisrig compare` on model runs of the built-in targets-agree plan: a copy
of a run agrees with it to the tick; a changed answer, a missing phase and a phase's times
moved past the tolerance are each found; the published figures are the run's summary.json's;
what is not a run, runs of different plans and a run compared with itself are one line,
exit 2; the output names no numpy type and shows at most --limit differing records."""
import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fisrig import plan
from fisrig.cli import main
from fisrig.report.compare import compare
from fisrig.errors import InputError
from fisrig.run import run_plan


@pytest.fixture(scope="module")
def agree_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("agree")
    return run_plan(plan.load(plan.find("targets-agree")), out / "model", quiet=True).run_dir


@pytest.fixture(scope="module")
def agree_copy(agree_run, tmp_path_factory):
    """The run copied: a run agrees with itself, but compare refuses one directory twice."""
    return shutil.copytree(agree_run, tmp_path_factory.mktemp("copy") / "model")


def _edit(run_dir, dest, fn):
    """A copy of the run whose records.parquet `fn` changed (columns as numpy arrays), its
    latency_ns made again from the stamps (records/store.py: status - submit)."""
    shutil.copytree(run_dir, dest)
    t = pq.read_table(dest / "records.parquet")
    cols = {c: t.column(c) for c in t.column_names}
    fn(cols)
    if "latency_ns" in cols:
        submit, status = cols["t_submit_ns"].to_numpy(), cols["t_status_ns"].to_numpy()
        latency = np.where(status >= submit, status - submit, 0).astype(cols["latency_ns"].type.to_pandas_dtype())
        cols["latency_ns"] = pa.array(latency)
    pq.write_table(pa.table(cols).replace_schema_metadata(t.schema.metadata), dest / "records.parquet")
    return dest


def _edit_plan(run_dir, dest, fn):
    """A copy of the run whose run.json's plan `fn` changed."""
    shutil.copytree(run_dir, dest)
    meta = json.loads((dest / "run.json").read_text())
    fn(meta["plan"])
    (dest / "run.json").write_text(json.dumps(meta))
    return dest


def test_a_run_agrees_with_itself(agree_copy, agree_run):
    c = compare(agree_copy, agree_run)
    assert c.mismatches == [] and c.differing_records == 0
    assert c.rows and all(r.diff_pct == 0 for r in c.rows)
    assert c.worst_latency_pct == 0
    assert c.published and all(f.diff_pct == 0 for f in c.published) and c.published_err_pct == 0
    assert c.agree(0.0)
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
    # The published latency (submit to status) by a little less: the time to the H2D is not 3% longer.
    assert {(f.phase, f.what) for f in c.published_failing(2.0)} == \
        {("dma read 4k", w) for w in ("mean", "p50", "p99", "p99.9", "max")}
    assert 2.5 < c.published_err_pct < 3.1 and c.worst_published.phase == "dma read 4k"
    assert not c.published_failing(3.5)
    assert main(["compare", str(slow), str(agree_run)]) == 1
    assert main(["compare", "--pct", "3.5", str(slow), str(agree_run)]) == 0


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
    assert main(["compare", "--any-order", str(swapped), str(agree_run)]) == 0


def test_a_slower_phase_fails_on_its_iops(agree_run, tmp_path):
    """Every stamp of a phase's commands 3% later from its first submit: its IOPS 3% lower,
    held to the tolerance as every published figure is; the latencies from the H2D barely move."""
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
    assert ("ncq read 4k", "IOPS") in {(f.phase, f.what) for f in c.published_failing(2.0)}
    assert main(["compare", str(slow), str(agree_run)]) == 1


def test_what_is_not_a_run_is_one_line(agree_run, tmp_path, capsys):
    with pytest.raises(InputError, match="not a run directory"):
        compare(tmp_path, agree_run)
    assert main(["compare", str(tmp_path), str(agree_run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a run directory" in err
    old = _edit(agree_run, tmp_path / "old", lambda cols: cols.pop("d2h_lba"))
    assert main(["compare", str(old), str(agree_run)]) == 2
    assert "has no d2h_lba column" in capsys.readouterr().err


def _summary(run_dir):
    """Each phase's "fisrig" block of the run's summary.json."""
    return {j["jobname"]: j["fisrig"] for j in json.loads((run_dir / "summary.json").read_text())["jobs"]}


def _summary_figures(f):
    lat = f["latency_ns"]
    have = lat["N"] > 0
    out = {"IOPS": f["iops"], "MB/s": f["sweep"]["mb_per_s"] if "sweep" in f else f["data_mb_per_s"],
           "mean": lat["mean"] if have else None, "max": lat["max"] if have else None}
    out.update({f"p{k}": lat["percentile"][f"{float(k):.6f}"] if have else None for k in ("50", "99", "99.9")})
    return out


def test_the_published_figures_are_the_runs_summary_json(agree_run, tmp_path, capsys):
    """Each phase's IOPS, MB/s and latency (mean, p50, p99, p99.9, max, submit to status) of
    both runs are the figures their summary.json holds, to the last digit: one run's
    records changed and its report made again, the other as it ran."""
    def slower(cols):
        marker = np.asarray(cols["marker"].to_pylist())
        status = cols["t_status_ns"].to_numpy().copy()
        sel = marker == "ncq read 4k"
        status[sel] += 500
        cols["t_status_ns"] = pa.array(status)
    slow = _edit(agree_run, tmp_path / "slow", slower)
    assert main(["report", str(slow)]) == 0
    capsys.readouterr()
    c = compare(slow, agree_run)
    assert len(c.published) == 7 * len(_summary(agree_run))
    for run, get in ((slow, lambda f: f.a), (agree_run, lambda f: f.b)):
        summary = _summary(run)
        for f in c.published:
            assert get(f) == _summary_figures(summary[f.phase])[f.what], (run, f)
    read = {f.what: f for f in c.published if f.phase == "ncq read 4k"}
    assert read["p50"].a == read["p50"].b + 500 and read["max"].a == read["max"].b + 500
    assert {f.what for f in c.published_failing(2.0)} >= {"mean", "p50"}
    assert main(["compare", str(slow), str(agree_run)]) == 1
    out = capsys.readouterr().out
    assert "published figures" in out and "stamp times from the H2D" in out
    line = next(l for l in out.splitlines() if l.startswith("ncq read 4k "))
    assert f"{read['p50'].a / 1e3:.3f}" in line and f"{read['IOPS'].a:,.0f}" in line


def test_runs_of_different_plans_are_refused_naming_the_difference(agree_run, tmp_path, capsys):
    renamed = _edit_plan(agree_run, tmp_path / "renamed", lambda p: p.update(name="other-plan"))
    with pytest.raises(InputError, match="plan 'other-plan' vs 'targets-agree'"):
        compare(renamed, agree_run)
    assert main(["compare", str(renamed), str(agree_run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"fisrig: {renamed} against {agree_run}: runs of different plans")
    assert "--any-plan" in err

    def deeper(plan):
        plan["steps"][2]["queue_depth"] = 4
        plan["steps"][5]["transfer_kib"] = 8
    deeper_run = _edit_plan(agree_run, tmp_path / "deeper", deeper)
    assert main(["compare", str(deeper_run), str(agree_run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step 3 (workload)'s queue_depth: 4 vs 1" in err, err

    # --any-plan compares them anyway, and says how they differ; the same records here.
    c = compare(deeper_run, agree_run, any_plan=True)
    assert "step 3 (workload)'s queue_depth: 4 vs 1" in c.plans_differ and c.agree(2.0)
    assert main(["compare", "--any-plan", str(deeper_run), str(agree_run)]) == 0
    assert "different plans, compared anyway: step 3 (workload)'s queue_depth" in capsys.readouterr().out


def test_a_run_compared_with_itself_is_refused(agree_run, capsys):
    for other in (agree_run, agree_run.parent / ".." / agree_run.parent.name / agree_run.name):
        with pytest.raises(InputError, match="compared with itself"):
            compare(agree_run, other)
        assert main(["compare", str(agree_run), str(other)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"fisrig: {agree_run}: compared with itself"), err


def test_differing_records_name_no_numpy_type_and_keep_to_the_limit(agree_run, tmp_path, capsys):
    """39 records with another LBA (a uint64 column): at most --limit of them shown (10 by
    default), a line saying how many more, every value as Python prints it."""
    def moved(cols):
        lba = cols["lba"].to_numpy().copy()
        kind = np.asarray(cols["kind"].to_pylist())
        lba[np.flatnonzero(kind == "command")[1:40]] += 1528496
        cols["lba"] = pa.array(lba)
    other = _edit(agree_run, tmp_path / "moved", moved)
    c = compare(other, agree_run, limit=10)
    assert c.differing_records == 39 and len(c.mismatches) == 10
    for argv, shown in (([], 10), (["--limit", "3"], 3), (["--limit", "0"], 0), (["--limit", "100"], 39)):
        assert main(["compare", *argv, str(other), str(agree_run)]) == 1
        out = capsys.readouterr().out
        assert "np." not in out and "uint" not in out
        lines = out.splitlines()
        records = [l for l in lines if l.startswith("  record ")]
        assert len(records) == shown, (argv, records)
        assert "records: 39 differ" in out
        more = [l for l in lines if "more records differ" in l]
        assert more == ([f"  ... and {39 - shown} more records differ (--limit N shows N)"] if shown < 39 else [])
    assert "record 1 (ncq write 4k, command 0x61): lba " in out and " != " in out
    first = next(l for l in out.splitlines() if l.startswith("  record 1 "))
    a, b = first.split("lba ")[1].split(" != ")
    assert int(a) - int(b) == 1528496
    assert main(["compare", "--limit", "-1", str(other), str(agree_run)]) == 2
    assert capsys.readouterr().err.startswith("fisrig: --limit -1: ")
