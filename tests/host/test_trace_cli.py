"""`fisrig trace generate`, `fisrig trace stats` and `fisrig replay --format` as a user types
them: what they write and print, and every bad input refused in one line, exit 2."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cli_in_process import fisrig
from fisrig import traces as trace
from fisrig.traces import generate as trace_gen

REPO = Path(__file__).resolve().parents[2]
CAP = 1 << 22  # sectors: 2 GiB


def test_generate_writes_the_generators_trace_and_stats_reads_it(tmp_path, capsys):
    out = tmp_path / "client.trace"
    code, stdout, err = fisrig(["trace", "generate", "client", "--capacity-sectors", CAP, "--commands", 20_000,
                                "--seed", 5, "--out", out], capsys)
    assert code == 0, err
    assert re.match(rf"trace: client, seed 5, for {CAP:,} sectors: 20,000 commands into {re.escape(str(out))} ", stdout)
    assert "writes" in stdout and "TRIMs" in stdout and "flushes" in stdout
    want = trace_gen.generate("client", CAP, 20_000, seed=5)
    assert (trace.load(out, CAP) == want).all()
    assert out.read_text().splitlines()[0].count(",") == 2  # op,lba,sectors, no header

    code, stdout, err = fisrig(["trace", "stats", out, "--capacity-sectors", CAP, "--json"], capsys)
    assert code == 0, err
    got = json.loads(stdout)
    assert got == {**json.loads(json.dumps(trace.stats(want, CAP))), "trace": str(out), "format": "ops",
                   "seconds": None, "notes": []}

    code, stdout, err = fisrig(["trace", "stats", out, "--capacity-sectors", CAP], capsys)
    assert code == 0, err
    lines = stdout.splitlines()
    assert lines[0].startswith(f"trace: {out} (ops): 20,000 commands; read and counted in ")
    assert re.search(r"^  writes:  [\d,]+ \([\d.]+%\): [\d.]+ GB, mean [\d,]+ bytes; random [\d.]+%, sequential [\d.]+% "
                     r"\(starts where one of the 64 writes before ended\)$", stdout, re.M)
    assert re.search(r"^  TRIMs:   [\d,]+: [\d.]+ GB, [\d.]+% of the drive \([\d.]+% counted once\)$", stdout, re.M)
    assert re.search(r"^  flushes: [\d,]+ \(one per [\d.]+ writes\)$", stdout, re.M)
    assert f"  drive:   {CAP:,} sectors (2.1 GB)" in lines


def test_generate_for_a_profile_makes_a_pass_for_its_drive(tmp_path, capsys, tiny_capacity):
    out = tmp_path / "e.trace"
    code, stdout, err = fisrig(["trace", "generate", "enterprise", "--profile", "tiny-1gb", "--out", out], capsys)
    assert code == 0, err
    n = trace_gen.default_commands("enterprise", tiny_capacity)
    assert f"for tiny-1gb, {tiny_capacity:,} sectors: {n:,} commands" in stdout
    assert (trace.load(out, tiny_capacity) == trace_gen.generate("enterprise", tiny_capacity)).all()


def test_an_existing_out_is_replaced_only_with_force(tmp_path, capsys):
    out = tmp_path / "t.trace"
    out.write_text("mine\n")
    args = ["trace", "generate", "enterprise", "--capacity-sectors", CAP, "--commands", 100, "--out", out]
    code, _, err = fisrig(args, capsys)
    assert code == 2 and err == f"fisrig: --out {out}: exists; add --force to replace it\n"
    assert out.read_text() == "mine\n"
    code, _, err = fisrig([*args, "--force"], capsys)
    assert code == 0, err
    assert len(trace.load(out, CAP)) == 100 and not list(tmp_path.glob("*.tmp"))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "ok.trace").write_text("W,0,8\nW,8,8\n")
    (tmp_path / "bad.csv").write_text("time,op,lba,length\n0,W,0,8\n0.5,X,8,8\n")
    (tmp_path / "ok.csv").write_text("time,op,lba,length\n0,W,0,8\n0.001,T,0,8\n0.002,F,0,0\n0.003,R,0,8\n")
    return tmp_path


CASES = [
    (["trace", "generate", "client", "--out", "{t}/x", "--commands", "0"], r"^fisrig: --commands 0: commands = 0: 1 to "),
    (["trace", "generate", "client", "--out", "{t}/x", "--capacity-sectors", "100"],
     r"^fisrig: --capacity-sectors 100: a drive of 100 sectors is too small to generate for \(at least 65536"),
    (["trace", "generate", "client", "--out", "{t}/x", "--capacity-sectors", "0"],
     r"^fisrig: --capacity-sectors 0: a drive of at least one sector$"),
    (["trace", "generate", "server", "--out", "{t}/x"], r"^fisrig trace generate: argument kind: invalid choice: 'server'"),
    (["trace", "generate", "client"], r"^fisrig trace generate: the following arguments are required: --out"),
    (["trace", "generate", "client", "--out", "{t}/no/such/x"], r"^fisrig: --out .*/no/such/x: no such directory"),
    (["trace", "generate", "client", "--out", "{t}"], r"^fisrig: --out .*: is a directory; name a file$"),
    (["trace", "generate", "client", "--out", "{t}/x", "--profile", "consumer"],
     r"^fisrig: --profile consumer: no such drive profile 'consumer' \(closest: 'consumer-256gb'"),
    (["trace", "stats", "{t}/none"], r"^fisrig: .*/none: no such trace file$"),
    (["trace", "stats", "{t}"], r"^fisrig: .*: no such trace file \(a directory\)$"),
    (["trace", "stats", "{t}/bad.csv"], r"^fisrig: .*/bad\.csv:3: op 'X' is not one of R W T F \(read, write, trim, flush\): "
                                         r"'0\.5,X,8,8'$"),
    (["trace", "stats", "{t}/ok.trace", "--format", "xml"], r"^fisrig trace stats: argument --format: invalid choice: 'xml'"),
    (["trace", "stats", "{t}/ok.trace", "--format", "csv"], r"^fisrig: .*/ok\.trace:1: a CSV trace starts with the header"),
    (["trace", "stats", "{t}/ok.trace", "--capacity-sectors", "12"],
     r"^fisrig: .*/ok\.trace:2: LBAs 8\.\.15 run past the drive's last LBA 11$"),
    (["trace"], r"^fisrig trace: the following arguments are required: trace_cmd"),
    (["replay", "{t}/ok.trace", "--format", "blkparse", "--profile", "tiny-1gb", "--out", "{t}/run"],
     r"^fisrig: .*/ok\.trace:1: not a blkparse event line: 'W,0,8' \(and the file holds no D or Q events\)$"),
    (["replay", "{t}/ok.trace", "--format", "json"], r"^fisrig replay: argument --format: invalid choice: 'json'"),
]


@pytest.mark.parametrize("argv,pattern", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_refused_in_one_line(argv, pattern, files, capsys):
    code, out, err = fisrig([a.format(t=files) for a in argv], capsys)
    lines = err.splitlines()
    assert code == 2, f"exit {code}: {err}{out}"
    assert len(lines) == 1, f"not one line: {err!r}"
    assert "Traceback" not in err + out
    assert re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}"
    assert not (files / "x").exists() and not (files / "run").exists()


def test_replay_reads_the_format_asked(files, capsys):
    code, out, err = fisrig(["replay", files / "ok.csv", "--format", "csv", "--profile", "tiny-1gb", "-q",
                             "--out", files / "run"], capsys)
    assert code == 0, err
    assert "run ended: done" in out
    import pyarrow.parquet as pq
    t = pq.read_table(files / "run" / "records.parquet")
    kind = t.column("kind").to_numpy(zero_copy_only=False)
    assert sorted(t.column("command").to_numpy()[kind == "command"].tolist()) == [0x60, 0x61, 0x64, 0xEA]


def test_the_installed_command_says_no_in_one_line(files):
    """The same refusal through a fresh interpreter, as a user meets it."""
    r = subprocess.run([sys.executable, "-m", "fisrig.cli", "trace", "stats", str(files / "bad.csv")],
                       capture_output=True, text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "bad.csv:3:" in r.stderr
    assert "Traceback" not in r.stderr


def test_generate_and_load_37_million_commands_in_seconds():
    """Not a benchmark: a bound that catches a Python loop per command creeping back in
    (about 3.5 to 8 s to generate here, 5 s to read back; docs/traces.md). A tenth of the
    length keeps the suite quick."""
    import time
    cap = trace_gen.REVIEW_CAPACITY // 10
    t0 = time.monotonic()
    e = trace_gen.generate("client", cap)
    assert len(e) > 3_700_000 and time.monotonic() - t0 < 10
    assert np.isin(e["op"], [trace.W, trace.T, trace.F]).all()
