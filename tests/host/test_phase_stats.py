"""Each phase's figures, computed once: queue depth held, classification from the plan's
step kinds, warnings, and the headline printing exactly what summary.json holds."""
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fisrig.analysis import figure_text
from fisrig.analysis import phase_stats
from fisrig.report import build as report
from fisrig.analysis.phase_stats import queue_depth_held


def test_queue_depth_held_by_hand():
    # [0,4) [1,3) [2,6): in flight 1,2,3,2,1,1 over the six ns -> mean 10/6, at most 3.
    mean, top = queue_depth_held(np.array([0, 1, 2]), np.array([4, 3, 6]))
    assert mean == pytest.approx(10 / 6) and top == 3
    # Back to back is never two at once: a command's status frees its place at that instant.
    mean, top = queue_depth_held(np.array([0, 5]), np.array([5, 10]))
    assert mean == 1.0 and top == 1
    # A gap counts as time with nothing in flight: [0,10) and [20,30) over 30 ns.
    mean, top = queue_depth_held(np.array([20, 0]), np.array([30, 10]))
    assert mean == pytest.approx(2 / 3) and top == 1


def _table(rows):
    """A records table as records.parquet holds it, from (marker, kind, cmd, lba, sectors, t0, t1)."""
    cols = list(zip(*rows))
    t0, t1 = np.array(cols[5], dtype=np.int64), np.array(cols[6], dtype=np.int64)
    return pa.table({
        "marker": pa.array(cols[0]).dictionary_encode(), "kind": pa.array(cols[1]).dictionary_encode(),
        "result": pa.array(["ok"] * len(rows)).dictionary_encode(),
        "lba": np.array(cols[3], dtype=np.uint64), "sectors": np.array(cols[4], dtype=np.uint32), "lbas": np.array(cols[4], dtype=np.uint32),
        "t_submit_ns": t0, "t_status_ns": t1, "latency_ns": t1 - t0,
        "command": np.array(cols[2], dtype=np.uint8), "detail": np.zeros(len(rows), dtype=np.uint8)})


def _meta(*steps):
    return {"plan": {"name": "t", "steps": [dict(s) for s in steps]}}


def test_a_phase_that_held_less_than_it_asked_is_warned_about():
    # 64 writes of 8 sectors at QD32 asked, issued one after another: one in flight at a time.
    rows = [("slow", "command", 0x61, 1000 + 8 * i, 8, 100 * i, 100 * i + 100) for i in range(64)]
    ph = phase_stats.compute(_table(rows), _meta({"do": "workload", "label": "slow", "queue_depth": 32}))
    (p,) = ph
    assert p.qd_asked == 32 and p.qd_mean == pytest.approx(1.0) and p.qd_max == 1
    assert p.issue_rate == pytest.approx(63 / 6.3e-6)
    assert any("held 1.00 commands in flight on average (at most 1) of the 32 asked (3%)" in w for w in p.warnings)
    assert any(l.startswith("  ! slow: held 1.00") for l in report.headline(ph))


def test_a_phase_at_its_depth_is_not_warned_about():
    rows = [("full", "command", 0x61, 8 * i, 8, 0, 100) for i in range(32)]
    (p,) = phase_stats.compute(_table(rows), _meta({"do": "fill", "label": "full"}))
    assert p.qd_asked == 32 and p.qd_mean == pytest.approx(32.0) and p.qd_max == 32
    assert p.warnings == []


def test_kind_comes_from_the_plan_not_from_the_lbas():
    # Back-to-back sequential writes in runs, as a sweep's: a workload nonetheless.
    rows = [("w", "command", 0x35, z * 10_000 + 8 * i, 8, (z * 8 + i) * 10, (z * 8 + i) * 10 + 10)
            for z in range(6) for i in range(8)]
    (p,) = phase_stats.compute(_table(rows), _meta({"do": "workload", "label": "w", "minutes": 20}))
    assert p.kind == "workload" and not p.is_sweep and p.zones == []
    assert not report.headline([p])[0].split("cmds")[1].strip().startswith("sweep")
    (s,) = phase_stats.compute(_table(rows), _meta({"do": "sweep", "label": "w", "zones": 6}))
    assert s.kind == "sweep" and len(s.zones) == 6 and s.warnings == []


def test_unlabelled_steps_join_the_phase_before_them():
    meta = _meta({"do": "workload", "label": "rr", "read_pct": 100, "queue_depth": 32}, {"do": "flush"},
                 {"do": "secure_erase", "label": "erase"}, {"do": "identify"})
    plan = phase_stats.plan_phases(meta)
    assert plan["rr"].steps == ["workload", "flush"] and plan["rr"].kind == "workload"
    assert plan["rr"].asked_qd == [32]
    assert plan["erase"].kind == "secure_erase" and plan["erase"].asked_qd == []


