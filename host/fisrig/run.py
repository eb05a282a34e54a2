"""Running a plan end to end: check, compile, run on a target, keep the results, report."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from . import plan as plan_mod
from . import program_format as pf
from . import report, results
from .compile import compile_plan
from .targets import identify_fields, make_target


@dataclass
class RunResult:
    run_dir: Path
    status: str
    phases: list
    plots: list[Path]
    outcome: object


def run_plan(plan: plan_mod.Plan, out: Path, target: str = "model", profile: str | None = None,
             faults: list[str] | None = None, quiet: bool = False,
             link_gen: int | None = None) -> RunResult:
    """Runs `plan` and leaves in `out`: run.json, program.bin, records.bin, records.parquet,
    summary.json and the plots. run.json is written before the run starts, so a run that
    is killed can still be reported from what it recorded. link_gen: the SATA speed of the
    rig's link (rtl target; Gen3 when not given)."""
    profile = profile or plan.profile
    tgt = make_target(target, profile, faults, link_gen)
    words = tgt.identify()
    ident = identify_fields(words)
    compiled = compile_plan(plan, ident["lba48_sectors"])  # refuses before anything runs
    out.mkdir(parents=True, exist_ok=True)
    (out / "program.bin").write_bytes(compiled.program)
    meta = {
        "schema_version": results.SCHEMA_VERSION, "fisrig_version": __version__,
        "versions": {"fisrig": __version__, "engine_interface": pf.ENGINE_IF_VERSION,
                     "program_format": pf.PROGRAM_VERSION, "target": target},
        "started": int(time.time()), "target": target, "link_gen": tgt.link_gen, "profile": profile,
        "faults": faults or [],
        "seed": plan.seed, "status": "running",
        "plan": {"name": plan.name, "description": plan.description, "source": plan.source,
                 "steps": [{"do": s.do, "label": s.label, **s.args} for s in plan.steps]},
        "markers": {str(k): v for k, v in compiled.markers.items()},
        "identify": ident,
    }
    results.write_json(out / results.RUN_JSON, meta)
    outcome = tgt.run(out / "program.bin", out / results.RAW, quiet=quiet)
    meta["status"] = outcome.status
    meta["outcome"] = dataclasses.asdict(outcome)
    results.write_json(out / results.RUN_JSON, meta)
    phases, plots = rebuild(out)
    return RunResult(out, outcome.status, phases, plots, outcome)


def rebuild(run_dir: Path):
    """records.parquet (from records.bin if need be), summary.json and the plots."""
    meta = results.read_meta(run_dir)
    if not (run_dir / results.PARQUET).exists() or (
            (run_dir / results.RAW).exists() and
            (run_dir / results.RAW).stat().st_mtime > (run_dir / results.PARQUET).stat().st_mtime):
        results.write_parquet(run_dir, {int(k): v for k, v in meta.get("markers", {}).items()})
    import pyarrow.parquet as pq
    table = pq.read_table(run_dir / results.PARQUET, columns=report.REPORT_COLUMNS)
    results.write_json(run_dir / results.SUMMARY, results.fio_summary(table, meta))
    return report.make_report(run_dir, table)
