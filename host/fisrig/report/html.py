"""report.html and compare.html: a run (or runs side by side) on one page a reviewer can
publish or mail as it is: the plan, the drive, every phase's figures and every chart.

Self-contained: the charts are inline (base64 PNG), the style is inline, nothing is
fetched, no script runs. Built with the standard library (html.escape on every value that
comes from a run: a plan's labels, a profile's model string and run.json are user data).
The phase figures are phase_stats' to_json(), the dict summary.json's "fisrig" blocks
hold and the console headline prints, so the page cannot disagree with either.
"""
from __future__ import annotations

import base64
import time
from html import escape
from pathlib import Path

from fisrig import __version__
from fisrig.analysis import figure_text as ft
from fisrig.report.html_parts import Markup, _e, _table
from fisrig.analysis.phase_stats import PUBLISHED_LATENCY, published_latency

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #1d1d1f; margin: 2em auto; max-width: 1180px; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.1em; } h2 { font-size: 1.2em; margin-top: 1.8em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #555; margin-top: 0; white-space: pre-line; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #d6d6d6; padding: 3px 8px; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td:first-child { white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { width: 11em; }
.warn { color: #9a4b00; }
.bad { color: #b00020; font-weight: 600; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 12px; }
footer { color: #777; font-size: 12px; margin-top: 3em; }
code { font-size: 12px; }
.wide { overflow-x: auto; }
details { margin: 0.3em 0; }
"""


def _d(v: object) -> dict:
    return v if isinstance(v, dict) else {}


def _kv(rows: list[tuple[str, object]]) -> str:
    """A two-column table; values are escaped here (pass Markup for ready HTML)."""
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v.html if isinstance(v, Markup) else _e(v)}</td></tr>"
                   for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _date(meta: dict) -> str:
    started = meta.get("started")
    return (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
            if isinstance(started, (int, float)) else "unknown")


def _status(line: str) -> Markup:
    return Markup(f'<span class="{"" if line == "done" else "bad"}">{_e(line)}</span>')


def run_rows(meta: dict, status: str) -> list[tuple[str, object]]:
    """What ran, where and when, and how it ended."""
    plan = _d(meta.get("plan"))
    target = str(meta.get("target", "unknown"))
    if meta.get("link_gen") and target == "rtl":
        target += f" (SATA Gen{meta['link_gen']})"
    faults = meta.get("faults")
    outcome = _d(meta.get("outcome"))
    rows = [("plan", plan.get("name", "?")), ("description", plan.get("description") or ""),
            ("plan file", plan.get("source") or ""), ("target", target), ("profile", meta.get("profile", "?")),
            ("faults", ", ".join(map(str, faults)) if isinstance(faults, list) and faults else "none"),
            ("seed", meta.get("seed", "")), ("run id", meta.get("run_id") or "none (a run from before run ids)"),
            ("started", _date(meta)), ("status", _status(status))]
    if outcome:
        sim = outcome.get("sim_ns")
        rows += [("commands", f"{outcome.get('commands', '?'):,}" if isinstance(outcome.get("commands"), int)
                  else outcome.get("commands", "?")),
                 ("simulated time", f"{sim / 1e9:,.1f} s" if isinstance(sim, (int, float)) else "?")]
        notes = outcome.get("notes")
        rows += [("note", n) for n in (notes if isinstance(notes, list) else [])]
    rows.append(("fisrig", meta.get("fisrig_version", "?")))
    return rows


def drive_rows(meta: dict) -> list[tuple[str, object]]:
    """The drive's IDENTIFY, as `fisrig identify` prints it."""
    ident = _d(meta.get("identify"))
    sectors = ident.get("lba48_sectors")
    cap = (f"{sectors:,} sectors ({sectors * 512 / 1e9:.1f} GB)" if isinstance(sectors, int) else "?")
    trim = ident.get("trim")
    rows = [("model", ident.get("model", "?")), ("serial", ident.get("serial", "?")),
            ("firmware", ident.get("firmware", "?")), ("capacity", cap)]
    if "controller" in ident:  # over NVMe (nvme.identify.run_facts)
        mdts = ident.get("mdts_bytes")
        return rows + [("MDTS", f"{mdts // 1024} KiB" if mdts else "no limit"),
                       ("volatile write cache", "yes" if ident.get("volatile_write_cache") else "no"),
                       ("deallocate (TRIM)", "yes" if trim else "no")]
    return rows + [("NCQ depth", ident.get("ncq_depth", "?")), ("TRIM", "yes" if trim else "no" if trim is not None else "?")]


# A raw step's ATA fields, shown as the plan and the ATA tables write them.
HEX_KEYS = ("command", "features", "count", "lba", "device", "aux", "icc", "expect_status", "expect_error")


def _value(key: str, v: object) -> str:
    return f"{v:#x}" if key in HEX_KEYS and isinstance(v, int) and not isinstance(v, bool) else str(v)


def steps_table(meta: dict) -> str:
    steps = _d(meta.get("plan")).get("steps")
    rows = []
    for i, s in enumerate(steps if isinstance(steps, list) else [], 1):
        s = _d(s)
        rest = "  ".join(f"{k} = {_value(k, v)}" for k, v in s.items() if k not in ("do", "label"))
        rows.append([i, s.get("do", "?"), s.get("label") or "", Markup(f"<code>{_e(rest)}</code>")])
    return _table(["#", "do", "label", "settings"], rows, {0}) if rows else "<p>run.json holds no plan.</p>"


PHASE_HEAD = ["phase", "kind", "commands", "errors", "seconds", "IOPS", "MB/s", "trimmed LBAs", "QD asked",
              "QD held (mean)", "QD max", "issued /s"] + [f"{what} latency (us)" for what in PUBLISHED_LATENCY] + \
             ["WA (SMART)"]


def phase_row(label: str, j: dict) -> list[object]:
    """One phase's figures from its summary.json "fisrig" block, formatted as the headline
    formats them (a sweep's MB/s is its zones' average)."""
    qd, lat = j["queue_depth"], published_latency(j)
    # A rate over one command is 1 / its latency: the latency says it (as the headline).
    mbps = (f"{j['sweep']['mb_per_s']:,.1f} ({j['sweep']['zones']} zones)" if "sweep" in j
            else f"{j['data_mb_per_s']:,.1f}" if j["commands"] > 1 else "")
    errors = (f"{j['errors']} ({j['sent_again']} sent again, {j['failed']} failed)" if j.get("sent_again")
              else j["errors"])
    if j.get("partial"):  # a banner on the phase: its figures are not the whole phase's
        label = Markup(f'{_e(label)} <span class="bad">PARTIAL</span>')
    return [label, j["kind"], ft.count(j["commands"]), errors, f"{j['seconds']:,.3f}",
            ft.count(j["iops"]) if j["commands"] > 1 else "one command", mbps,
            ft.count(j["trimmed_lbas"]) if j["trimmed_lbas"] else "", qd["asked"] if qd["asked"] else "",
            f"{qd['held_mean']:.2f}", qd["held_max"], ft.count(j["issue_rate"]) if j["commands"] > 1 else ""] + \
           ([ft.us_number(ns) for ns in lat.values()] if lat else [""] * len(PUBLISHED_LATENCY)) + \
           [f"{wa:.2f}" if (wa := (j.get("write_amplification") or {}).get("value")) is not None else ""]


def phases_section(phases: list, meta: dict) -> str:
    """The phases' table; its seconds are simulated seconds where the run's target simulates."""
    figures = [(p.label, p.to_json()) for p in phases]
    head = [(ft.clock_word(meta) + h) if h == "seconds" else h
            for h in PHASE_HEAD]
    table = _table(head, [phase_row(label, j) for label, j in figures], set(range(2, len(PHASE_HEAD))))
    table = f'<div class="wide">{table}</div>'  # its 18 columns scroll rather than spill out of the page
    warnings = [(label, w) for label, j in figures for w in j["warnings"]]
    notes = "".join(f'<li class="warn"><b>{_e(label)}</b>: {_e(w)}</li>' for label, w in warnings)
    return table + (f"<ul>{notes}</ul>" if notes else "")


def slowest_section(phases: list) -> str:
    """Each phase's slowest commands (phase_stats.slowest), a table a phase, folded under its
    label (a SNIA PTS run has 57 phases); the submit time in seconds on the rig's clock."""
    parts = []
    for p in phases:
        rows = [[i, f"{c['command']:#04x}", ft.count(c["lba"]), f"{c['lbas'] * 512 / 1024:,.1f}",
                 f"{c['t_submit_ns'] / 1e9:,.6f}", ft.us_number(c["latency_ns"]),
                 Markup(_e(c["result"]) if c["result"] == "ok" else f'<span class="bad">{_e(c["result"])}</span>')]
                for i, c in enumerate(p.slowest, 1)]
        if len(rows) < 2:
            continue
        table = _table(["#", "command", "LBA", "KiB", "submitted (s)", "latency (us)", "result"], rows, {0, 2, 3, 4, 5})
        parts.append(f"<details><summary><b>{_e(p.label)}</b>: slowest {ft.us(p.slowest[0]['latency_ns'])}"
                     f"</summary>{table}</details>")
    if not parts:
        return ""
    return ("<h2>Slowest commands</h2><p class=sub>Each phase's ten slowest commands, submit to status, "
            "whatever their result; submitted: seconds on the rig's clock, which starts with the run.</p>" + "".join(parts))


# What each chart shows, under it (its own caption, on the image, says where it came from).
ABOUT = {
    "iops_over_time": "IOPS over time: each phase's completions per a two-hundredth of its span, phase after "
                      "phase; a stall shows as the time it lasted.",
    "iops_per_100k": "IOPS averaged over each 100,000 commands (fewer in short phases), phase after phase: "
                     "the typical rate between stalls, which this axis of commands shrinks (iops_over_time "
                     "shows them as long as they lasted).",
    "mbps_across_lba": "MB/s of each zone of the sweep phases across the drive's LBA span (HD Tach's curve).",
    "latency_percentiles": "Each phase's command latency at each percentile, from submit to status.",
    "latency_over_time": "Every command's latency at its completion time, to the chart's resolution: a dot is "
                         "one or more commands; the lines are each time slice's p50 and p99.",
    "transfer_sizes": "MB/s of each workload phase that moved one transfer size in one direction, reads and "
                      "writes; where phases share a size, each is a dot and the line goes through their mean.",
    "fill_times": "Simulated seconds of each fill phase, first submit to last status.",
    "fill_mbps": "Each fill's write speed against the GB it had written, a two-hundredth of its bytes a step: "
                 "where a write cache runs out, the step down.",
}


def figure(path: Path) -> str:
    """A chart inline, its file name as its id (the PNG beside the page is the same image)."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    about = next((v for k, v in ABOUT.items() if path.stem.endswith(k)), "")
    return (f'<figure id="{_e(path.stem)}"><img src="data:image/png;base64,{data}" alt="{_e(path.stem)}">'
            f"<figcaption><b>{_e(path.name)}</b>{': ' + _e(about) if about else ''}</figcaption></figure>")


def charts(paths: list[Path], caption: str) -> str:
    if not paths:
        return "<h2>Charts</h2><p>No chart had anything to draw.</p>"
    return f"<h2>Charts</h2><p class=sub>{_e(caption)}</p>" + "".join(figure(p) for p in paths)


def page(title: str, subtitle: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{_e(title)}</h1><p class=sub>{_e(subtitle)}</p>{body}"
            f"<footer>Made by fisrig {_e(__version__)} from records.parquet and run.json; summary.json "
            f"holds the same figures in fio's JSON. Charts are on the rig's clock.</footer></body></html>\n")


def run_page(meta: dict, phases: list, paths: list[Path], status: str, caption: str, extra: str = "") -> str:
    """The run's page; `extra`: sections of its own (power-loss verdicts) before the charts."""
    plan = _d(meta.get("plan"))
    ident = _d(meta.get("identify"))
    body = (f"<h2>Run</h2>{_kv(run_rows(meta, status))}"
            f"<h2>Drive (IDENTIFY)</h2>{_kv(drive_rows(meta))}"
            f"<h2>Plan steps</h2>{steps_table(meta)}"
            f"<h2>Phases</h2>{phases_section(phases, meta) if phases else '<p>No phase issued commands.</p>'}"
            + slowest_section(phases)
            + extra + charts(paths, caption))
    return page(f"{plan.get('name', 'run')}: {ident.get('model', 'drive unknown')}",
                f"{produced_by(meta)}, {_date(meta)}", body)


TARGET_WORDS = {
    "model": "the model target (the rig's firmware VM over a transaction-level model of its engine)",
    "rtl": "the rtl target (the rig's gateware and firmware, simulated cycle by cycle in Verilator)",
}


def produced_by(meta: dict) -> str:
    """Which drive and target produced the figures: a simulated drive and its profile, or a
    board and the drive on it, so no reader takes a simulation for a drive on a bench."""
    ident = _d(meta.get("identify"))
    target = str(meta.get("target", "?"))
    drive = f"{ident.get('model', 'drive unknown')} (fw {ident.get('firmware', '?')})"
    over = " over NVMe (the simulated controller and the NVMe engine)" if meta.get("protocol") == "nvme" else ""
    if target in TARGET_WORDS:
        return f"A simulated drive, {drive}, profile {meta.get('profile', '?')}, on {TARGET_WORDS[target]}{over}"
    if target == "board":
        return f"The drive {drive}, serial {ident.get('serial', '?')}, on a fisrig board at {meta.get('url', '?')}"
    return f"{drive} on target {target}"


def compare_page(runs: list[tuple[str, Path, dict, list, str]], paths: list[Path], caption: str) -> str:
    """Runs side by side: (name, directory, run.json, phases, status) each, and the charts."""
    head = ["run", "directory", "plan", "profile", "target", "drive", "started", "status"]
    rows = [[name, str(d), _d(m.get("plan")).get("name", "?"), m.get("profile", "?"), m.get("target", "?"),
             _d(m.get("identify")).get("model", "?"), _date(m), _status(status)]
            for name, d, m, _, status in runs]
    body = f"<h2>Runs</h2>{_table(head, rows)}"
    for name, _, m, phases, _ in runs:
        body += f"<h2>{_e(name)}: phases</h2>" + (phases_section(phases, m) if phases else "<p>No phases.</p>")
    body += charts(paths, caption)
    return page(f"fisrig: {len(runs)} runs compared", ", ".join(name for name, *_ in runs), body)