def test_non_command_records_never_enter_latency():
    rows = [("p", "command", 0x25, 0, 8, 0, 100), ("p", "end", 0, 0, 0, 500, 0)]
    t = _table(rows)
    (p,) = phase_stats.compute(t, _meta({"do": "raw", "label": "p", "command": 0x25}))
    assert p.commands == 1 and list(p.latency_ns) == [100]


def test_a_one_command_phase_has_its_latency_and_no_rate():
    # A FLUSH of 167 ns alone: 1 / 167 ns is not "6 million IOPS".
    (p,) = phase_stats.compute(_table([("flush", "command", 0xEA, 0, 0, 1000, 1167)]),
                               _meta({"do": "flush", "label": "flush"}))
    line = report.headline([p])[0]
    assert "IOPS" not in line and "MB/s" not in line and "one command" in line, line
    assert "latency mean 0.2 us  p50 0.2 us" in line and "max 0.2 us" in line, line


def test_smoke_headline_prints_what_summary_json_holds(smoke_run):
    s = json.loads((smoke_run.run_dir / "summary.json").read_text())
    lines = [l for l in report.headline(smoke_run.phases) if not l.startswith("  !")]
    jobs = s["jobs"]
    assert len(lines) == len(jobs)
    for line, job in zip(lines, jobs):
        f = job["fisrig"]
        assert line.startswith(job["jobname"])
        assert f"{f['commands']:>10,} cmds" in line
        for k in ("50", "99", "99.9"):
            v = f["latency_ns"]["percentile"][f"{float(k):.6f}"]
            assert f"p{k} {figure_text.us(v)}" in line, (line, k)
        # mean and max, as fio's clat_ns has them (the slowest command: the stall)
        assert f"latency mean {figure_text.us(f['latency_ns']['mean'])}" in line
        assert line.endswith(f"max {figure_text.us(f['latency_ns']['max'])}"), line
        qd = f["queue_depth"]
        assert f"QD {qd['held_mean']:.2f} held (max {qd['held_max']})" in line
    by = {j["jobname"]: j for j in jobs}
    # A phase of one direction: the headline's latency is fio's clat for that direction.
    for name in ("clean", "torture", "tortured"):
        assert by[name]["fisrig"]["latency_ns"]["percentile"]["99.900000"] == \
            by[name]["write"]["clat_ns"]["percentile"]["99.900000"]
    assert [j["fisrig"]["kind"] for j in jobs] == [
        "secure_erase", "sweep", "fill", "workload", "workload", "sweep", "trim", "raw"]


def test_trim_is_reported_as_lbas_trimmed_not_mb_per_s(smoke_run):
    s = json.loads((smoke_run.run_dir / "summary.json").read_text())
    trim = next(j for j in s["jobs"] if j["jobname"] == "TRIM")
    assert trim["trim"]["io_bytes"] == trim["fisrig"]["trimmed_lbas"] * 512  # fio's bytes trimmed
    assert trim["fisrig"]["data_bytes"] == 0
    line = next(l for l in report.headline(smoke_run.phases) if l.startswith("TRIM"))
    assert "MB/s" not in line
    assert f"trimmed {trim['fisrig']['trimmed_lbas']:,} LBAs" in line


def test_no_record_has_a_negative_latency(smoke_run):
    t = pq.read_table(smoke_run.run_dir / "records.parquet", columns=["kind", "latency_ns"])
    lat = t.column("latency_ns").to_numpy()
    assert (lat >= 0).all()
    kinds = t.column("kind").to_numpy(zero_copy_only=False)
    assert kinds[-1] == "end" and lat[-1] == 0


def test_plots_carry_where_they_came_from(smoke_run):
    from PIL import Image
    meta = json.loads((smoke_run.run_dir / "run.json").read_text())
    for path in smoke_run.plots:
        text = Image.open(path).text["Description"]
        for what in (meta["identify"]["model"], "profile tiny-1gb", "target model", "plan smoke-tiny",
                     re.sub(r" .*", "", report.caption(meta).split(", ")[-1])):
            assert what in text, (path.name, what)


def test_a_plot_with_nothing_to_draw_is_not_written(tmp_path):
    rows = [("one", "command", 0x25, 0, 8, 0, 100)]
    (tmp_path / "iops_per_100k.png").write_bytes(b"an earlier run's")
    ph, paths = report.make_report(tmp_path, _table(rows), _meta({"do": "raw", "label": "one", "command": 0x25}))
    assert paths == []
    assert not list(tmp_path.glob("*.png"))
