"""fisrig sweep (host/fisrig/sweep, docs/sweeps.md): a plan over axes on dask.distributed.

The same records as the points run one by one, on a local cluster of 2 workers and on a
cluster started apart as a user starts one (`dask scheduler`, `dask worker`); a worker
killed under a point, which runs again; a resumed sweep running only what is missing; the
dataset read by pandas, DuckDB and polars in one line each; bad sweeps refused in one line
with file:line.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cli_run import fisrig
from plan_records import digest

SWEEPS = Path(__file__).with_name("sweeps")

pytestmark = pytest.mark.xdist_group("sweep")  # each starts 2 worker processes: not beside each other


def run_sweep(name: str, out: Path, **kw):
    from fisrig import sweep
    return sweep.run(sweep.load(SWEEPS / name), out, quiet=True, **kw)


def test_a_sweep_on_two_workers_gives_the_records_its_points_give_run_one_by_one(tmp_path):
    from fisrig import sweep
    from fisrig.run import run_plan
    r = run_sweep("seeds-and-depths.toml", tmp_path / "sweep", workers=2)
    assert [p["status"] for p in r.points] == ["done"] * 4
    manifest = json.loads((tmp_path / "sweep" / "manifest.json").read_text())
    assert [p["params"] for p in manifest["points"]] == [
        {"plan.seed": s, "step.writes.queue_depth": q} for s in (1, 2) for q in (1, 16)]
    sw = sweep.load(SWEEPS / "seeds-and-depths.toml")
    digests = set()
    for i, p in enumerate(manifest["points"]):
        alone = tmp_path / f"alone-{i}"
        run_plan(sweep.spec.point_plan(sw, i), alone, quiet=True)
        got = digest(tmp_path / "sweep" / p["run_dir"])
        assert got == digest(alone), p
        digests.add(got["sha256"])
    assert len(digests) == 4  # each axis changed what the run did
    # The queue depth the step asked is the one the run held.
    meta = json.loads((tmp_path / "sweep" / "runs" / "p0002" / "run.json").read_text())
    assert [s.get("queue_depth") for s in meta["plan"]["steps"]] == [None, 16]


def test_profile_keys_and_fault_knobs_reach_the_drive_and_the_tables_read_in_one_line(tmp_path):
    import duckdb
    import pandas as pd
    import polars as pl
    out = tmp_path / "spare"
    r = run_sweep("spare.toml", out, workers=2)
    assert [p["status"] for p in r.points] == ["done"] * 3
    for name, gb in (("p0001", 0.8), ("p0002", 0.9)):
        meta = json.loads((out / "runs" / name / "run.json").read_text())
        assert meta["profile"].endswith(f"profiles/{name}.toml")
        assert meta["identify"]["lba48_sectors"] * 512 == pytest.approx(gb * 1e9, rel=0.01)
    assert json.loads((out / "runs" / "p0002" / "run.json").read_text())["faults"] == ["busy_rate=0.01"]
    meta = json.loads((out / "runs" / "p0003" / "run.json").read_text())
    assert meta["profile"] == "fast-1gb" and "fast" in meta["identify"]["model"]
    records = pd.read_parquet(out / "dataset")
    assert sorted(records["point"].unique()) == ["p0001", "p0002", "p0003"]
    counts = dict(duckdb.sql(f"select point, count(*) from read_parquet('{out}/dataset/*/*.parquet', "
                             "hive_partitioning = true) group by point").fetchall())
    assert counts == records.groupby("point", observed=True).size().to_dict()
    assert pl.scan_parquet(f"{out}/dataset/*/*.parquet", hive_partitioning=True).select(pl.len()).collect().item() \
        == len(records)
    points = pd.read_parquet(out / "points.parquet")
    assert points["profile.capacity.user_gb"].tolist()[:2] == [0.8, 0.9]
    assert points["fault.busy_rate"].isna().tolist() == [True, False, True]
    assert points["profile"].tolist() == [None, None, "fast-1gb"]
    # The report: a phase's figure a point, each the run's own summary's, and the chart.
    done = fisrig("report", str(out), "--metric", "p99_us")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"sweep report: {out}/sweep_p99_us.png  (p99_us of phase 'writes')"
    for name, line in zip(("p0001", "p0002", "p0003"), done.stdout.splitlines()[2:]):
        job = next(j for j in json.loads((out / "runs" / name / "summary.json").read_text())["jobs"]
                   if j["jobname"] == "writes")
        assert line.split()[0] == name
        assert float(line.split()[-1].replace(",", "")) == pytest.approx(
            job["fisrig"]["latency_ns"]["percentile"]["99.000000"] / 1000, rel=1e-5)
    assert (out / "sweep_p99_us.png").stat().st_size > 10000
    bad = fisrig("report", str(out), "--x", "plan.seed")
    assert bad.returncode == 2 and "--x plan.seed: not an axis of the sweep" in bad.stderr, bad.stderr


def test_a_resumed_sweep_runs_only_the_points_not_done(tmp_path):
    out = tmp_path / "sweep"
    run_sweep("seeds-and-depths.toml", out, workers=2)
    ids = {n: json.loads((out / "runs" / n / "run.json").read_text())["run_id"] for n in ("p0001", "p0003")}
    # p0003's run as a killed sweep leaves it: not done.
    meta_path = out / "runs" / "p0003" / "run.json"
    meta = json.loads(meta_path.read_text())
    meta["status"] = "running"
    meta_path.write_text(json.dumps(meta))
    said = []
    from fisrig import sweep
    r = sweep.run(sweep.load(SWEEPS / "seeds-and-depths.toml"), out, workers=2, say=said.append)
    assert said[0].endswith(f"4 points, 3 done already, into {out}")
    assert [p["status"] for p in r.points] == ["done"] * 4
    assert json.loads((out / "runs" / "p0001" / "run.json").read_text())["run_id"] == ids["p0001"]  # kept
    assert json.loads((out / "runs" / "p0003" / "run.json").read_text())["run_id"] != ids["p0003"]  # run again


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two single-threaded workers started apart, as a user starts them."""
    port = free_port()
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    dask = [sys.executable, "-m", "dask"]
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    address = f"tcp://127.0.0.1:{port}"
    for _ in range(2):
        procs.append(subprocess.Popen([*dask, "worker", address, "--nthreads", "1", "--no-dashboard"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path))
    from distributed import Client
    with Client(address, timeout="30s") as c:
        c.wait_for_workers(2, timeout=60)
    yield address
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=30)


