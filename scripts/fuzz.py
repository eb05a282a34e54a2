#!/usr/bin/env python3
"""make fuzz: the firmware VM's decoder and execution (libFuzzer, tests/fuzz/vm_fuzz.c) and
the host's plan parser with the compiler behind it (atheris, tests/fuzz/plan_fuzz.py), each
for --seconds, with figures as JSON lines for scripts/bench_collect.py: fuzz.vm_execs,
fuzz.vm_crashes, fuzz.plan_execs, fuzz.plan_crashes.

Each target first replays its regression corpus (tests/fuzz/regressions/<target>/: inputs
that once broke it, kept in the repository), then fuzzes from seeds made fresh from the
built-in plans (their compiled programs for the VM, their TOML for the parser) plus the
corpus it grew in earlier runs (build/fuzz/corpus/<target>/). An input that breaks a target
is copied into its regression corpus, for the developer to fix and commit, and the run
exits 1. The fuzzers' own output goes to build/fuzz/<target>.log."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
VM_SOURCES = [ROOT / "firmware" / "core" / "src" / "vm.c", ROOT / "tests" / "fuzz" / "vm_fuzz.c"]
CLANG = "clang-14"  # Debian's, with libclang-rt-14-dev's libFuzzer (scripts/bootstrap.sh)
CAPACITY = 1953120  # the tiny-1gb drive's LBAs
MAX_LEN = 1 << 16   # the longest input a fuzzer makes: the small built-in plans' programs fit
# Engine behaviours put before a seed program (tests/fuzz/vm_fuzz.c's first 4 bytes):
# prompt and well-behaved; lazy with every 7th command failing and a power event every 11th
# (header size patched, so mutations reach the instructions); a hung engine.
ENGINE_PREFIXES = {"ok": bytes([0x04, 0, 0, 1]), "faults": bytes([0x35, 7, 11, 3]), "hang": bytes([0x06, 0, 0, 0])}


def build_vm_fuzzer(out: Path) -> Path:
    exe = out / "vm_fuzz"
    headers = list((ROOT / "firmware" / "core" / "include" / "fisrig").glob("*.h"))
    if exe.exists() and all(exe.stat().st_mtime >= p.stat().st_mtime for p in VM_SOURCES + headers):
        return exe
    if not shutil.which(CLANG):
        raise SystemExit(f"fuzz: {CLANG} not found (scripts/bootstrap.sh installs clang-14 and libclang-rt-14-dev)")
    cmd = [CLANG, "-g", "-O1", "-std=c99", "-Wall", "-Wextra", "-Werror",
           "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=undefined",
           "-I", str(ROOT / "firmware" / "core" / "include"), *map(str, VM_SOURCES), "-o", str(exe), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("fuzz: building the VM fuzzer failed:\n" + r.stderr[-4000:])
    return exe


def vm_seeds(out: Path) -> Path:
    """The built-in plans' programs (those that compile for the tiny drive and fit MAX_LEN),
    each behind every engine behaviour."""
    from fisrig import plan
    from fisrig.compile import compile_plan
    from fisrig.errors import InputError
    out.mkdir(parents=True, exist_ok=True)
    plans = {name: plan.load(path) for name, path in plan.builtin_plans().items()}
    # The trace replays of the JEDEC plan, short (its own trace is megabytes of program).
    plans["short-traces"] = plan.from_dict({"plan": {"name": "short-traces", "profile": "tiny-1gb"}, "step": [
        {"do": "replay", "generator": "client", "commands": 300, "seed": 3, "queue_depth": 8, "ncq": True},
        {"do": "replay", "generator": "enterprise", "commands": 200, "seed": 4, "queue_depth": 1, "ncq": False,
         "trims": "dsm"}]}, "<fuzz seeds>")
    # Error policies: commands sent again, lost links waited for (behind the faulty engine).
    plans["errors-retried"] = plan.from_dict({"plan": {"name": "errors-retried", "profile": "tiny-1gb",
                                                       "on_error": "retry", "retries": 2, "timeout_ms": 1}, "step": [
        {"do": "workload", "read_pct": 40, "trim_pct": 10, "flush_pct": 5, "queue_depth": 32, "ncq": True,
         "commands": 500, "span_pct": 1},
        {"do": "replay", "generator": "client", "commands": 200, "seed": 5, "queue_depth": 4, "on_error": "requeue"}]},
        "<fuzz seeds>")
    for name, p in plans.items():
        try:
            program = bytes(compile_plan(p, CAPACITY).program)
        except InputError:
            continue  # sized for a bigger drive
        if len(program) + 4 > MAX_LEN:
            continue
        for tag, prefix in ENGINE_PREFIXES.items():
            (out / f"{name}-{tag}").write_bytes(prefix + program)
    return out


def plan_seeds(out: Path) -> Path:
    from fisrig import plan
    out.mkdir(parents=True, exist_ok=True)
    for name, path in plan.builtin_plans().items():
        shutil.copy(path, out / f"{name}.toml")
    return out


def run_target(name: str, cmd: list[str], work: Path, seeds: Path, seconds: int) -> dict:
    """Replays the regressions, then fuzzes; returns {"execs", "crashes", "found"}."""
    corpus, artifacts = work / "corpus" / name, work / "artifacts" / name
    corpus.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    common = [f"-artifact_prefix={artifacts}/", f"-max_len={MAX_LEN}", "-timeout=20", "-rss_limit_mb=4096"]
    log = open(work / f"{name}.log", "w")
    kept = sorted(p for p in (REGRESSIONS / name).glob("*") if p.is_file())
    found: list[str] = []
    execs = 0
    if kept:
        r = subprocess.run(cmd + common + [str(p) for p in kept], stdout=log, stderr=subprocess.STDOUT)
        execs += len(kept)
        if r.returncode:
            found.append("a regression input breaks it again (see the log)")
    if not found:
        r = subprocess.run(cmd + common + [f"-max_total_time={seconds}", "-print_final_stats=1", str(corpus), str(seeds)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        log.write(r.stdout)
        m = re.search(r"stat::number_of_executed_units:\s*(\d+)", r.stdout)
        execs += int(m.group(1)) if m else 0
        for a in sorted(artifacts.iterdir()):
            (REGRESSIONS / name).mkdir(parents=True, exist_ok=True)
            shutil.copy(a, REGRESSIONS / name / a.name)
            found.append(str(REGRESSIONS / name / a.name))
        if r.returncode and not found:
            found.append(f"the fuzzer exited {r.returncode} (see the log)")
    log.close()
    return {"execs": execs, "crashes": len(found), "found": found}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=60, help="fuzzing time per target (default 60)")
    ap.add_argument("--workdir", type=Path, default=ROOT / "build" / "fuzz", help="build/fuzz by default")
    ap.add_argument("--target", choices=["vm", "plan"], action="append", help="one target (default both)")
    a = ap.parse_args()
    a.workdir.mkdir(parents=True, exist_ok=True)
    failed = False
    for target in a.target or ["vm", "plan"]:
        if target == "vm":
            cmd = [str(build_vm_fuzzer(a.workdir))]
            seeds = vm_seeds(a.workdir / "seeds" / "vm")
            what = "inputs run through the firmware VM (validate and run against a scripted engine)"
        else:
            cmd = [sys.executable, str(ROOT / "tests" / "fuzz" / "plan_fuzz.py")]
            seeds = plan_seeds(a.workdir / "seeds" / "plan")
            what = "plan files through parse, compile and estimate"
        print(f"fuzz: {target}: {a.seconds} s", file=sys.stderr, flush=True)
        res = run_target(target, cmd, a.workdir, seeds, a.seconds)
        for f in res["found"]:
            print(f"fuzz: {target}: found: {f}", file=sys.stderr)
        failed |= bool(res["crashes"])
        print(json.dumps({"name": f"fuzz.{target}_execs", "value": res["execs"], "unit": "inputs",
                          "what": f"{what} in {a.seconds} s on {os.cpu_count()} CPUs (one used), "
                                  f"regression corpus included; varies with the machine"}), flush=True)
        print(json.dumps({"name": f"fuzz.{target}_crashes", "value": res["crashes"], "unit": "inputs",
                          "what": f"inputs that broke the {target} target (sanitizer, harness invariant, "
                                  f"or an exception other than a one-line refusal); goal 0"}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
