"""Sweeps: one plan run over the product of axes (or listed points), each point a run of its
own, on every core of this machine or on a dask.distributed cluster (docs/sweeps.md).

    sweep = fisrig.sweep.load("op.toml")            # every point checked, file:line
    result = fisrig.sweep.run(sweep, Path("runs/sweeps/op"))

The sweep directory: manifest.json (the axes, each point's parameters, status and run
directory), runs/pNNNN/ (a run directory each, as `fisrig run` makes), profiles/ (a point's
own drive profile where an axis sets profile keys), points.parquet (a row a point) and
dataset/point=pNNNN/records.parquet (each point's records: one Parquet dataset,
partitioned by point, that pandas, DuckDB or polars read in one line). Run again into the
same directory, a sweep runs only the points not done.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from fisrig.errors import InputError, closest
from fisrig.records import run_dir as run_dir_mod, run_state, store
from fisrig.sweep import campaign
from fisrig.sweep.point import Job, fingerprint, run_job
from fisrig.sweep.spec import Sweep, label_of, load, point_tables, profile_text

__all__ = ["Sweep", "SweepResult", "load", "jobs", "run", "MANIFEST"]

MANIFEST = "manifest.json"


@dataclass
class SweepResult:
    out: Path
    points: list[dict[str, Any]]  # the manifest's points, as they ended
    campaign: list[dict] | None = None  # a campaign's merged verdicts, a group each (campaign.merge)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [p for p in self.points if p["status"] != "done"]


def point_name(i: int) -> str:
    return f"p{i + 1:04d}"


def jobs(sweep: Sweep, out: Path) -> list[Job]:
    """Every point as a job, checked as `fisrig run` checks its plan, profile and knobs
    (InputError naming the sweep file's line of the value that made it); a point's own
    profile file is written into out/profiles."""
    from fisrig.run import prepare
    from fisrig.targets import drive_catalog
    out = Path(out)
    result = []
    for i, params in enumerate(sweep.points):
        plan, tables = point_tables(sweep, i)
        if "profile" in params:
            base_profile = _beside(sweep, params["profile"])
            drive_catalog.check_profile(base_profile, sweep.where(i, "profile"))
        else:
            base_profile = _beside(sweep, sweep.profile) if sweep.profile else plan.profile
        profile_keys = {k.split(".", 1)[1]: v for k, v in params.items() if k.startswith("profile.")}
        profile = base_profile
        if profile_keys:
            where = sweep.where(i, next(k for k in params if k.startswith("profile.")))
            known = drive_catalog.profile_keys()
            for key in profile_keys:
                if key not in known:
                    raise InputError(sweep.where(i, f"profile.{key}"),
                                     f"no drive-profile key {key!r} {closest(key, known)}")
            path = out / "profiles" / f"{point_name(i)}.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            base = str(Path(base_profile).resolve()) if drive_catalog.is_path(base_profile) else base_profile
            try:
                path.write_text(profile_text(base, profile_keys))
            except InputError as e:
                raise InputError(where, e.message) from None
            try:
                drive_catalog.ask("check-profile", str(path))
            except drive_catalog.DriveRefused as e:
                raise InputError(where, f"point {i + 1} ({label_of(params)}): the drive refuses its profile: "
                                        f"{e.message}") from None
            profile = str(path.resolve())
        faults = [f"{k.split('.', 1)[1]}={_text(v)}" for k, v in params.items() if k.startswith("fault.")]
        target = params.get("target", sweep.target)
        try:
            prepared = prepare(plan, target, profile, faults)
        except InputError as e:
            key = next(iter(params), None)
            raise InputError(sweep.where(i, key) if key else sweep.source,
                             f"point {i + 1} ({label_of(params)}): {e}") from None
        job = Job(index=i, name=point_name(i), params=params, plan=tables,
                  plan_source=str(sweep.plan_of(i)[0]), plan_text=sweep.plan_of(i)[2], profile=profile, faults=faults,
                  target=target, out=str((out / "runs" / point_name(i)).resolve()), estimate=prepared.estimate)
        result.append(job)
    return result


def _beside(sweep: Sweep, profile: Any) -> Any:
    """A profile file named relative to the sweep file, as its plan is; a name as it is."""
    from fisrig.targets import drive_catalog
    if isinstance(profile, str) and drive_catalog.is_path(profile) and not Path(profile).is_absolute():
        return str(Path(sweep.source).parent / profile)
    return profile


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def estimate_line(js: list[Job]) -> str:
    """The whole sweep's cost, as a run's estimate line adds up."""
    from fisrig.compile.estimate import _duration, size_text
    commands = sum(j.estimate.commands for j in js)
    records = sum(j.estimate.records for j in js)
    disk = sum(j.estimate.disk_bytes_max for j in js)
    sim_s = sum(j.estimate.sim_s_min for j in js)
    return (f"estimate: {len(js)} points, {commands:,} commands, {records:,} records, disk at most "
            f"{size_text(disk)}, simulated time at least {_duration(sim_s)} in all")


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)  # a sweep killed mid-write leaves the manifest before it


def _manifest(sweep: Sweep, js: list[Job], states: dict[str, dict]) -> dict:
    return {"sweep": sweep.name, "description": sweep.description, "source": sweep.source, "digest": sweep.digest(),
            "plan": str(sweep.plan_path), "profile": sweep.profile, "target": sweep.target,
            **({"plans": {k: str(path) for k, (path, _, _) in sweep.plans.items()}} if sweep.plans else {}),
            **({"campaign": sweep.campaign} if sweep.campaign else {}),
            "axes": [{"key": a.key, "values": a.values} for a in sweep.axes],
            "points": [{"point": j.name, "params": j.params, "run_dir": f"runs/{j.name}", **states[j.name]}
                       for j in js]}


def _done(out: Path, point: dict) -> bool:
    """A point the manifest says is done and whose run directory says so too."""
    if point.get("status") != "done":
        return False
    try:
        return run_state.inspect(out / point["run_dir"]).status == "done"
    except InputError:
        return False


def run(sweep: Sweep, out: Path, scheduler: str | None = None, workers: int | None = None, force: bool = False,
        quiet: bool = False, say: Callable[[str], None] | None = None) -> SweepResult:
    """Runs the sweep's points not done yet into `out` on a LocalCluster of `workers`
    single-threaded processes (one a core by default), or on the dask scheduler at
    `scheduler` (HOST:PORT); a point that fails or whose worker dies is tried once more, then
    recorded failed with its error, and the rest go on. `out` holding another sweep is
    refused unless `force` (which replaces it)."""
    out = Path(out)
    say = say or (lambda line: None)
    if scheduler:
        _reach(scheduler)  # before anything is written
    with run_dir_mod.take(out, f"--out {out}", what="sweep", plan=sweep.name):
        old = out / MANIFEST
        states = {point_name(i): {"status": "pending"} for i in range(len(sweep.points))}
        if old.exists():
            try:
                manifest = json.loads(old.read_text())
            except (OSError, ValueError) as e:
                raise InputError(str(old), f"not a sweep's manifest ({e}): name another --out") from None
            if manifest.get("digest") != sweep.digest():
                if not force:
                    raise InputError(f"--out {out}", f"holds another sweep ({manifest.get('sweep')!r}, other points): "
                                                     "name another directory, or --force to replace it")
                for name in ("runs", "profiles", "dataset", campaign.DIR, MANIFEST, "points.parquet"):
                    path = out / name
                    shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            else:
                for p in manifest.get("points", []):
                    if p.get("point") in states and _done(out, p):
                        states[p["point"]] = {k: v for k, v in p.items() if k not in ("point", "params", "run_dir")}
        elif any(p.name != run_dir_mod.LOCK for p in out.iterdir()) and not force:
            raise InputError(f"--out {out}", "holds files that are not a sweep's: name an empty or new directory")
        try:
            js = jobs(sweep, out)
        except InputError:
            if not old.exists():  # a refused sweep leaves nothing behind (its profiles were written to be checked)
                shutil.rmtree(out / "profiles", ignore_errors=True)
            raise
        todo = [j for j in js if states[j.name]["status"] != "done"]
        if not quiet:
            say(f"sweep '{sweep.name}': {len(js)} points, {len(js) - len(todo)} done already, into {out}")
            say(estimate_line(todo) if todo else "estimate: nothing left to run")
        _write_json(old, _manifest(sweep, js, states))
        if todo:
            _run_on_dask(todo, states, scheduler, workers,
                         lambda: _write_json(old, _manifest(sweep, js, states)), None if quiet else say)
        _write_tables(out, sweep, js, states)
        _write_json(old, _manifest(sweep, js, states))
        points = _manifest(sweep, js, states)["points"]
        merged = campaign.merge(out, sweep.campaign["key"], points) if sweep.campaign else None
    return SweepResult(out, points, merged)


def _reach(scheduler: str) -> None:
    from distributed import Client
    try:
        with Client(scheduler, timeout="15s"):
            pass
    except (OSError, TimeoutError) as e:
        raise InputError(f"--scheduler {scheduler}", f"no dask scheduler answers there ({e})") from None


def _run_on_dask(todo: list[Job], states: dict[str, dict], scheduler: str | None, workers: int | None,
                 saved: Callable[[], None], say: Callable[[str], None] | None) -> None:
    import dask
    from distributed import Client, LocalCluster, as_completed
    cluster = None
    # One retry, then a point is failed: the scheduler's allowed-failures (a worker's death
    # while it ran the point) and each task's retries (its exception). A scheduler started
    # apart keeps its own allowed-failures (docs/sweeps.md).
    with dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.logging.distributed": "error"}):
        try:
            if scheduler:
                try:
                    client = Client(scheduler, timeout="15s")
                except (OSError, TimeoutError) as e:  # it answered a moment ago (_reach)
                    raise InputError(f"--scheduler {scheduler}", f"the dask scheduler went away ({e})") from None
            else:
                n = workers or os.cpu_count() or 1
                # dashboard_address ":0": its HTTP server (health, and the dashboard where bokeh
                # is installed) on a free port; None still bound 8787, warning beside another.
                cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")
                client = Client(cluster)
            with client:
                _check_workers(client, scheduler)
                for j in todo:
                    states[j.name] = {"status": "running"}
                futures = {client.submit(run_job, j, key=f"fisrig-{j.name}-{time.time_ns()}", retries=1, pure=False): j
                           for j in todo}
                started, done_n, failed_n, last = time.monotonic(), 0, 0, 0.0
                for fut in as_completed(futures):
                    j = futures[fut]
                    try:
                        r = fut.result()
                        states[j.name] = {"status": r["status"], "error": r["error"], "wall_s": round(r["wall_s"], 3)}
                    except Exception as e:  # noqa: BLE001 - the run's error, as text, and the sweep goes on
                        states[j.name] = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
                    done_n += states[j.name]["status"] == "done"
                    failed_n += states[j.name]["status"] != "done"
                    saved()
                    now = time.monotonic()
                    if say and (now - last > 2 or done_n + failed_n == len(todo)):
                        last = now
                        finished = done_n + failed_n
                        left = (now - started) / finished * (len(todo) - finished)
                        say(f"sweep: {done_n} done, {len(todo) - finished} to go, {failed_n} failed"
                            + (f"; about {_left(left)} left" if finished < len(todo) else ""))
        finally:
            if cluster is not None:
                cluster.close()


def _left(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


def _check_workers(client, scheduler: str | None) -> None:
    """Every worker runs this fisrig build: one that does not is refused by name."""
    mine = fingerprint()
    theirs = client.run(fingerprint)
    if not theirs:
        raise InputError(f"--scheduler {scheduler}" if scheduler else "sweep", "the cluster has no workers")
    for worker, fp in sorted(theirs.items()):
        if fp != mine:
            raise InputError(f"--scheduler {scheduler}" if scheduler else "sweep",
                             f"worker {worker} runs fisrig {fp['version']} build {fp['build']}, this one "
                             f"{mine['version']} build {mine['build']}: a sweep's workers run the same build")


def _write_tables(out: Path, sweep: Sweep, js: list[Job], states: dict[str, dict]) -> None:
    """points.parquet (a row a point: its name, status, run directory, each axis a column)
    and dataset/point=pNNNN/records.parquet, each point's records, done or not (a hard link
    to its run's, a copy where the file system has none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    keys = list(dict.fromkeys(k for j in js for k in j.params))
    rows = {"point": [j.name for j in js], "status": [states[j.name]["status"] for j in js],
            "run_dir": [f"runs/{j.name}" for j in js]}
    for k in keys:
        values = [j.params.get(k) for j in js]
        kinds = {type(v) for v in values if v is not None}
        rows[k] = values if len(kinds) <= 1 or kinds <= {int, float} else [None if v is None else str(v) for v in values]
    pq.write_table(pa.table(rows), out / "points.parquet")
    dataset = out / "dataset"
    for j in js:
        part = dataset / f"point={j.name}"
        target = out / "runs" / j.name / store.PARQUET
        if part.exists():
            shutil.rmtree(part)
        if not target.exists():  # a point that did not end done keeps what it recorded: points.parquet says how it ended
            continue
        part.mkdir(parents=True)
        try:
            os.link(target, part / store.PARQUET)
        except OSError:
            shutil.copyfile(target, part / store.PARQUET)


def print_say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
