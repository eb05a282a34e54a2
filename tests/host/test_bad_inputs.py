"""No input breaks fisrig: every bad plan, flag, file or field ends in one line naming where
and what is wrong, exit 2, before anything runs.

The corpus is tests/host/bad_inputs/*.toml, each opening with `# expect: REGEX` (the line
fisrig must print); inputs that cannot carry a comment (a binary file, a directory, a flag)
are the table CASES below, made in a temporary directory.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_in_process import fisrig
from fisrig import program_format as pf

HERE = Path(__file__).parent
CORPUS = sorted((HERE / "bad_inputs").glob("*.toml"))
REPO = HERE.parents[1]


def refused(argv, capsys, pattern: str) -> str:
    code, out, err = fisrig(argv, capsys)
    lines = err.splitlines()
    assert code == 2, f"exit {code}: {err}{out}"
    assert len(lines) == 1, f"not one line: {err!r}"
    assert "Traceback" not in err + out
    assert re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}"
    return lines[0]


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_plan_is_refused_with_its_line(path, capsys, tmp_path):
    pattern = path.read_text().splitlines()[0].removeprefix("# expect: ")
    out = tmp_path / "out"
    line = refused(["run", path, "--out", out], capsys, re.escape(str(path)) + "|--out")
    assert re.search(pattern, line), f"{line!r} does not match {pattern!r}"
    assert not out.exists()  # nothing ran, nothing was written


def test_the_corpus_covers_the_issue():
    assert len(CORPUS) >= 30


@pytest.fixture
def files(tmp_path):
    """Inputs that are not plans: binary files, a directory, a file where a directory goes,
    run directories that are empty, damaged or of a failed run."""
    (tmp_path / "binary.toml").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "binary.csv").write_bytes(b"R,0,8\n" + bytes(range(128, 256)))
    (tmp_path / "nul.csv").write_bytes(b"R,0,8\nW,\0,8\n")
    (tmp_path / "flush_before_lba0.csv").write_text("R,0,8\nF,-1,0\n")
    (tmp_path / "ok.csv").write_text("R,0,8\nW,8,8\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("not a directory\n")
    (tmp_path / "big.toml").write_text("# " + "x" * (5 << 20) + "\n")
    (tmp_path / "empty_run").mkdir()
    bad = tmp_path / "bad_magic"
    bad.mkdir()
    (bad / "records.bin").write_bytes(b"\0" * 200)
    js = tmp_path / "bad_json"
    js.mkdir()
    (js / "run.json").write_text('{\n  "status": "done",\n  oops\n}\n')
    failed = tmp_path / "failed_run"
    failed.mkdir()
    (failed / "run.json").write_text(json.dumps({"status": "failed", "error": "fisrig-model failed (exit 139)"}))
    (failed / "records.bin").write_bytes(pf.RECORDS_HEADER.pack(pf.RECORDS_MAGIC, 1, pf.RECORD_DTYPE.itemsize, 0))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("someone's\n")
    return tmp_path


CASES = [  # argv ({t} is the fixture's directory), the line's pattern
    (["run", "{t}/binary.toml"], r"^fisrig: .*binary\.toml:2: not a text file \(byte 128 is not UTF-8\): a plan is TOML$"),
    (["run", "{t}/dir"], r"^fisrig: .*/dir: is a directory, not a plan file$"),
    (["run", "{t}/big.toml"], r"big\.toml: 524\d+ bytes: a plan file is at most 4194304 bytes$"),
    (["run", "smoke-tin"], r"^fisrig: smoke-tin: no such plan file or built-in plan \(closest: 'smoke-tiny'; valid: "),
    (["run", "smoke-tiny", "--profile", "tiny"], r"^fisrig: --profile tiny: no such drive profile 'tiny' \(closest: 'tiny-1gb'"),
    (["run", "smoke-tiny", "--profile", "{t}/file"], r"^fisrig: --profile .*/file: .*file"),
    (["run", "smoke-tiny", "--profile", "{t}/none.toml"], r"^fisrig: --profile .*none\.toml: no such profile file"),
    (["run", "smoke-tiny", "--fault", "busy_rate"], r"^fisrig: --fault busy_rate: a fault is KNOB=VALUE"),
    (["run", "smoke-tiny", "--fault", "busy_rat=0.1"], r"^fisrig: --fault busy_rat=0\.1: no such fault knob 'busy_rat' \(closest: 'busy_rate'; valid: .*hang_after_commands"),
    (["run", "smoke-tiny", "--fault", "busy_rate=2"], r"^fisrig: --fault busy_rate=2: fault knob 'busy_rate': 2 is outside \[0"),
    (["run", "smoke-tiny", "--fault", "busy_us=1", "--fault", "busy_rate=abc"], r"^fisrig: --fault busy_rate=abc: .*'abc' is not a number"),
    (["run", "smoke-tiny", "--out", "{t}/file"], r"^fisrig: --out .*/file: is a file, not a directory$"),
    (["run", "smoke-tiny", "--out", "{t}/busy"], r"^fisrig: --out .*/busy: holds 1 files \(notes\.txt\); choose another --out, or add --force"),
    (["run", "smoke-tiny", "--link-gen", "4"], r"^fisrig run: argument --link-gen: invalid choice: 4"),
    (["run"], r"^fisrig run: the following arguments are required: plan"),
    (["raw", "--command", "0x25", "--count", "70000", "--profile", "tiny-1gb"], r"^fisrig: --count 70000: 70000 does not fit the program's 16-bit field \(0\.\.65535\)$"),
    (["raw", "--command", "0x25", "--lba", "-1", "--profile", "tiny-1gb"], r"^fisrig: --lba -1: -1 does not fit the program's 48-bit field"),
    (["raw", "--command", "0x100", "--profile", "tiny-1gb"], r"^fisrig: --command 256: 256 does not fit the program's 8-bit field"),
    (["raw", "--command", "0xEF", "--features", "0x10000", "--profile", "tiny-1gb"], r"^fisrig: --features 65536: .*16-bit"),
    (["raw", "--command", "0x25", "--lba", "x"], r"^fisrig raw: argument --lba: 'x' is not a whole number"),
    (["raw", "--command", "0x99", "--protocol", "dma-in", "--profile", "tiny-1gb"], r"^fisrig: --protocol dma-in: no such protocol \(closest: 'dma_in'"),
    (["replay", "{t}/binary.csv", "--profile", "tiny-1gb"], r"binary\.csv:2: not a text file \(a byte that is not ASCII\)"),
    (["replay", "{t}/nul.csv", "--profile", "tiny-1gb"], r"nul\.csv:2: not a text file \(a NUL byte\)"),
    (["replay", "{t}/flush_before_lba0.csv", "--profile", "tiny-1gb"], r"flush_before_lba0\.csv:2: LBA -1 is not on the drive"),
    (["replay", "{t}/dir"], r"^fisrig: .*/dir: is a directory, not a trace file$"),
    (["replay", "{t}/none.csv"], r"^fisrig: .*none\.csv: no such trace file$"),
    (["replay", "{t}/ok.csv", "--qd", "40"], r"^fisrig: --qd 40: a queue depth is 1 to 32$"),
    (["replay", "{t}/ok.csv", "--dma", "--qd", "4"], r"^fisrig: --qd 4: --dma commands go one at a time"),
    (["replay", "{t}/ok.csv", "--label", " "], r"^fisrig: --label: a phase label must not be empty$"),
    (["identify", "--profile", "consumer"], r"^fisrig: --profile consumer: no such drive profile 'consumer' \(closest: 'consumer-256gb'"),
    (["report", "{t}/empty_run"], r"^fisrig: .*empty_run: not a run directory \(no run\.json, records\.bin or records\.parquet\)$"),
    (["report", "{t}/none"], r"^fisrig: .*none: no such run directory$"),
    (["report", "{t}/file"], r"^fisrig: .*/file: not a directory$"),
    (["report", "{t}/bad_magic"], r"^fisrig: .*records\.bin: not a fisrig records file \(magic 0x00000000, want 0x52525346\)$"),
    (["report", "{t}/bad_json"], r"^fisrig: .*run\.json:3: not valid JSON"),
    (["report", "{t}/failed_run"], r"^fisrig: .*failed_run: no records to report \(the run ended failed \(fisrig-model failed \(exit 139\)\)\)$"),
]


@pytest.mark.parametrize("argv,pattern", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_flag_or_file_is_refused_in_one_line(argv, pattern, files, capsys):
    refused([a.format(t=files) for a in argv], capsys, pattern)


def test_no_traceback_from_the_installed_command(files):
    """The same refusals through a fresh interpreter, as a user meets them."""
    r = subprocess.run([sys.executable, "-m", "fisrig.cli", "run", str(files / "binary.toml")],
                       capture_output=True, text=True, cwd=REPO,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


def _damage_a_column(parquet: Path, column: str) -> str:
    """Overwrites bytes inside `column`'s pages of `parquet`, its header and footer kept (its
    metadata still reads), where that makes the column fail to decode: the first place
    where pyarrow says "delta bit width larger than integer bit width" (what the issue
    saw), else the first where it fails at all; pyarrow's words for it."""
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(parquet).metadata
    chunk = meta.row_group(0).column(meta.schema.names.index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    good = parquet.read_bytes()
    first = None
    for at in range(start + 64, start + chunk.total_compressed_size - 256, 97):
        bad = bytearray(good)
        bad[at:at + 256] = b"\xff" * 256
        parquet.write_bytes(bad)
        try:
            pq.read_table(parquet, columns=[column])
        except Exception as e:  # noqa: BLE001 - what pyarrow says of it
            said = str(e).splitlines()[0]
            first = first or (at, said)
            if said.startswith("delta bit width"):
                break
    else:
        assert first, f"no damage to {column} made it unreadable"
        bad = bytearray(good)
        bad[first[0]:first[0] + 256] = b"\xff" * 256
        parquet.write_bytes(bad)
        said = first[1]
    assert pq.ParquetFile(parquet).metadata.num_rows == meta.num_rows  # the footer reads
    return said


def test_a_damaged_records_parquet_is_refused_naming_it(smoke_run, tmp_path, capsys):
    """A records.parquet whose metadata reads but whose pages do not decode (pyarrow: "delta
    bit width larger than integer bit width", said without the file) is one line naming the
    file, exit 2, from `report` and `report --compare` (issue 58, section 6)."""
    import shutil
    from fisrig.records import store
    runs = []
    for name in ("damaged", "whole"):
        d = tmp_path / name
        d.mkdir()
        for f in (store.RUN_JSON, store.PARQUET):
            shutil.copy(smoke_run.run_dir / f, d)
        runs.append(d)
    parquet = runs[0] / store.PARQUET
    said = _damage_a_column(parquet, "lba")  # a delta-coded column every report reads
    want = "^" + re.escape(f"fisrig: {parquet}: not a readable Parquet file ({said})") + "$"
    refused(["report", runs[0]], capsys, want)
    refused(["report", "--compare", runs[0], runs[1], "--out", tmp_path / "both"], capsys, want)