def test_a_sweep_on_a_cluster_started_apart_and_a_worker_killed_under_a_point(tmp_path, cluster):
    from distributed import Client
    out = tmp_path / "sweep"
    killed = []

    def kill_a_busy_worker():
        with Client(cluster, timeout="30s") as c:
            for _ in range(600):
                busy = {w: keys for w, keys in c.processing().items() if keys}
                if busy:
                    worker = sorted(busy)[0]
                    time.sleep(0.3)  # into its run
                    pid = c.run(os.getpid, workers=[worker])[worker]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(busy[worker])
                    return
                time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    r = run_sweep("seeds-and-depths.toml", out, scheduler=cluster)
    killer.join()
    assert killed, "no worker was seen running a point"
    assert [p["status"] for p in r.points] == ["done"] * 4  # the killed worker's point ran again
    alone = run_sweep("seeds-and-depths.toml", tmp_path / "local", workers=2)
    for p, q in zip(r.points, alone.points):
        assert digest(out / p["run_dir"]) == digest(tmp_path / "local" / q["run_dir"])


def test_a_worker_of_another_build_is_refused_by_name(tmp_path, cluster, monkeypatch):
    # This process's fisrig says another version; the workers' (their own processes) do not.
    from fisrig.sweep import point
    monkeypatch.setattr(point, "__version__", "9.9.9")
    from fisrig.errors import InputError
    with pytest.raises(InputError, match=r"worker tcp://127\.0\.0\.1:\d+ runs fisrig \S+ build [0-9a-f]{16}, "
                                         r"this one 9\.9\.9 build [0-9a-f]{16}: a sweep's workers run the same build"):
        run_sweep("seeds-and-depths.toml", tmp_path / "sweep", scheduler=cluster)
    assert not (tmp_path / "sweep" / "runs").exists()


