"""Nothing is lost: a run never lands on another run's results unless asked (--force), report
never replaces records with fewer, missing records are counted, a failed run says so and
why, and a run that would not fit the disk is refused before it starts, from an estimate
that is exact for the steps that can be counted."""
import json
import shutil
from collections import namedtuple

import numpy as np
import pyarrow.parquet as pq
import pytest

from fisrig import cli, plan
from fisrig.compile import estimate
from fisrig.records import store, run_state
from fisrig import program_format as pf
from fisrig.compile import compile_plan
from fisrig.errors import InputError
from fisrig.run import prepare, rebuild, run_plan
from fisrig.targets import ModelTarget

from test_bad_inputs import fisrig


def test_out_holding_a_run_is_refused_then_replaced_with_force(tmp_path, capsys):
    out = tmp_path / "run"
    tiny = plan.from_dict({"plan": {"name": "t", "profile": "tiny-1gb"}, "step": [{"do": "flush", "label": "f"}]})
    run_plan(tiny, out, quiet=True)
    (out / "notes.txt").write_text("mine\n")
    first = json.loads((out / "run.json").read_text())["started"]
    with pytest.raises(InputError, match=r"holds another run .*add --force"):
        run_plan(tiny, out, quiet=True)
    code, _, err = fisrig(["run", "smoke-tiny", "--out", out, "-q"], capsys)
    assert code == 2 and "holds another run" in err
    assert json.loads((out / "run.json").read_text())["started"] == first  # untouched
    r = run_plan(tiny, out, quiet=True, force=True)
    assert r.status == "done" and (out / "notes.txt").read_text() == "mine\n"  # only fisrig's files go


def _copy_run(smoke_run, d, keep_records=None, parquet=False):
    d.mkdir()
    shutil.copy(smoke_run.run_dir / "run.json", d)
    raw = (smoke_run.run_dir / "records.bin").read_bytes()
    if parquet:
        shutil.copy(smoke_run.run_dir / "records.parquet", d)
    if keep_records is not None:
        raw = raw[:pf.RECORDS_HEADER.size + keep_records * pf.RECORD_DTYPE.itemsize + 37]  # and a torn one
    (d / "records.bin").write_bytes(raw)
    return d


def test_truncated_records_are_reported_as_truncated_with_the_count(smoke_run, tmp_path, capsys):
    d = _copy_run(smoke_run, tmp_path / "cut", keep_records=1000)
    whole = smoke_run.outcome.records
    code, out, _ = fisrig(["report", d], capsys)
    assert code == 3
    assert f"run ended: truncated: {whole - 1000} of the {whole} records the run took are missing " \
           f"(the run directory holds 1000)" in out
    assert "run ended: done" not in out
    assert pq.ParquetFile(d / "records.parquet").metadata.num_rows == 1000


def test_report_never_replaces_records_parquet_with_fewer_records(smoke_run, tmp_path):
    d = _copy_run(smoke_run, tmp_path / "cut", keep_records=1000, parquet=True)
    (d / "records.bin").touch()  # newer than the Parquet file: it would have been rebuilt from it
    rebuild(d)
    assert pq.ParquetFile(d / "records.parquet").metadata.num_rows == smoke_run.outcome.records
    state = run_state.inspect(d)
    assert state.missing == 0 and state.line().startswith("done")


def test_a_killed_run_is_reported_as_killed(smoke_run, tmp_path):
    d = _copy_run(smoke_run, tmp_path / "killed", keep_records=500)
    meta = json.loads((d / "run.json").read_text())
    meta["status"] = "running"
    del meta["outcome"]
    (d / "run.json").write_text(json.dumps(meta))
    rebuild(d)
    assert run_state.inspect(d).line().startswith("killed (run.json still says running")


def test_a_failed_run_says_failed_and_why(tmp_path, monkeypatch):
    def boom(self, program, records, sinks, quiet=False):
        records.write_bytes(b"")
        raise RuntimeError("fisrig-model failed (exit 139): segmentation fault")
    monkeypatch.setattr(ModelTarget, "run", boom)
    p = plan.from_dict({"plan": {"name": "t", "profile": "tiny-1gb"}, "step": [{"do": "flush"}]})
    with pytest.raises(RuntimeError):
        run_plan(p, tmp_path / "run", quiet=True)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "failed" and "exit 139" in meta["error"]
    with pytest.raises(InputError, match=r"no records to report \(the run ended failed \(fisrig-model failed"):
        rebuild(tmp_path / "run")


