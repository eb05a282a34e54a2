"""make fuzz, shortened: 10 s of each fuzz target (the firmware VM under libFuzzer with the
sanitizers, the plan parser and compiler under atheris), after replaying their regression
corpora (tests/fuzz/regressions/). Nothing may break either; each must have run real inputs."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fuzz_targets_find_nothing_in_ten_seconds(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz.py"), "--seconds", "10", "--workdir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    figures = {f["name"]: f["value"] for f in map(json.loads, r.stdout.splitlines())}
    assert r.returncode == 0, r.stderr + "".join((tmp_path / f"{t}.log").read_text()[-3000:]
                                                 for t in ("vm", "plan") if (tmp_path / f"{t}.log").exists())
    assert figures["fuzz.vm_crashes"] == 0 and figures["fuzz.plan_crashes"] == 0
    # Thousands of inputs a second here: far fewer means the targets spend their time refusing
    # the seeds or not running at all.
    assert figures["fuzz.vm_execs"] > 10_000, figures
    assert figures["fuzz.plan_execs"] > 1_000, figures
    # The regression corpus was replayed before fuzzing, and the seeds came from the plans.
    vm_log = (tmp_path / "vm.log").read_text()
    kept = list((ROOT / "tests" / "fuzz" / "regressions" / "vm").iterdir())
    assert kept and all(p.name in vm_log for p in kept)
    assert any((tmp_path / "seeds" / "vm").glob("smoke-tiny-*"))
