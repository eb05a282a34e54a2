"""Running a plan end to end: check, compile, run on a target, keep the results, report."""
from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fisrig import __version__
from fisrig import plan as plan_mod
from fisrig import program_format as pf
from fisrig.targets import drive_catalog
from fisrig.compile import estimate as estimate_mod
from fisrig.records import current, malloc_reuse, store
from fisrig.report import fio_json, during_run
from fisrig.analysis import phase_stats, power_verdicts, pts
from fisrig import progress
from fisrig.report import build as report
from fisrig.records import run_dir as run_dir_mod, run_state
from fisrig.compile import compile_plan
from fisrig.errors import InputError
from fisrig.capture import format as capture_format, table as capture_table
from fisrig.nvme import identify as nvme_identify
from fisrig.targets import RunSinks, identify_fields, make_target


@dataclass
class RunResult:
    run_dir: Path
    status: str
    phases: list
    plots: list[Path]
    outcome: object


@dataclass
class Prepared:
    """A plan checked against its drive and compiled, not yet run: what it will cost is known."""
    plan: plan_mod.Plan
    target: object
    target_name: str
    profile: str
    faults: list[str]
    ident: dict
    compiled: object
    estimate: estimate_mod.Estimate
    # What the caller may set before execute: progress lines (fisrig.progress.Progress), and
    # where the bytes data-in commands return go (a target that captures_data_in).
    progress: object = None
    data_in: Path | None = None


def prepare(plan: plan_mod.Plan, target: str = "model", profile: str | None = None,
            faults: list[str] | None = None, link_gen: int | None = None, url: str | None = None,
            firmware: str | None = None) -> Prepared:
    """Checks the profile and fault knobs (the drive's own lists and checks), asks the drive
    its IDENTIFY, compiles the plan for its capacity and estimates the run; InputError
    (PlanError for the plan) before anything is written. url: the board target's
    litex_server (HOST:PORT); firmware: the rtl target's firmware build (RtlTarget)."""
    faults = list(faults or [])
    where = f"--profile {profile}" if profile else \
        (f"{plan.source}:{plan.lines[('plan', 0, 'profile')]}" if ("plan", 0, "profile") in plan.lines else plan.source)
    profile = profile or plan.profile
    drive_catalog.check_profile(profile, where)
    for f in faults:
        drive_catalog.check_fault(f, f"--fault {f}")
    tgt = make_target(target, profile, faults, link_gen, url, firmware)
    if plan.protocol == "nvme":  # the model's NVMe engine, or the rig's in Verilator (rtl)
        if target not in ("model", "rtl"):
            raise InputError(f"--target {target}", "an NVMe plan (protocol = \"nvme\") runs on --target model or "
                                                   "rtl; a board's NVMe rig is to come (docs/nvme-rig.md)")
        if target == "rtl" and (link_gen is not None or firmware is not None):
            flag = "--link-gen" if link_gen is not None else "--firmware"
            raise InputError(flag, f"{flag} is the SATA rig's: the NVMe rig runs PCIe Gen2 x4, its program on "
                                   "the VM beside the gateware (docs/nvme-rig.md)")
        tgt.protocol = "nvme"
    try:
        words = tgt.identify()
    except drive_catalog.DriveRefused as e:  # a knob's value, or a profile file's content
        knob = next((f for f in faults if f"fault knob '{f.partition('=')[0]}'" in e.message), None)
        raise InputError(f"--fault {knob}" if knob else where, e.message) from None
    ident = identify_fields(words)
    if plan.protocol == "nvme":  # the drive as the NVMe controller's Identify pages say it
        pages = drive_catalog.nvme_identify_pages(profile)
        ident = nvme_identify.run_facts(pages["controller"], pages["namespace"])
    compiled = compile_plan(plan, ident["lba48_sectors"], ident.get("mdts_bytes"))  # refuses before anything runs
    return Prepared(plan, tgt, target, profile, faults, ident, compiled,
                    estimate_mod.of(compiled.costs, compiled.size))


