"""`fisrig report --compare DIR DIR...`: runs overlaid on one chart per kind, as the reviews
draw them (TRIM on against off, NCQ against DMA, drive A against B), and compare.html.

Each run is read from its records.parquet and run.json as `fisrig report` reads it; no run
directory is written to. The charts are report/plots.py's, given every run at once: a legend
entry names the run (its directory's name, with its plan and profile where those differ
between the runs) and the phase. `fisrig compare A B` is another thing: two runs of one
plan held to each other record by record.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fisrig.report import html as html_report, plots
from fisrig.analysis import phase_stats
from fisrig.records import store, run_state
from fisrig.errors import InputError

HTML = "compare.html"
# The charts a comparison draws (latency over time is one run's: runs' dots would hide
# each other), each file named apart from a run's own charts.
PLOTS = {"compare_iops_over_time.png": plots.plot_iops_time, "compare_iops_per_100k.png": plots.plot_iops, "compare_mbps_across_lba.png": plots.plot_lba_mbps,
         "compare_latency_percentiles.png": plots.plot_latency, "compare_transfer_sizes.png": plots.plot_sizes,
         "compare_fill_times.png": plots.plot_fill_times}
OWN_FILES = (HTML, *PLOTS)


@dataclass
class Run:
    dir: Path
    meta: dict
    phases: list
    status: str
    done: bool
    name: str = ""


def load(run_dir: Path) -> Run:
    """A run directory's phases; InputError (one line, naming the directory or file) when
    it is not a run, has no records.parquet, or that file cannot be read."""
    run_dir = Path(run_dir)
    state = run_state.inspect(run_dir)  # not a directory, not a run, damaged run.json or Parquet
    parquet = run_dir / store.PARQUET
    if state.parquet_rows is None:
        raise InputError(str(run_dir), f"has no {store.PARQUET} to compare"
                         + (f" (`fisrig report {run_dir}` makes it from {store.RAW})" if state.raw_records else ""))
    meta = run_state.read_meta(run_dir)
    # Views, not copies, for the phases; a damaged file: InputError naming it (store.reading_parquet).
    table = store.read_compact(parquet, phase_stats.COLUMNS)
    phases = phase_stats.compute(table, meta)
    for p in phases:  # what the charts read of a phase's records, and nothing else
        p.latency_percentiles()  # these two from the records' sort, kept on the phase
        if len(p.latency_ns) >= plots.MIN_LATENCY_COMMANDS:
            plots.latency_curve(p)
        p.rows.keep_only("sorted:t_status_ns", "lbas", "op")
    if not phases:
        raise InputError(str(run_dir), "holds no command records to compare")
    return Run(run_dir, meta, phases, state.line(), state.status == "done" and not state.missing)


def _plan(meta: dict) -> str:
    return str(meta.get("plan", {}).get("name", "?")) if isinstance(meta.get("plan"), dict) else "?"


def name_runs(runs: list[Run]) -> None:
    """Each run's legend name: its directory's name (with its parent's where two share one),
    and its plan and profile where the runs differ in them."""
    names = [r.dir.resolve().name for r in runs]
    if len(set(names)) < len(names):
        names = [f"{r.dir.resolve().parent.name}/{r.dir.resolve().name}" for r in runs]
    if len(set(names)) < len(names):
        names = [str(r.dir.resolve()) for r in runs]
    differ = {key: len({str(get(r.meta)) for r in runs}) > 1
              for key, get in (("plan", _plan), ("profile", lambda m: m.get("profile", "?")))}
    for r, name in zip(runs, names):
        extra = [_plan(r.meta)] if differ["plan"] and _plan(r.meta) not in name else []
        extra += [str(r.meta.get("profile", "?"))] if differ["profile"] else []
        r.name = name + (f" ({', '.join(extra)})" if extra else "")


def default_out(runs: list[Path]) -> Path:
    """runs/compare-A-vs-B[-vs-C][-and-N-more], from the directories' names."""
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "_", Path(d).resolve().name) or "run" for d in runs]
    name = "-vs-".join(parts[:3]) + (f"-and-{len(parts) - 3}-more" if len(parts) > 3 else "")
    return Path("runs") / f"compare-{name[:120]}"


def check_out(out: Path, force: bool) -> None:
    """--out must be a new or empty directory, or (--force) one whose comparison files
    this replaces, nothing else in it; InputError otherwise, before anything is read."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}", "is a file, not a directory")
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if held and not force:
        raise InputError(f"--out {out}", f"is not empty ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}); "
                                         "choose another --out, or add --force to replace the comparison in it")


def caption(runs: list[Run]) -> str:
    """What the charts came from: each run's drive, profile, target, plan and date, a line
    of the caption each (compare.html's table says the rest)."""
    return "\n".join(f"{r.name}: {plots.caption(r.meta)}" for r in runs)


def compare(dirs: list[str], out: Path | None = None, force: bool = False) -> tuple[Path, list[Run], list[Path]]:
    """Reads every run, then draws the charts and compare.html into `out`. Returns the
    directory, the runs (named) and the charts written."""
    if len(dirs) < 2:
        raise InputError("--compare", f"needs two or more run directories (given {len(dirs)})")
    seen: dict[Path, str] = {}
    for d in dirs:
        if Path(d).resolve() in seen:
            raise InputError(d, f"is given twice (as {seen[Path(d).resolve()]})")
        seen[Path(d).resolve()] = d
    out = Path(out) if out is not None else default_out([Path(d) for d in dirs])
    check_out(out, force)
    runs = [load(Path(d)) for d in dirs]
    name_runs(runs)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {out}", f"cannot make it: {e.strerror or e}") from None
    series = [plots.Series(r.phases, r.meta, r.name) for r in runs]
    text = caption(runs)
    paths = [out / name for name, fn in PLOTS.items() if fn(series, out / name, text)]
    page = html_report.compare_page([(r.name, r.dir, r.meta, r.phases, r.status) for r in runs], paths, text)
    (out / HTML).write_text(page, encoding="utf-8")
    return out, runs, paths
