"""The native build compiled with gcc's profile of the model's training (scripts/build_native.sh,
docs/model-target.md "Build"): the profile names objects the build has, and the profiled
model gives the records the instrumented build gives, byte for byte."""
import filecmp
import os
import subprocess

import pytest

from fisrig import plan
from fisrig.run import prepare
from fisrig.targets.native_tools import build_dir

BUILD = build_dir()
DATA = BUILD / "pgo" / "data"
GEN = BUILD / "pgo" / "gen"


def _pgo_setting() -> str:
    cache = BUILD / "CMakeCache.txt"
    for line in cache.read_text().splitlines() if cache.exists() else []:
        if line.startswith("FISRIG_PGO:"):
            return line.partition("=")[2]
    return "off"


pytestmark = pytest.mark.skipif(_pgo_setting() != "use", reason="the native build is not profiled (PGO=0)")


def test_every_profile_file_names_an_object_of_the_build():
    """build_native.sh compiles again the objects a new profile covers, found by the profile
    file's name: the object's path under the build directory (-fprofile-prefix-path).
    Named otherwise (an absolute path, the gen build's), those objects would keep the old
    profile without a word."""
    names = sorted(p.name for p in DATA.glob("*.gcda"))
    assert any("ftl.cc" in n for n in names) and any("engine_model.cc" in n for n in names), names
    for n in names:
        obj = BUILD / (n[: -len(".gcda")].replace("#", "/") + ".o")
        assert obj.exists(), f"{n}: no {obj}"
    assert (DATA / "digest").read_text().strip()


def test_profiled_model_gives_the_instrumented_models_records(tmp_path):
    """The profile changes how the model's code is laid out, never what it computes: the
    smoke plan's records from build/ equal the instrumented build's byte for byte."""
    prep = prepare(plan.load(plan.find("smoke-tiny")), "model")
    program = tmp_path / "program.bin"
    program.write_bytes(prep.compiled.program)
    env = dict(os.environ, GCOV_PREFIX=str(tmp_path / "gcda"))  # the build's profile stays as it is
    before = {p.name: p.read_bytes() for p in DATA.glob("*.gcda")}
    for name, build in (("profiled", BUILD), ("instrumented", GEN)):
        subprocess.run([str(build / "bin" / "fisrig-model"), "--program", str(program),
                        "--records", str(tmp_path / f"{name}.bin"), "--profile", prep.profile, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL, env=env)
    assert (tmp_path / "profiled.bin").stat().st_size > 1_000_000
    assert filecmp.cmp(tmp_path / "profiled.bin", tmp_path / "instrumented.bin", shallow=False)
    assert any((tmp_path / "gcda").rglob("*engine_model.cc.gcda"))  # it wrote its profile there
    assert {p.name: p.read_bytes() for p in DATA.glob("*.gcda")} == before
