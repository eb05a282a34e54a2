"""One run, one directory: runs started together into one --out, with and without --force,
each end refused (exit 2, one line naming the run that holds it) or complete, and the
directory's files are all one run's; a run killed at any point leaves a directory that
`report` reads or refuses, never one of two runs' files; `report` and `compare` refuse a
directory whose files name different runs."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fisrig.records import run_dir, run_state
from fisrig.errors import InputError

from test_bad_inputs import fisrig

ROOT = Path(__file__).resolve().parents[2]
FISRIG = [str(ROOT / "bin" / "fisrig")]
ENV = {**os.environ, "CI": "true", "FISRIG_PROGRESS": "0"}


def _start(out: Path, seed: int, force: bool) -> subprocess.Popen:
    argv = [*FISRIG, "run", "smoke-tiny", "--out", str(out), "--set", f"seed={seed}", "-q"]
    return subprocess.Popen(argv + (["--force"] if force else []), cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _one_run(d: Path) -> tuple[str, int]:
    """(run id, seed) of the directory's files, held to be one run's."""
    meta = json.loads((d / "run.json").read_text())
    summary = json.loads((d / "summary.json").read_text())["fisrig"]
    parquet_id = pq.read_schema(d / "records.parquet").metadata[run_dir.PARQUET_KEY].decode()
    assert meta["run_id"] == summary["run_id"] == parquet_id, (meta["run_id"], summary["run_id"], parquet_id)
    assert meta["seed"] == summary["seed"]
    assert meta["status"] == "done"
    assert f"run {meta['run_id'][:12]}" in (d / "report.html").read_text()
    return meta["run_id"], meta["seed"]


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_ten_runs_into_one_directory_at_once_each_refused_or_complete(tmp_path, force):
    d = tmp_path / "run"
    if force:  # a run there already, which --force may replace
        subprocess.run([*FISRIG, "run", "smoke-tiny", "--out", str(d), "--set", "seed=99", "-q"],
                       cwd=ROOT, env=ENV, check=True, capture_output=True)
    for round_ in range(2):
        procs = {seed: _start(d, seed, force or round_ > 0) for seed in range(1, 11)}
        done = []
        for seed, p in procs.items():
            out, err = p.communicate(timeout=300)
            assert p.returncode in (0, 2), (seed, p.returncode, err)
            if p.returncode == 2:
                lines = err.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith(f"fisrig: --out {d}: "), err
                assert "is being written by run" in err or "holds another run" in err, err
                if "is being written by run" in err:  # it names the holder: its plan, seed and pid
                    assert "plan smoke-tiny, seed " in err and "pid " in err, err
            else:
                done.append(seed)
                assert "run ended: done" in out
        assert done, "every run was refused"
        if not force and round_ == 0:
            assert len(done) == 1, done  # the first took it; the rest found it taken or full
        _, seed = _one_run(d)
        assert seed in done
        listed = subprocess.run([*FISRIG, "report", str(d)], cwd=ROOT, env=ENV, capture_output=True, text=True)
        assert listed.returncode == 0, listed.stderr


def test_a_run_killed_anywhere_leaves_its_directory_readable_or_refused(tmp_path):
    d = tmp_path / "run"
    rng = random.Random(58)
    for i in range(6):
        p = _start(d, seed=i + 1, force=True)
        time.sleep(rng.uniform(0.1, 1.6))  # smoke-tiny takes about 1.5 s here: before, during, after
        p.send_signal(signal.SIGKILL)
        p.communicate()
        for _ in range(50):  # a chart's drawing child, forked, may hold the lock a moment longer
            r = subprocess.run([*FISRIG, "report", str(d)], cwd=ROOT, env=ENV, capture_output=True, text=True)
            if "is being written by" not in r.stderr:
                break
            time.sleep(0.1)
        assert r.returncode in (0, 2, 3), r.stderr
        assert "internal error" not in r.stderr
        if r.returncode == 2:
            assert len(r.stderr.strip().splitlines()) == 1, r.stderr
            continue
        found = {rid for rid in run_state.ids(d).values()}
        assert len(found) == 1 and None not in found, run_state.ids(d)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    with run_dir.take(tmp_path, "--out x", plan="p", seed=7) as claim:
        with pytest.raises(InputError, match=rf"--out y: is being written by run {claim.run_id[:12]} "
                                             rf"\(plan p, seed 7, pid {os.getpid()}\)"):
            run_dir.take(tmp_path, "--out y")
    run_dir.take(tmp_path, "--out y").release()  # let go: free again


def _mixed(smoke_run, tmp_path) -> Path:
    d = tmp_path / "mixed"
    d.mkdir()
    for name in ("run.json", "summary.json", "records.parquet"):
        shutil.copy(smoke_run.run_dir / name, d)
    meta = json.loads((d / "run.json").read_text())
    meta["run_id"] = "0" * 32  # another run's run.json
    (d / "run.json").write_text(json.dumps(meta))
    return d


def test_report_and_compare_refuse_a_directory_of_two_runs(smoke_run, tmp_path, capsys):
    d = _mixed(smoke_run, tmp_path)
    theirs = smoke_run.run_dir
    code, _, err = fisrig(["report", d], capsys)
    assert code == 2
    assert err.startswith(f"fisrig: {d}: holds files of more than one run (run.json is run 000000000000; "
                          f"summary.json and records.parquet are run "), err
    for argv in (["compare", d, theirs], ["compare", theirs, d], ["report", "--compare", d, theirs,
                                                                   "--out", tmp_path / "cmp"]):
        code, _, err = fisrig(argv, capsys)
        assert code == 2 and "holds files of more than one run" in err, (argv, err)


def test_a_runs_files_carry_its_id(smoke_run):
    rid, _ = _one_run(smoke_run.run_dir)
    png = [p for p in smoke_run.run_dir.glob("*.png")]
    assert png
    from PIL import Image
    for p in png:  # the caption on the chart, and in the PNG's own metadata
        assert f"run {rid[:12]}" in Image.open(p).info["Description"], p


def test_records_rebuilt_from_records_bin_keep_the_run_id(smoke_run, tmp_path, capsys):
    d = tmp_path / "killed"
    d.mkdir()
    for name in ("run.json", "records.bin"):
        shutil.copy(smoke_run.run_dir / name, d)
    code, _, err = fisrig(["report", d], capsys)
    assert code == 0, err
    assert set(run_state.ids(d).values()) == {json.loads((d / "run.json").read_text())["run_id"]}


def test_a_run_from_before_run_ids_is_still_read(smoke_run, tmp_path, capsys):
    d = tmp_path / "old"
    d.mkdir()
    meta = json.loads((smoke_run.run_dir / "run.json").read_text())
    del meta["run_id"]
    (d / "run.json").write_text(json.dumps(meta))
    t = pq.read_table(smoke_run.run_dir / "records.parquet")
    pq.write_table(t.replace_schema_metadata(None), d / "records.parquet")
    code, out, err = fisrig(["report", d], capsys)
    assert code == 0, err
    assert run_state.check_one_run(d) is None


@pytest.mark.parametrize("argv", [["run", "smoke-tiny"], ["replay", "t.csv"], ["report", "--compare", "a", "b"]])
def test_an_empty_out_is_refused_not_taken_for_the_default(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("R,0,8\n")
    code, out, err = fisrig([*argv, "--out", ""], capsys)
    assert code == 2 and not out
    assert err == "fisrig: --out '': is empty: name a directory\n"
    assert not (tmp_path / "runs").exists()
