"""The figures and plots reviewers publish, made from records.parquet and run.json.

- the console headline: one line per phase, from phase_stats (the figures summary.json's
  "fisrig" blocks hold), and a warning line for each thing that phase did not do as asked
- the charts (report/plots.py): IOPS per 100,000 commands, MB/s across the LBA span, latency
  percentiles, latency over time, the transfer-size sweep and fill times
- report.html (report/html.py): all of it on one self-contained page

Every plot carries the drive, profile, target, plan and date it came from; a plot with
nothing to draw is not written.
"""
from __future__ import annotations

import json
import os
import select
import signal
import warnings
from pathlib import Path

import pyarrow as pa

from fisrig.capture import timeline as capture_timeline
from fisrig.records import malloc_reuse
from fisrig.report import current_plot, html as html_report, plots, power as power_report
from fisrig.analysis import phase_stats
from fisrig.report import pts_figure
from fisrig.analysis import figure_text as ft
from fisrig.analysis.phase_stats import PhaseStats
from fisrig.report.plots import caption  # noqa: F401 - a run's caption, as callers know it

REPORT_COLUMNS = phase_stats.COLUMNS
HTML = "report.html"


def _rate(v: float) -> str:
    return f"{v:.3g}" if v < 1e5 else f"{v:.3e}"


def latency_line(j: dict) -> str:
    """A phase's latency as the headline gives it: mean, the percentiles and the max, of its
    commands that completed OK."""
    lat = phase_stats.published_latency(j)
    if lat is None:
        return "no latency (no command completed OK)"
    return "latency " + "  ".join(f"{what} {ft.us(ns)}" for what, ns in lat.items())


def headline(ph: list[PhaseStats]) -> list[str]:
    """One line per phase, printed from the same dict summary.json holds for it, and a
    "!" line under it for each warning (a phase cut short first)."""
    lines = []
    for p in ph:
        j = p.to_json()
        # A rate over one command is 1 / its latency (a FLUSH "ran at 6 million IOPS"): the
        # latency says it, a rate would mislead.
        one = j["commands"] < 2
        if j["kind"] == "sweep":
            what = f"{'sweep':<12} {j['sweep']['mb_per_s']:8,.1f} MB/s ({j['sweep']['zones']} zones)"
        elif j["trimmed_lbas"] and not j["data_bytes"]:
            what = (f"{j['kind']:<12} {'one command' if one else ft.count(j['iops']).rjust(8) + ' IOPS'}  "
                    f"trimmed {ft.count(j['trimmed_lbas'])} LBAs ({j['trimmed_lbas'] * 512 / 1e9:,.1f} GB)"
                    + ("" if one else f", {_rate(j['trimmed_lbas_per_s'])} LBAs/s"))
        elif one:
            what = f"{j['kind']:<12} {'one command':>28}"
        else:
            what = f"{j['kind']:<12} {ft.count(j['iops']):>8} IOPS {j['data_mb_per_s']:8,.1f} MB/s"
            if j["trimmed_lbas"]:
                what += f"  trimmed {ft.count(j['trimmed_lbas'])} LBAs"
        qd = j["queue_depth"]
        depth = (f"QD {qd['held_mean']:.2f} held (max {qd['held_max']})"
                 + (f" of {qd['asked']}" if qd["asked"] else ""))
        issued = f", issued {ft.count(j['issue_rate'])}/s" if j["commands"] > 1 else ""
        lines.append(f"{p.label:<18} {ft.count(j['commands']):>10} cmds  {what}  {depth}{issued}  {latency_line(j)}"
                     + (f"  {ft.count(j['errors'])} errors" if j["errors"] else "")
                     + (f" ({ft.count(j['sent_again'])} sent again, {ft.count(j['failed'])} failed)"
                        if j.get("sent_again") else "")
                     + (f"  WA {j['write_amplification']['value']:.2f} (SMART)"
                        if (j.get("write_amplification") or {}).get("value") is not None else ""))
        lines += [f"  ! {p.label}: {w}" for w in j["warnings"]]
    return lines


# A run's charts, in the order report.html shows them.
PLOTS = {"iops_over_time.png": plots.plot_iops_time, "iops_per_100k.png": plots.plot_iops, "mbps_across_lba.png": plots.plot_lba_mbps,
         "latency_percentiles.png": plots.plot_latency, "latency_over_time.png": plots.plot_latency_time,
         "current_over_time.png": current_plot.plot_current_time,
         "transfer_sizes.png": plots.plot_sizes, "fill_times.png": plots.plot_fill_times,
         "fill_mbps.png": plots.plot_fill_mbps}


