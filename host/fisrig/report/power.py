"""A run's power-loss verdicts as a reviewer reads them: the headline lines, the table for
report.html and the timeline of one cut (the last acknowledgements, the FLUSH completions
and the power edge on one time axis). The verdicts themselves: analysis/power_verdicts.py."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fisrig.analysis.arrays import OP_FLUSH
from fisrig.analysis import power_verdicts as pv

TIMELINE = "power_cut_timeline.png"


def report(run_dir: Path, meta: dict, caption: str, draw: bool = True) -> list[Path]:
    """Classifies the run's power_loss steps (verdicts.parquet, power.json) and (`draw`)
    draws the timeline of each step's example cut: the first that failed, else the last."""
    steps = meta.get("power_loss") or []
    if not steps:
        return []
    rows = pv.read_rows(run_dir, [s["label"] for s in steps])
    verdicts = pv.classify(run_dir, meta, rows)
    out = run_dir / TIMELINE
    return [out] if draw and _timeline(rows.cols, verdicts, out, caption) else []


def headline(run_dir: Path) -> list[str]:
    """The lines `fisrig run` and `fisrig report` print for power.json's steps."""
    p = run_dir / pv.POWER_JSON
    if not p.exists():
        return []
    return step_lines(json.loads(p.read_text())["steps"])


def step_lines(steps: list[dict]) -> list[str]:
    """The lines of power.json's steps (a run's, or a campaign's merged: sweep/campaign.py)."""
    lines = []
    for s in steps:
        first, total = s.get("first_cycle", 1), s.get("cycles_total", s["cycles_planned"])
        part = (f" (cycles {first}-{first + s['cycles_planned'] - 1} of the step's {total})"
                if (first, total) != (1, s["cycles_planned"]) else "")
        lines.append(f"{s['label']:<18} power loss  {s['cycles']} of {s['cycles_planned']} cycles{part}  " + {
            "clean": "clean: nothing acknowledged as durable was lost, nothing damaged",
            "not_run": "not run: the drive was gone before it",
            "failures": f"FAILURES in {s['cycles_with_failures']} cycles"}[s["verdict"]])
        for n, c in s["classes"].items():
            what = f"{'':>17}" if n in pv.CYCLE_CLASSES else f"{c['sectors']:>9} sectors in"
            lines.append(f"    {n:<17} {c['severity']:<8} {what} {c['cycles']:>7} cycles "
                         f"({c['per_1000_cuts']:g} per 1,000 cuts)")
        if s["slots_at_cut"]["cuts_recorded"]:
            lines.append("    " + slots_at_cut(s["slots_at_cut"]))
        if s["cuts_by_plan"]:
            lines.append(f"  ! {s['label']}: {s['cuts_by_plan']} of {s['cycles']} cuts had not fired (their event "
                         "and delay not reached) when the cycle's commands ended: the plan cut the rails then")
    return lines


def slots_at_cut(a: dict) -> str:
    """power.json's slots_at_cut in words (an NVMe engine's counts its commands)."""
    if a.get("protocol") == "nvme":
        return (f"commands at the cut, on average: {a['issued_mean']:g} sent, {a['queued_mean']:g} fetched by the "
                f"controller, {a['data_mean']:g} with data begun; {a['cuts_mid_data']} of {a['cuts_recorded']} cuts "
                "between a command's first data TLP and its CQE (cuts.parquet)")
    return (f"slots at the cut, on average: {a['issued_mean']:g} issued, {a['queued_mean']:g} released by the "
            f"drive, {a['data_mean']:g} with data crossed; {a['cuts_mid_data']} of {a['cuts_recorded']} cuts between "
            "a command's first Data FIS and its status (cuts.parquet)")


def html_section(run_dir: Path) -> str:
    """report.html's power-loss table (empty without power.json)."""
    from fisrig.report.html_parts import _e, _table
    p = run_dir / pv.POWER_JSON
    if not p.exists():
        return ""
    out = "<h2>Power loss</h2><p>Every sector of each step's span, classified after every cut " \
          "(docs/power-loss.md); the LBAs are in verdicts.parquet.</p>"
    for s in json.loads(p.read_text())["steps"]:
        rows = [[n, c["severity"], c["sectors"], c["cycles"], c["per_1000_cuts"]] for n, c in s["classes"].items()]
        out += (f"<h3>{_e(s['label'])}: {s['cycles']} of {s['cycles_planned']} cycles, {_e(s['verdict'])}"
                f" ({s['cuts_at_event']} cut at their event, {s['cuts_by_plan']} by the plan)</h3>"
                + (f"<p>{_e(slots_at_cut(s['slots_at_cut']))}</p>" if s["slots_at_cut"]["cuts_recorded"] else "")
                + _table(["class", "severity", "sectors", "cycles", "per 1,000 cuts"], rows))
    return out


def _timeline(r: dict, verdicts, out: Path, caption: str) -> bool:
    from fisrig.report.plots import finish, plt
    fig, axes = plt.subplots(len(verdicts), 1, figsize=(10, 2.6 + 1.4 * len(verdicts)), squeeze=False)
    drew = False
    for ax, v in zip(axes[:, 0], verdicts):
        _, cycles = pv.step_cycles(r, v.label)
        if not v.example_cycle or v.example_cycle > len(cycles):
            continue
        idx = cycles[v.example_cycle - 1]
        kind, res = r["kind"][idx], r["result"][idx]
        cut, off = pv.cut_rows(r, idx)
        edge = r["t_status_ns"][cut[0]] if len(cut) else r["t_status_ns"][off[0]] if len(off) else None
        if edge is None:
            continue
        t = lambda i: (r["t_status_ns"][i].astype(np.int64) - int(edge)) / 1e3  # noqa: E731 - us from the cut
        writes = idx[(kind == "command") & (r["seq"][idx] > 0)]
        ok = writes[r["result"][writes] == "ok"]
        lost = writes[r["result"][writes] != "ok"]
        flush = idx[(kind == "command") & (r["op"][idx] == OP_FLUSH) & (res == "ok")]
        ax.scatter(t(ok), np.ones(len(ok)), marker="|", s=200, label=f"write acknowledged ({len(ok)})")
        ax.scatter((r["t_submit_ns"][lost].astype(np.int64) - int(edge)) / 1e3, np.full(len(lost), 0.6),
                   marker="x", label=f"write issued, never acknowledged ({len(lost)})")
        if len(flush):
            ax.scatter(t(flush), np.full(len(flush), 1.4), marker="v", s=80, label=f"flush completed ({len(flush)})")
        ax.axvline(0, color="black", linewidth=2, label="rails off")
        ax.set_ylim(0, 2)
        ax.set_yticks([])
        state = v.cuts[v.example_cycle - 1] if v.example_cycle <= len(v.cuts) else None
        if state is None:
            slots = ""
        elif v.counts:  # an NVMe engine's cut counts its commands
            slots = "; at the cut {} sent, {} fetched, {} with data (commands)".format(
                *(state[k] for k in pv.SLOT_MASKS[:3]))
        else:
            slots = "; at the cut " + ", ".join(f"{pv.slots_in(state[k])} {k[6:]}" for k in pv.SLOT_MASKS[:3]) + " (slots)"
        ax.set_title(f"{v.label}: cycle {v.example_cycle} of {v.cycles}{slots}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        drew = True
    if not drew:
        plt.close(fig)
        return False
    fig.suptitle("Power cuts: the last acknowledgements, flush completions and the power edge", fontsize=11)
    last = axes[-1, 0]
    return finish(fig, last, out, "us from the power cut (the rig's clock)", "", last.get_title(), caption)
