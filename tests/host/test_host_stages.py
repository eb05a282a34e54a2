"""host/fisrig by stage (issue 59): each package is a stage of a run, and a stage imports
only those below it, at any depth of the file (a function's own imports too), so a package
can be read, and a protocol added to it, without the ones above. run.py composes them; the
CLI is on top. The shared modules at the bottom (errors, program_format: the VM's program
and record formats from the C headers; progress) import no stage."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "host" / "fisrig"
# Lowest first. sata: the protocol's command set, which plans, programs and records all name;
# capture: the analyzer's capture.parquet and its views, beside records; sweep: many runs of a
# plan, over run.
STAGES = ["errors", "program_format", "progress", "sata", "nvme", "plan", "traces", "compile", "records",
          "capture", "targets", "analysis", "report", "run", "sweep", "cli"]


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "fisrig" and len(parts) > 1 and parts[1] in STAGES else None


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "fisrig":
                yield from (f"fisrig.{a.name}" for a in node.names)
            else:
                yield node.module
        elif isinstance(node, ast.ImportFrom) and node.level:
            yield "relative"
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_every_module_is_in_a_stage():
    loose = [p.name for p in PKG.glob("*.py") if p.stem not in STAGES and p.stem != "__init__"]
    assert not loose, loose
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(STAGES), packages - set(STAGES)


def test_no_stage_imports_one_above_it():
    wrong = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if own == "__init__":
            continue
        for target in _imports(path):
            assert target != "relative", f"{rel}: a relative import (the stages import by their names)"
            stage = _stage(target)
            if stage and STAGES.index(stage) > STAGES.index(own):
                wrong.append(f"{rel} ({own}) imports {target} ({stage})")
    assert not wrong, "\n".join(wrong)


def test_the_gateware_imports_no_bench_harness():
    """fisrig_hw is the product; fisrig_bench (the runners, the engine's cocotb top, stock
    LiteSATA as a host) is built on it, never the other way."""
    hw = PKG.parents[1] / "hw" / "fisrig_hw"
    wrong = [f"{p.relative_to(hw.parent)} imports {t}" for p in hw.rglob("*.py") for t in _imports(p)
             if t.startswith("fisrig_bench")]
    assert not wrong, "\n".join(wrong)