@pytest.mark.parametrize("plan, body, where, what", [
    ("short-plan.toml", '[[axis]]\nkey = "plan.sed"\nvalues = [1]\n', 7, "no [plan] key 'sed' (closest: 'seed'"),
    ("short-plan.toml", '[[axis]]\nkey = "step.wrtes.queue_depth"\nvalues = [1]\n', 7, "no step labelled 'wrtes'"),
    ("short-plan.toml", '[[axis]]\nkey = "speed"\nvalues = [1]\n', 7, "it is plan, plan.KEY, step.LABEL.KEY"),
    ("short-plan.toml", '[[axis]]\nkey = "step.writes.queue_depth"\nvalues = [1, 4096]\n', 8,
     "point 2 (step.writes.queue_depth=4096)"),
    ("short-plan.toml", '[[axis]]\nkey = "plan.seed"\nvalues = []\n', 8, "values must be a non-empty list"),
    ("short-plan.toml", '[[axis]]\nkey = "profile.capacity.user_gbb"\nvalues = [1]\n', 8,
     "no drive-profile key 'capacity.user_gbb'"),
    ("short-plan.toml", '[[axis]]\nkey = "profile.capacity.user_gb"\nvalues = [-1]\n', 8, "the drive refuses its profile"),
    ("short-plan.toml", '[[axis]]\nkey = "fault.busy_rat"\nvalues = [0.1]\n', 8, "no such fault knob 'busy_rat'"),
    ("short-plan.toml", '[[axis]]\nkey = "target"\nvalues = ["modle"]\n', 8, "no such target 'modle'"),
    ("short-plan.toml", '[[point]]\n"plan.seed" = -2\n', 7, "point 1 (plan.seed=-2)"),
    ("short-plan.toml", '[[axis]]\nkey = "plan"\nvalues = ["no-such-plan"]\n', 8, "plan 'no-such-plan': no such plan"),
    ("plp-plan.toml", '[campaign]\nstep = "cut"\n', 7, "no power_loss step labelled 'cut'"),
    ("plp-plan.toml", '[campaign]\nstep = "cuts"\nchunk_cycles = 0\n', 8, "chunk_cycles = 0: must be at least 1"),
    ("plp-plan.toml", '[campaign]\nstep = "cuts"\nchunks = 3\n', 8, "[campaign]: unknown key 'chunks'"),
    ("plp-plan.toml", '[[point]]\n"plan.seed" = 1\n[campaign]\nstep = "cuts"\n', 6, "a campaign's chunks are its points"),
])
def test_a_bad_sweep_is_refused_in_one_line_with_its_file_and_line(tmp_path, plan, body, where, what):
    (tmp_path / plan).write_text((SWEEPS / plan).read_text())
    path = tmp_path / "bad.toml"
    path.write_text(f'# a bad sweep\n[sweep]\nname = "bad"\nplan = "{plan}"\n\n{body}')
    done = fisrig("sweep", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"fisrig: {path}:{where}: "), done.stderr
    assert what in done.stderr
    assert not (tmp_path / "out").exists()  # nothing ran, nothing left behind


