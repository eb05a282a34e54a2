"""fisrig-model takes its program mapped from the file (sim/model/program_file.h) or, where
the file cannot be mapped (a pipe), read: either way the run is the same, record for
record; a program it cannot read is refused in one line, exit 2."""
import subprocess

import pytest

from fisrig import plan
from fisrig.run import prepare
from fisrig.targets.native_tools import build_dir

MODEL = build_dir() / "bin" / "fisrig-model"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    p = prepare(plan.load(plan.find("smoke-tiny")))
    path = tmp_path_factory.mktemp("program") / "program.bin"
    path.write_bytes(p.compiled.program)
    return path, p.profile


def _run(args, records, profile, **kw):
    return subprocess.run([str(MODEL), *args, "--records", str(records), "--profile", profile, "--quiet"],
                          capture_output=True, timeout=300, **kw)


def test_a_program_mapped_and_one_read_from_a_pipe_give_the_same_records(program, tmp_path):
    path, profile = program
    mapped = _run(["--program", str(path)], tmp_path / "mapped.bin", profile)
    assert mapped.returncode == 0, mapped.stderr
    piped = _run(["--program", "/dev/stdin"], tmp_path / "piped.bin", profile, input=path.read_bytes())
    assert piped.returncode == 0, piped.stderr
    records = (tmp_path / "mapped.bin").read_bytes()
    assert len(records) > 16 + 64 and records == (tmp_path / "piped.bin").read_bytes()
    assert mapped.stdout.split(b'"wall_s"')[0] == piped.stdout.split(b'"wall_s"')[0]


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_a_program_it_cannot_read_is_refused_in_one_line(program, tmp_path, what):
    _, profile = program
    target = tmp_path / "none.bin" if what == "missing" else tmp_path
    r = _run(["--program", str(target)], tmp_path / "r.bin", profile)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == f"fisrig-model: cannot read {target}"
