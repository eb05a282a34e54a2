"""A plan end to end on the model target, and what a run directory holds."""
import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from fisrig import program_format as pf
from fisrig.records import store
from fisrig.run import rebuild


def test_smoke_run_completes(smoke_run):
    assert smoke_run.status == "done"
    d = smoke_run.run_dir
    for name in ("run.json", "program.bin", "records.bin", "records.parquet", "summary.json",
                 "iops_per_100k.png", "mbps_across_lba.png", "latency_percentiles.png"):
        assert (d / name).stat().st_size > 0, name


def test_records_have_every_phase_timestamp(smoke_run):
    t = pq.read_table(smoke_run.run_dir / "records.parquet")
    cols = {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}
    cmd = cols["kind"] == "command"
    assert cmd.sum() == smoke_run.outcome.commands
    ok = cmd & (cols["result"] == "ok")
    assert (ok == cmd).all()  # nothing failed
    ncq_reads = ok & (cols["command"] == 0x60)
    assert ncq_reads.sum() >= 19999
    # Phase order on one clock: submit <= H2D <= accept (NCQ) <= DMA Setup <= data <= SDB.
    for a, b in [("t_submit_ns", "t_h2d_ns"), ("t_h2d_ns", "t_accept_ns"), ("t_accept_ns", "t_setup_ns"),
                 ("t_setup_ns", "t_data_last_ns"), ("t_data_last_ns", "t_status_ns")]:
        assert (cols[a][ncq_reads] <= cols[b][ncq_reads]).all(), (a, b)
    assert set(cols["tag"][ncq_reads]) == set(range(32))
    labels = set(cols["marker"][cmd])
    assert {"clean", "fill", "torture", "random read", "tortured", "TRIM"} <= labels


def test_run_json_says_what_ran(smoke_run):
    meta = json.loads((smoke_run.run_dir / "run.json").read_text())
    assert meta["schema_version"] == store.SCHEMA_VERSION
    assert meta["target"] == "model" and meta["profile"] == "tiny-1gb"
    assert meta["identify"]["model"] == "fisrig SIM-T1 tiny"
    assert meta["identify"]["ncq_depth"] == 32
    assert meta["status"] == "done"
    assert meta["plan"]["name"] == "smoke-tiny"


def test_fio_summary_layout(smoke_run):
    s = json.loads((smoke_run.run_dir / "summary.json").read_text())
    jobs = {j["jobname"]: j for j in s["jobs"]}
    rr = jobs["random read"]["read"]
    assert rr["total_ios"] == 20000
    assert rr["iops"] > 10000
    assert rr["bw"] == pytest.approx(rr["bw_bytes"] / 1024, rel=1e-3)
    pct = rr["clat_ns"]["percentile"]
    assert pct["50.000000"] <= pct["99.000000"] <= pct["99.990000"] <= rr["clat_ns"]["max"]
    assert jobs["torture"]["write"]["total_ios"] > 1000
    assert jobs["TRIM"]["trim"]["total_ios"] >= 1


def test_sweep_zones_found(smoke_run):
    sweeps = {p.label: p for p in smoke_run.phases if p.is_sweep}
    assert set(sweeps) == {"clean", "tortured"}
    assert len(sweeps["clean"].zones) == 16
    assert sweeps["tortured"].sweep_mbps < sweeps["clean"].sweep_mbps


def test_report_from_a_run_killed_half_way(smoke_run, tmp_path):
    """A run cut off mid-record: report keeps every whole record taken so far."""
    d = tmp_path / "killed"
    d.mkdir()
    shutil.copy(smoke_run.run_dir / "run.json", d)
    raw = (smoke_run.run_dir / "records.bin").read_bytes()
    keep = pf.RECORDS_HEADER.size + 1000 * pf.RECORD_DTYPE.itemsize + 37  # a torn 1001st record
    (d / "records.bin").write_bytes(raw[:keep])
    phases, plots = rebuild(d)
    t = pq.read_table(d / "records.parquet")
    assert t.num_rows == 1000
    assert all(p.stat().st_size > 0 for p in plots)
    whole = store.read_raw(smoke_run.run_dir / "records.bin")
    np.testing.assert_array_equal(t.column("lba").to_numpy(), whole["lba"][:1000])


def test_report_rebuilds_from_parquet_alone(smoke_run, tmp_path):
    d = tmp_path / "copy"
    d.mkdir()
    shutil.copy(smoke_run.run_dir / "records.parquet", d)
    (d / "records.parquet").touch()
    phases, plots = rebuild(d)
    assert {p.label for p in phases} >= {"clean", "torture"}
    assert json.loads((d / "summary.json").read_text())["jobs"]


def test_fio_json_plus_tool_reads_the_summary(smoke_run, tmp_path):
    """fio's own fio_jsonplus_clat2csv turns our summary into its CSV and validates it."""
    import shutil
    import subprocess
    src = smoke_run.run_dir / "summary.json"
    out = tmp_path / "lat.csv"
    # Debian's script, under Debian's python (its `env python3` would find a venv's first).
    tool = ["/usr/bin/python3", shutil.which("fio_jsonplus_clat2csv")]
    r = subprocess.run(tool + [str(src), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    v = subprocess.run(tool + ["--validate", str(src), str(out)], capture_output=True, text=True)
    assert v.returncode == 0 and "validated" in v.stdout, v.stdout + v.stderr
    names = [j["jobname"] for j in json.loads(src.read_text())["jobs"]]
    assert len(list(tmp_path.glob("lat_job*.csv"))) == len(names)
    rows = (tmp_path / f"lat_job{names.index('random read')}.csv").read_text().splitlines()
    header = [c.strip() for c in rows[0].split(",")]
    col = header.index("read_clat_ns_count")
    counts = [int(r.split(",")[col]) for r in rows[1:] if r.split(",")[col].strip()]
    assert sum(counts) == 20000  # every read of the phase, in fio's own histogram


def test_the_rtl_outcome_says_when_the_run_was_not_the_one_asked():
    """The rig SoC's firmware reports a late start and its waits for the host in its outcome
    line (firmware/baremetal/main.c); the rtl target turns them into the run's notes, and a
    clean outcome into none (the waits themselves: tests/rtl/test_rtl_target.py)."""
    from fisrig.targets.rtl import rtl_notes
    assert rtl_notes({"status": "done", "start_late_ticks": 0, "ring_waits": 0, "ring_wait_ticks": 0}) == []
    late, = rtl_notes({"start_late_ticks": 1500, "ring_waits": 0})
    assert late.startswith("the program started 10.0 us after its start tick (8 ms)"), late
    waits, = rtl_notes({"start_late_ticks": 0, "ring_waits": 3, "ring_wait_ticks": 450_000})
    assert waits.startswith("the rig's CPU waited 3000.0 us in 3 waits for the host"), waits