def test_another_sweep_in_the_directory_is_refused_unless_forced(tmp_path):
    out = tmp_path / "sweep"
    run_sweep("spare.toml", out, workers=1)
    done = fisrig("sweep", str(SWEEPS / "seeds-and-depths.toml"), "--out", str(out))
    assert done.returncode == 2 and "holds another sweep ('spare'" in done.stderr, done.stderr
    done = fisrig("sweep", str(SWEEPS / "seeds-and-depths.toml"), "--out", str(out), "--force", "-q", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["p0001", "p0002", "p0003", "p0004"]
    assert "sweep ended: 4 of 4 points done" in done.stdout


def test_the_built_in_sweep_runs_the_jedec_test_on_every_consumer_sata_drive():
    from fisrig import sweep
    from fisrig.targets import drive_catalog
    sw = sweep.load(sweep.spec.find("jedec-modes"))
    assert sw.plan_path.stem == "jedec-trim-trace"
    drives = [p["profile"] for p in sw.points]
    assert drives == ["consumer-256gb", "blocking-gc-256gb", "sandforce-240gb", "sandforce-240gb-fw502"]
    known = drive_catalog.profiles()
    assert all(d in known and "NVMe" not in known[d] for d in drives)


def test_a_point_that_fails_is_named_with_why_and_the_rest_run(tmp_path):
    out = tmp_path / "sweep"
    done = fisrig("sweep", str(SWEEPS / "one-fails.toml"), "--out", str(out), "--workers", "2")
    assert done.returncode == 3, done.stderr
    assert "sweep ended: 1 of 2 points done" in done.stdout
    assert "! p0001 (fault.unc=0+8): expect_failed: expectation not met" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["status"] for p in manifest["points"]] == ["expect_failed", "done"]
    import pandas as pd
    assert sorted(pd.read_parquet(out / "dataset")["point"].unique()) == ["p0001", "p0002"]  # what it recorded kept



def test_write_amplification_against_the_spare_with_a_plan_axis(tmp_path):
    """A plan axis (two plan files) by the spare: the drive's own WA (SMART 249 over 241)
    of the phase read around falls as the spare grows, beside greedy GC's analytic figure;
    the plan without SMART readings has none."""
    from fisrig.sweep import report
    out = tmp_path / "sweep"
    r = run_sweep("wa-op.toml", out, workers=2)
    assert [p["status"] for p in r.points] == ["done"] * 4
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["plans"]) == ["short-plan.toml", "wa-plan.toml"]
    chart, phase, rows = report.draw(out, "write_amplification", x="profile.capacity.op_pct", by="plan")
    assert phase == "steady" and chart.exists()
    wa = {r["profile.capacity.op_pct"]: r["write_amplification"] for r in rows if r["plan"] == "wa-plan.toml"}
    assert wa[28] < wa[12] and 1.5 < wa[28] < 4 and 2.5 < wa[12] < 8, wa
    assert [r["greedy_gc_uniform"] for r in rows[:2]] == [4.846, 2.481]
    assert all(r["write_amplification"] is None for r in rows if r["plan"] == "short-plan.toml")
    summary = json.loads((out / "runs" / "p0001" / "summary.json").read_text())
    steady = next(j["fisrig"] for j in summary["jobs"] if j["jobname"] == "steady")
    assert steady["write_amplification"]["host_bytes"] == 2**30  # the drive counted what the rig wrote
    # A sweep's points draw no charts (their report does, `fisrig report` of a point too).
    assert not list((out / "runs" / "p0001").glob("*.png"))