# The charts drawn in a child process (fork) while this one draws the others: counting the
# latency cells and drawing them takes as long as all the others together (the main job's:
# 1.0 s and 1.0 s), and both are mostly Python's, which one process runs on one core at a
# time. Only numpy and matplotlib run in the child.
APART = ("latency_over_time.png",)
# How long the child may take once this process has drawn its own: past it, it is killed
# and its charts are drawn here, as they are when it fails or cannot be made.
CHILD_WAIT_S = 60


def draw_plots(series: list, run_dir: Path, text: str) -> list[Path]:
    """PLOTS' charts of `series`, each that has something to draw written into run_dir
    (APART's in a child process, when one can be made); the ones written, in PLOTS' order."""
    apart = [name for name in PLOTS if name in APART]
    child = _fork_drawing(apart, series, run_dir, text)
    try:
        drawn = {name for name in PLOTS if name not in APART and PLOTS[name](series, run_dir / name, text)}
    except BaseException:
        if child:
            os.kill(child[0], signal.SIGKILL)
            os.waitpid(child[0], 0)
            os.close(child[1])
        raise
    from_child = _child_drew(*child) if child else None
    if from_child is None:  # no child, or it failed or hung: drawn here
        from_child = {name for name in apart if PLOTS[name](series, run_dir / name, text)}
    return [run_dir / name for name in PLOTS if name in drawn | from_child]


def _fork_drawing(names: list[str], series: list, run_dir: Path, text: str) -> tuple[int, int] | None:
    """A child process drawing `names`, and the pipe it says which it wrote on (JSON);
    None where there is no fork, or it fails. The child never returns from here."""
    if not names or not hasattr(os, "fork"):
        return None
    r, w = os.pipe()
    try:
        with warnings.catch_warnings():  # Python 3.12's, on forking a process with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.write(w, json.dumps([n for n in names if PLOTS[n](series, run_dir / n, text)]).encode())
            code = 0
        finally:  # whatever happened, the child goes here: the parent draws what it did not
            os._exit(code)
    os.close(w)
    return pid, r


def _child_drew(pid: int, r: int) -> set[str] | None:
    """The charts the child wrote; None when it failed, or took over CHILD_WAIT_S (killed)."""
    try:
        ready, _, _ = select.select([r], [], [], CHILD_WAIT_S)  # its answer, or its end
        if not ready:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        said = os.read(r, 1 << 20) if ready else b""
    finally:
        os.close(r)
    return set(json.loads(said)) if ready and os.waitstatus_to_exitcode(status) == 0 else None


def make_report(run_dir: Path, table: pa.Table | None = None, meta: dict | None = None,
                phases: list[PhaseStats] | None = None, charts: bool = True) -> tuple[list[PhaseStats], list[Path]]:
    """The phases' figures, the plots that have something to draw (only those are
    written; none without `charts`) and report.html with them."""
    malloc_reuse.keep_freed()
    if meta is None:
        from fisrig.records.store import read_meta
        meta = read_meta(run_dir)
    if phases is None:
        if table is None:
            from fisrig.records.store import PARQUET, read_compact
            table = read_compact(run_dir / PARQUET, REPORT_COLUMNS)  # a damaged file: one line naming it
        phases = phase_stats.compute(table, meta)
    series = [plots.Series(phases, meta)]
    text = caption(meta)
    paths = draw_plots(series, run_dir, text) if charts else []
    paths += [p for p in pts_figure.report(run_dir, meta, text, table) if p.suffix == ".png"]  # SNIA PTS steps
    paths += power_report.report(run_dir, meta, text, charts)  # power_loss steps: verdicts.parquet, power.json
    write_html(run_dir, meta, phases, paths)
    return phases, paths


def write_html(run_dir: Path, meta: dict, phases: list[PhaseStats], paths: list[Path]) -> Path:
    """report.html in the run directory: the run, its phases' figures and `paths`' charts."""
    from fisrig.records.run_state import inspect
    try:
        status = inspect(run_dir).line()
    except Exception:  # noqa: BLE001 - figures given without a run directory (a test's): run.json's word
        status = str(meta.get("status", "unknown"))
    out = run_dir / HTML
    out.write_text(html_report.run_page(meta, phases, paths, status, caption(meta),
                                        power_report.html_section(run_dir) + current_plot.html_section(run_dir)
                                        + capture_timeline.html_section(run_dir, phases)),
                   encoding="utf-8")
    return out