def test_estimate_is_exact_for_counted_steps(smoke_run, tiny_capacity):
    """smoke-tiny: every phase but the 5-second torture is counted; the estimate's commands
    are exactly what ran in them, and the torture's bound holds what it ran."""
    est = estimate.of(compile_plan(plan.load(plan.find("smoke-tiny")), tiny_capacity).costs, 0)
    t = pq.read_table(smoke_run.run_dir / "records.parquet", columns=["kind", "marker"])
    kind = t.column("kind").to_numpy(zero_copy_only=False)
    marker = t.column("marker").to_numpy(zero_copy_only=False)
    timed = int(((kind == "command") & (marker == "torture")).sum())
    assert int((kind == "command").sum()) - timed == est.commands
    assert 0 < timed <= est.timed_commands_max
    assert est.records_max >= len(kind) >= est.records


def test_a_run_the_disk_would_not_hold_is_refused(tmp_path, monkeypatch, capsys):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(estimate.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 10**6, 10**6))
    p = prepare(plan.load(plan.find("smoke-tiny")))
    code, out, err = fisrig(["run", "smoke-tiny", "--out", tmp_path / "run"], capsys)
    assert code == 2 and not out
    assert f"the run needs about {p.estimate.disk_bytes / 1e9:.2f} GB without its timed steps" in err
    assert "has 0.00 GB free; add --force" in err and p.estimate.disk_bytes > 10**6
    assert not (tmp_path / "run").exists()
    estimate.check_disk(p.estimate, tmp_path / "run", force=True)  # --force insists


def test_a_run_that_may_outgrow_the_disk_is_warned_about_not_refused(tmp_path, monkeypatch):
    """The timed steps' bound (a drive as fast as the link) is 10x what real drives do: the
    main job would be refused on most disks. Only what the counted steps need refuses."""
    usage = namedtuple("usage", "total used free")
    p = prepare(plan.load(plan.find("smoke-tiny")))
    free = (p.estimate.disk_bytes + p.estimate.disk_bytes_max) // 2
    monkeypatch.setattr(estimate.shutil, "disk_usage", lambda _: usage(10**12, 10**12 - free, free))
    warning = estimate.check_disk(p.estimate, tmp_path / "run", force=False)
    assert warning.startswith("warning: the run may need up to ") and "GB free" in warning


def test_a_report_that_would_not_fit_in_memory_is_refused_and_the_records_kept(tmp_path, monkeypatch, capsys):
    """The run ends done with every record in records.parquet, one line says why there is no
    report (exit 3), and `fisrig report` makes it where the memory is."""
    from fisrig import run as run_mod
    monkeypatch.setattr(run_mod, "memory_available", lambda: 1000)  # bytes: less than any run's report
    out = tmp_path / "run"
    code, _, err = fisrig(["run", "smoke-tiny", "--out", out, "-q"], capsys)
    assert code == 3 and len(err.strip().splitlines()) == 1
    assert "records needs about" in err and "so it was not made; records.parquet holds every record" in err
    assert json.loads((out / "run.json").read_text())["status"] == "done"
    rows = pq.ParquetFile(out / store.PARQUET).metadata.num_rows
    assert rows == run_state.inspect(out).parquet_rows and rows > 0
    assert not (out / store.SUMMARY).exists() and not (out / store.RAW).exists()
    monkeypatch.undo()
    code, _, err = fisrig(["report", out], capsys)
    assert code == 0, err
    assert (out / store.SUMMARY).exists() and (out / "report.html").exists()