def test_a_power_loss_campaign_in_chunks_gives_the_verdicts_one_run_gives(tmp_path):
    """Three chunks of 20 cycles a drive, on 2 workers, merged a profile each: the same
    classes, sectors, failing cycles and verdict rows (with the step's cycle numbers) as the
    60 cycles run in one process on one drive: the tiny drive's cycles do not reach into
    each other, and a later chunk starts after a power cycle, from what the drive kept, as
    the whole step's cycle does (a FLUSH that lies loses the precondition there, not at the
    chunk's first cut)."""
    import pandas as pd
    from fisrig import plan
    from fisrig.run import run_plan
    out = tmp_path / "sweep"
    r = run_sweep("plp-campaign.toml", out, workers=2)
    assert [p["params"] for p in r.points][:3] == [
        {"profile": "plp-lies-flush", "step.cuts.run_cycles": c} for c in ([1, 20], [21, 40], [41, 60])]
    assert [(g["params"], g["chunks_done"], g["verdict"]) for g in r.campaign] == [
        ({"profile": "plp-lies-flush"}, 3, "failures"), ({"profile": "plp-honest"}, 3, "clean")]
    merged = pd.read_parquet(out / "campaign" / "verdicts.parquet")
    for gi, profile in enumerate(("plp-lies-flush", "plp-honest")):
        one = run_plan(plan.load(SWEEPS / "plp-plan.toml"), tmp_path / profile, profile=profile, quiet=True)
        whole = json.loads((one.run_dir / "power.json").read_text())["steps"][0]
        chunked = r.campaign[gi]["steps"][0]
        for key in ("cycles", "cycles_planned", "verdict", "classes", "cycles_with_failures", "first_failing_cycles",
                    "cuts_at_event", "slots_at_cut"):
            assert chunked[key] == whole[key], (profile, key)
        # Each cycle's sectors by class, with the step's cycle numbers (rows are runs of
        # sectors with one lost write: a chunk's drive holds other, older writes than the
        # whole step's, so its runs split elsewhere).
        by = ["cycle", "class"]
        alone = pd.read_parquet(one.run_dir / "verdicts.parquet").astype({"class": str}).groupby(by).lbas.sum()
        mine = merged[merged.group == gi + 1].astype({"class": str}).groupby(by).lbas.sum()
        assert mine.equals(alone), profile
    assert r.campaign[0]["steps"][0]["classes"]["lost_flushed"]["severity"] == "failure"
    assert merged[merged.group == 2]["found"].astype(str).eq("stamp").all()
    done = fisrig("report", str(out / "runs" / "p0002"))  # a chunk's report names its cycles
    assert "cuts               power loss  20 of 20 cycles (cycles 21-40 of the step's 60)" in done.stdout, done.stdout


def test_a_campaign_plan_with_other_power_loss_steps_is_refused(tmp_path):
    """Every chunk would run the others again: the built-in power-loss-sweep has seven."""
    path = tmp_path / "c.toml"
    path.write_text('[sweep]\nplan = "power-loss-sweep"\n\n[campaign]\nstep = "cut QD1"\n')
    done = fisrig("sweep", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.startswith(f"fisrig: {path}:5: the plan has other power_loss steps ("), \
        done.stderr
    assert "which every chunk would run again" in done.stderr


def test_the_built_in_wa_and_campaign_sweeps():
    from fisrig import sweep
    wa = sweep.load(sweep.spec.find("wa-op"))
    assert [a.key for a in wa.axes] == ["plan", "profile.capacity.op_pct"]
    assert wa.axes[1].values == [7, 10, 14, 20, 28] and len(wa.points) == 10
    camp = sweep.load(sweep.spec.find("plp-campaign"))
    assert camp.campaign == {"step": "cuts", "cycles": 10000, "chunk_cycles": 500, "chunks": 20,
                             "key": "step.cuts.run_cycles"}
    assert camp.points[-1] == {"step.cuts.run_cycles": [9501, 10000]}


def test_report_compare_of_a_sweeps_points(tmp_path):
    out = tmp_path / "sweep"
    run_sweep("spare.toml", out, workers=1)
    done = fisrig("report", "--compare", str(out), "p0001", "p0003", "--out", str(tmp_path / "cmp"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cmp" / "compare.html").exists() and f"{out}/runs/p0003" in done.stdout
    done = fisrig("report", "--compare", str(out), "p0001", "p0009")
    assert done.returncode == 2 and "fisrig: p0009: no point 'p0009' in" in done.stderr, done.stderr