# What a run leaves in its directory; --force replaces these and nothing else.
# run.json goes last: a --force killed while it removes leaves no records beside it.
RUN_FILES = ("program.bin", store.RAW, store.PARQUET, store.PARQUET + ".tmp", store.SUMMARY,
             "console.log", pts.JSON, report.HTML, power_verdicts.VERDICTS, power_verdicts.CUTS,
             power_verdicts.POWER_JSON, current.CURRENT, current.CURRENT + ".tmp", current.WINDOWS,
             capture_format.CAPTURE_BIN, capture_format.CAPTURE_PARQUET, capture_format.CAPTURE_PARQUET + ".tmp",
             *capture_format.EXPORTS, store.RUN_JSON)


def _own(name: str) -> bool:
    """A file a run writes: one of RUN_FILES, a chart, or one being written (store.write_json's)."""
    if name in RUN_FILES or name.endswith(".png"):
        return True
    base, _, pid = name[1:].removesuffix(".tmp").rpartition(".")
    return name.startswith(".") and name.endswith(".tmp") and base in RUN_FILES and pid.isdigit()


def check_out(out: Path, force: bool) -> list[str]:
    """What `out` holds; InputError when it is a file, or holds anything (another run's
    results, say) and not `force`. Nothing is changed."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}", "is a file, not a directory")
    held = sorted(p.name for p in out.iterdir() if p.name != run_dir_mod.LOCK) if out.is_dir() else []
    if held and not force:
        what = "another run" if (out / store.RUN_JSON).exists() else f"{len(held)} files"
        raise InputError(f"--out {out}", f"holds {what} ({', '.join(held[:4])}{', ...' if len(held) > 4 else ''}); "
                                         "choose another --out, or add --force to replace its results")
    return held


def check(p: Prepared, out: Path, force: bool) -> str | None:
    """Every refusal execute makes, before anything is written: `out`, and the disk; returns
    a warning when the run may outgrow the disk (estimate.check_disk says when)."""
    check_out(out, force)
    return estimate_mod.check_disk(p.estimate, out, force)


def claim_out(out: Path, force: bool) -> None:
    """`out` made ready for a new run (check_out's refusals); with `force`, only fisrig's own
    files are removed from it, nothing else."""
    out = Path(out)
    held = set(check_out(out, force))
    try:
        for name in sorted(held, key=lambda n: n == store.RUN_JSON):  # run.json last
            if _own(name):
                (out / name).unlink()
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {out}", f"cannot use it: {e.strerror or e}") from None


def take_out(p: Prepared, out: Path) -> run_dir_mod.Claim:
    """`out` taken for this run (run_dir.take): InputError naming the run that holds it."""
    return run_dir_mod.take(out, f"--out {out}", plan=p.plan.name, seed=p.plan.seed)


def execute(p: Prepared, out: Path, quiet: bool = False, force: bool = False, keep_raw: bool = False,
            claim: run_dir_mod.Claim | None = None, charts: bool = True) -> RunResult:
    """Runs a prepared plan into `out`: refused when another process holds `out`, when it
    holds anything (unless `force`) or the disk would not hold the run (unless `force`).
    `claim`: `out` taken already (take_out), else it is taken here and let go at the end.
    run.json is written before the run starts, so a run that is killed can still be
    reported from what it recorded; a run that fails says so in run.json, with why.
    Without `charts` the report draws none (a sweep's points: `fisrig report` draws them)."""
    out = Path(out)
    if claim is None:
        with take_out(p, out) as claim:
            return execute(p, out, quiet, force, keep_raw, claim, charts)
    check(p, out, force)
    claim_out(out, force)
    plan = p.plan
    meta = {
        "run_id": claim.run_id,
        "schema_version": store.SCHEMA_VERSION, "fisrig_version": __version__,
        "versions": {"fisrig": __version__, "engine_interface": pf.ENGINE_IF_VERSION,
                     "program_format": pf.PROGRAM_VERSION, "target": p.target_name},
        "started": int(time.time()), "target": p.target_name, "link_gen": p.target.link_gen,
        "protocol": p.target.protocol,  # what the commands went over: sata, or nvme (docs/nvme.md)
        "url": getattr(p.target, "url", None),  # the board target's litex_server
        "firmware": getattr(p.target, "firmware", None),  # the rtl target's firmware build
        "profile": p.profile, "faults": p.target.faults,  # as the target runs its drive
        "seed": plan.seed, "status": "running",
        "plan": {"name": plan.name, "description": plan.description, "source": plan.source,
                 "data": plan.data, "compress_pct": plan.compress_pct, "on_error": plan.on_error,
                 "retries": plan.retries, "timeout_ms": plan.timeout_ms, "link_timeout_ms": plan.link_timeout_ms,
                 "steps": [{"do": s.do, "label": s.label, **s.args} for s in plan.steps]},
        "markers": {str(k): v for k, v in p.compiled.markers.items()},
        "phase_goals": phase_goals(p.compiled),
        "power_loss": p.compiled.power_loss,
        "captures": p.compiled.captures,
        "identify": p.ident,
        "estimate": dataclasses.asdict(p.estimate),
    }
    store.write_json(out / store.RUN_JSON, meta)  # first: every file after it is this run's
    p.compiled.write(out / "program.bin")
    stream = store.ParquetStream(out, dict(p.compiled.markers), work=during_run.PhaseWork(
        meta, None if (free := memory_available()) is None else free // REPORT_BYTES_PER_RECORD), metadata=run_dir_mod.parquet_metadata(claim.run_id))
    sinks = RunSinks(progress=p.progress, records=stream, data_in=p.data_in, read_back=bool(p.compiled.power_loss),
                     records_expected=p.estimate.records_max,
                     capture=out / capture_format.CAPTURE_BIN if p.compiled.captures else None)
    try:
        outcome = p.target.run(out / "program.bin", out / store.RAW, sinks, quiet=quiet)
    except BaseException as e:  # noqa: B902 - whatever stopped it, run.json says so, then it goes on up
        stream.abandon()  # `fisrig report` makes records.parquet from records.bin
        meta["status"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
        meta["error"] = str(e) or type(e).__name__
        store.write_json(out / store.RUN_JSON, meta)
        raise
    meta["status"] = outcome.status
    # The current sampler's records go to current.parquet, not records.parquet: run_state
    # counts them there once records.bin is gone.
    meta["outcome"] = {**dataclasses.asdict(outcome), "current_records": stream.current.records}
    if outcome.status != "done":
        meta["error"] = outcome.error or outcome.status
    store.write_json(out / store.RUN_JSON, meta)
    removal = finish_stream(out, stream, keep_raw)
    try:
        phases, plots = rebuild(out, keep_raw, stream.table,
                                stream.work.ready() if stream.work is not None and stream.table is not None else None,
                                charts)
    finally:
        if removal:
            removal.join()
    outcome.notes += capture_table.notes(out, p.compiled.captures)
    return RunResult(out, outcome.status, phases, plots, outcome)


def phase_goals(compiled) -> dict[str, dict]:
    """What each phase asked, by label, as far as it is known before it runs (progress.goals):
    its counted commands, and its steps' time when stopped by time; phase_stats.mark_partial
    holds a phase the run's stop cut short to it."""
    out = {}
    for marker, g in progress.goals(compiled).items():
        label = compiled.markers.get(marker)
        if label is not None and (g.commands or g.timed_ticks):
            out[label] = {"commands": round(g.commands) if g.counted else None,
                          "seconds": g.timed_ticks / pf.TICK_HZ if g.timed_ticks else None}
    return out


# A run of this many records or more gives back what its conversion kept before its report
# (whose arrays glibc serves by mmap, beside it); a smaller one keeps it for the process's
# next run, a sweep worker's next point (a point of 1.5 M records faulted in some 200 MB anew
# when it was given back: docs/performance.md, "A sweep point's host share").
GIVE_BACK_RECORDS = 1 << 22


def finish_stream(out: Path, stream: store.ParquetStream, keep_raw: bool) -> threading.Thread | None:
    """records.parquet as streamed during the run, checked against records.bin's count;
    records.bin goes unless kept (its name at once, its blocks on the thread returned). A
    stream that does not check is dropped with a line on stderr, and rebuild makes
    records.parquet from records.bin as for a run without one. The check reads back the
    report's columns when the report fits in memory (stream.table; rebuild takes it)."""
    raw = out / store.RAW
    raw_records = store.raw_count(raw)[0] if raw.exists() else 0
    if not raw_records:  # nothing recorded: rebuild says so, and what there is stays
        stream.abandon()
        return None
    try:
        check_report_fits(out, raw_records)  # what the report will hold (stream.rows: its written row groups)
        columns = report.REPORT_COLUMNS
    except ReportTooLarge:  # rebuild says so; the check reads only what it checks
        columns = store.CHECKED
        if stream.work is not None:  # and what it kept goes
            stream.work.close()
            stream.work = None
    try:
        stream.finish(raw_records, columns)
        if columns == store.CHECKED:  # not the report's: rebuild reads those, compacted, with this gone
            stream.table = None
        if raw_records >= GIVE_BACK_RECORDS:  # what the conversion kept: the report's arrays are mmap's
            malloc_reuse.give_back()
    except store.ParquetCheckError as e:
        stream.abandon()
        print(f"fisrig: {e}; making it again from {store.RAW}", file=sys.stderr)
        return None
    return None if keep_raw else remove_in_background(raw)


def remove_in_background(path: Path) -> threading.Thread:
    """Removes `path`: its name now, its blocks when the thread returned closes the last
    descriptor of it (the kernel frees them then, and may first wait for their writeback:
    `rm` of the main job's 3.7 GB records.bin, just written, took 3.6 s), so the report is
    made meanwhile. A process that dies first still frees them, as it closes its descriptors."""
    fd = os.open(path, os.O_RDONLY)
    try:
        path.unlink()
    finally:
        removal = threading.Thread(target=os.close, args=(fd,), name=f"removal of {path.name}")
        removal.start()
    return removal


def run_plan(plan: plan_mod.Plan, out: Path, target: str = "model", profile: str | None = None,
             faults: list[str] | None = None, quiet: bool = False,
             link_gen: int | None = None, force: bool = False, keep_raw: bool = False,
             url: str | None = None, firmware: str | None = None, charts: bool = True) -> RunResult:
    """Runs `plan` and leaves in `out`: run.json, program.bin, records.parquet, summary.json
    and the plots, and records.bin with keep_raw (prepare, then execute). link_gen: the SATA
    speed of the rig's link (rtl target; Gen3 when not given)."""
    return execute(prepare(plan, target, profile, faults, link_gen, url, firmware), out, quiet=quiet, force=force,
                   keep_raw=keep_raw, charts=charts)


# What the report holds in memory a record (its columns, per-phase copies and sorts) at its
# peak, fixed costs included: above the highest measured (docs/performance.md, "The
# report's time and memory"), so that a run whose report would not fit is refused, not
# killed by the kernel.
REPORT_BYTES_PER_RECORD = 155
# The same for a report read compacted (store.read_compact, rebuild's), a record of a phase
# that is one run of rows.
REPORT_BYTES_ONE_RUN = 100


class ReportTooLarge(RuntimeError):
    """A run whose report would not fit in this machine's memory: its records are kept."""


def memory_available() -> int | None:
    """Bytes this machine can give a process now (Linux's MemAvailable), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def compacted_need(parquet: Path, rows: int) -> int:
    """What the report of records.parquet's `rows` holds when it reads them compacted
    (store.read_compact, as rebuild does): a phase that is one run of rows takes its
    columns as views of the table's (REPORT_BYTES_ONE_RUN a record), a phase in a loop,
    its rows apart, gathers them (REPORT_BYTES_PER_RECORD)."""
    import pyarrow.parquet as pq

    from fisrig.analysis.arrays import command_runs
    with store.reading_parquet(parquet):  # a damaged file: one line naming it
        t = pq.read_table(parquet, columns=["marker", "kind"])
    marker, _ = store.codes(t, "marker")
    kind, names = store.codes(t, "kind")
    del t
    starts, ends = command_runs(marker, kind == store.code_of(names, "command"))
    of = marker[starts]
    del marker, kind
    looped = np.bincount(of, minlength=int(of.max(initial=0)) + 1)[of] > 1  # the runs of a marker that has several
    rows_looped = int((ends - starts)[looped].sum())
    return (rows - rows_looped) * REPORT_BYTES_ONE_RUN + rows_looped * REPORT_BYTES_PER_RECORD


def check_report_fits(run_dir: Path, rows: int, parquet: Path | None = None) -> None:
    """ReportTooLarge, before the report starts, when it would need more memory than the
    machine has free (the kernel would kill it part-way: a 200 M-record run did). With
    `parquet`, the records.parquet the report will read compacted: its phases' shapes are
    counted (compacted_need) when REPORT_BYTES_PER_RECORD a record would not fit."""
    need, free = rows * REPORT_BYTES_PER_RECORD, memory_available()
    if free is not None and need > free and parquet is not None:
        need = compacted_need(parquet, rows)
    if free is not None and need > free:
        size = estimate_mod.size_text
        raise ReportTooLarge(f"{run_dir}: the report of {rows:,} records needs about {size(need)} of memory and "
                             f"{size(free)} is free, so it was not made; records.parquet holds every record "
                             f"(DuckDB and polars read it in pieces): run `fisrig report {run_dir}` where there is "
                             "more memory")


def rebuild(run_dir: Path, keep_raw: bool = True, table=None, ready: dict | None = None, charts: bool = True):
    """records.parquet (from records.bin if need be), summary.json and the plots (from
    `table`, report.REPORT_COLUMNS of records.parquet, when the caller has read it, and
    `ready`, phase_stats.compute's: phases of that table made while the run ran). A
    records.parquet is never replaced by one with fewer records (records.bin cut short);
    InputError for a directory that is not a run, a damaged file, or no records at all.
    Unless keep_raw, records.bin goes once records.parquet is made from it and read back
    (store.write_parquet checks it), except while run.json says `running`: the target may
    still be writing it (or was killed, and then what is left is kept as it is)."""
    state = run_state.inspect(run_dir)
    meta = run_state.read_meta(run_dir)
    parquet = run_dir / store.PARQUET
    if not state.have:
        raise InputError(str(run_dir), f"no records to report (the run ended {state.line()})")
    if state.raw_records is not None and (
            state.parquet_rows is None or
            ((run_dir / store.RAW).stat().st_mtime > parquet.stat().st_mtime and
             state.raw_records >= state.parquet_rows)):
        markers = meta.get("markers", {})
        store.write_parquet(run_dir, {int(k): str(v) for k, v in markers.items() if str(k).isdigit()}
                              if isinstance(markers, dict) else {}, metadata=run_dir_mod.parquet_metadata(meta.get("run_id")))
        if not keep_raw and meta.get("status") != "running":
            (run_dir / store.RAW).unlink()
        table = ready = None  # the records.parquet just made is the one to report
    if table is None or table.column_names != list(report.REPORT_COLUMNS):
        import pyarrow.parquet as pq
        check_report_fits(run_dir, pq.ParquetFile(parquet).metadata.num_rows, parquet)
        table = store.read_compact(parquet, report.REPORT_COLUMNS)
        ready = None
    capture_table.make(run_dir, keep_raw or meta.get("status") == "running")  # capture.bin's windows, if any
    phases = phase_stats.compute(table, meta, ready)  # one computation for summary.json and the headline
    # summary.json on a second thread while the plots are drawn (its work is numpy's, which
    # lets go of the GIL; matplotlib's is mostly Python's): the main job's rebuild takes 11.6
    # to 13.1 s so, 13.7 to 16.8 one after the other. A plot that fails still leaves summary.json.
    with ThreadPoolExecutor(1) as pool:
        summary = pool.submit(write_summary, run_dir, table, meta, phases)
        made = report.make_report(run_dir, table, meta, phases, charts)
        summary.result()
    return made


def write_summary(run_dir: Path, table, meta: dict, phases: list) -> None:
    """summary.json: fio's JSON of the run, the current's summary in its "fisrig" block."""
    summary = fio_json.fio_summary(table, meta, phases)
    summary["fisrig"].update(run_id=meta.get("run_id"), seed=meta.get("seed"))
    if sampled := current.summary(run_dir):
        summary["fisrig"]["current"] = sampled
    store.write_json(run_dir / store.SUMMARY, summary)