def test_a_report_that_fits_only_read_compacted_is_made_so(smoke_run, tmp_path, monkeypatch, capsys):
    """Between what any report holds a record and what one read compacted of its phases'
    shapes holds (run.compacted_need), `fisrig report` makes it, and `fisrig run` at its end,
    the same; under, it refuses."""
    from fisrig import run as run_mod
    out = tmp_path / "run"
    shutil.copytree(smoke_run.run_dir, out)
    (out / store.RAW).unlink()
    rows = pq.ParquetFile(out / store.PARQUET).metadata.num_rows
    compacted = run_mod.compacted_need(out / store.PARQUET, rows)
    assert rows * run_mod.REPORT_BYTES_ONE_RUN <= compacted < rows * run_mod.REPORT_BYTES_PER_RECORD
    before = json.loads((out / store.SUMMARY).read_text())
    monkeypatch.setattr(run_mod, "memory_available", lambda: (compacted + rows * run_mod.REPORT_BYTES_PER_RECORD) // 2)
    code, _, err = fisrig(["report", out], capsys)
    assert code == 0, err
    after = json.loads((out / store.SUMMARY).read_text())
    assert after["jobs"] == before["jobs"]
    code, _, err = fisrig(["run", "smoke-tiny", "--out", tmp_path / "again", "-q"], capsys)  # and at a run's end
    assert code == 0, err
    assert json.loads((tmp_path / "again" / store.SUMMARY).read_text())["jobs"] == before["jobs"]
    monkeypatch.setattr(run_mod, "memory_available", lambda: compacted - 1)
    code, _, err = fisrig(["report", out], capsys)
    assert code == 3 and "so it was not made" in err


def test_help_lists_the_drives_profiles_and_fault_knobs(capsys):
    from pathlib import Path
    code, out, _ = fisrig(["run", "--help"], capsys)
    assert code == 0
    profiles = Path(__file__).resolve().parents[2] / "sim" / "ssd" / "profiles"
    for p in profiles.glob("*.toml"):
        assert f"\n  {p.stem} " in out, p.stem
    for knob in ("busy_rate", "busy_us", "hang_after_commands", "unc", "idnf", "r_err_rate"):
        assert knob in out


def test_records_bin_is_read_in_place(smoke_run):
    """The host never loads all of records.bin at once: it is memory-mapped and converted to
    Parquet a chunk at a time."""
    rec = store.read_raw(smoke_run.run_dir / "records.bin")
    assert isinstance(rec, np.memmap)


def test_a_model_that_cannot_write_its_records_does_not_end_done(tmp_path):
    """fisrig-model writes its records in 1 MiB writes of its own buffers, on a thread of
    their own (sim/model/record_writer.h): one the disk refuses ends the run records_lost
    (exit 3), naming the file and why."""
    import subprocess

    from fisrig.targets.native_tools import _tool
    program = tmp_path / "program.bin"
    program.write_bytes(prepare(plan.load(plan.find("smoke-tiny"))).compiled.program)
    r = subprocess.run([str(_tool("fisrig-model")), "--program", str(program), "--records", "/dev/full",
                        "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and json.loads(r.stdout.splitlines()[-1])["status"] == "records_lost"
    assert "cannot write /dev/full: No space left on device" in r.stderr


def test_a_model_killed_by_the_file_size_limit_says_so_and_names_the_file(tmp_path):
    """A model stopped by SIGXFSZ (a file past RLIMIT_FSIZE, `ulimit -f`, as a full disk
    was tried) said `fisrig-model failed (exit -25):` and nothing after the colon. The line
    names the signal, what it means and the file it was writing; exit 3, and run.json says
    failed with the same reason (issue 58, section 6)."""
    import os
    import resource
    import signal
    import subprocess
    import sys
    from pathlib import Path

    limit = 512 << 10  # records.bin passes it (smoke-tiny: about 5 MB); program.bin, run.json do not
    out = tmp_path / "run"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    r = subprocess.run([sys.executable, "-m", "fisrig.cli", "run", "smoke-tiny", "--out", str(out), "-q"],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
                       env={**os.environ, "FISRIG_PROGRESS": "0"}, preexec_fn=small_files, timeout=300)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    reason = (f"fisrig-model failed: killed by SIGXFSZ: a file it wrote reached the file size limit (`ulimit -f`) "
              f"(writing {out / store.RAW}, {limit:,} bytes; the file size limit is {limit:,} bytes, `ulimit -f`)")
    assert lines[0] == f"fisrig: run failed: {reason}"
    meta = json.loads((out / store.RUN_JSON).read_text())
    assert meta["status"] == "failed" and meta["error"] == reason
    assert (out / store.RAW).stat().st_size == limit
    from fisrig.targets.native_tools import exit_text  # any signal by its name, never a bare negative code
    assert exit_text(-signal.SIGSEGV) == "killed by SIGSEGV: it crashed (a bug in it)"
    assert exit_text(-signal.SIGUSR1) == "killed by SIGUSR1" and exit_text(1) == "exit 1"
