"""What a worker does with one point of a sweep: runs its plan into its run directory.

Imported by the dask workers (they run `run_job` and `fingerprint`), so it holds nothing but
what a worker needs: a job is plain data (its plan's tables, the profile and knobs as
`fisrig run` takes them, the run directory), and what comes back is a small dict (status,
the run directory, the error), through the scheduler; the records stay in the run directory,
on a path every worker and the client share (docs/sweeps.md).
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fisrig import __version__


@dataclass
class Job:
    index: int
    name: str                 # the point's name: p0001
    params: dict[str, Any]    # axis key -> value
    plan: dict                # the point's plan tables (plan.from_dict)
    plan_source: str
    plan_text: str            # the plan file's text, for its errors' lines
    profile: str              # a built-in name or the point's own profile file
    faults: list[str] = field(default_factory=list)
    target: str = "model"
    out: str = ""             # the run directory
    estimate: Any = None      # its run's estimate (fisrig.compile.estimate.Estimate), the client's


def run_job(job: Job) -> dict[str, Any]:
    """Runs the job's plan into job.out (replacing an attempt before it that did not end);
    its status, its run directory and its error if it did not end done. An exception (the
    run could not start, or broke) goes back to the scheduler, which tries the point once more."""
    from fisrig import plan as plan_mod
    from fisrig.run import run_plan
    started = time.monotonic()
    plan = plan_mod.from_dict(job.plan, job.plan_source, plan_mod.locate(job.plan_text))
    # No charts: a sweep's figure is its report's, and a point's own are `fisrig report`'s
    # to draw (they were half a point's host time: docs/performance.md).
    r = run_plan(plan, Path(job.out), target=job.target, profile=job.profile, faults=job.faults, quiet=True,
                 force=True, charts=False)
    error = None
    if r.status != "done":
        error = getattr(r.outcome, "error", None) or r.status
    return {"status": r.status, "run_dir": str(r.run_dir), "error": error, "wall_s": time.monotonic() - started}


def fingerprint() -> dict[str, str]:
    """This process's fisrig: its version and a digest of the native build the targets run
    (the model and the drive), so a worker of another build is refused by name."""
    from fisrig.targets.native_tools import build_dir
    digest = hashlib.sha256()
    for name in ("fisrig-model", "fisrig-drive"):
        path = build_dir() / "bin" / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.exists() else b"(not built)")
    return {"version": __version__, "build": digest.hexdigest()[:16]}
