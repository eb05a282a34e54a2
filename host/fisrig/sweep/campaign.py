"""A power-loss campaign split into chunks: a sweep's `[campaign]` names a power_loss step of
its plan and how many of its cycles a point runs (docs/sweeps.md, "Power-loss campaigns").

    [campaign]
    step = "honest sweep"     # the power_loss step's label
    chunk_cycles = 500        # cycles a point runs

Each chunk is the plan with `run_cycles = [first, last]` on that step: the cycles' own
delays and seeds, on a drive of its own, as a lab runs a batch of drives at once. Once the
points are done, their verdicts merge into one table (campaign/): verdicts.parquet and
cuts.parquet, every row with its step's cycle number, and power.json, each step's classes
summed over the chunks, as `fisrig run` gives them for one run. Chunks on other axes'
values (a campaign on each of several profiles) merge apart, a group each.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fisrig import plan as plan_mod
from fisrig.analysis import power_verdicts as pv
from fisrig.errors import InputError

CAMPAIGN_KEYS = {"step": str, "chunk_cycles": int}
DIR = "campaign"


def axis(table: Any, base: plan_mod.Plan, at) -> tuple[str, list[list[int]], dict]:
    """The campaign's axis key (step.LABEL.run_cycles), its chunks ([first, last] each) and
    what the manifest says of it; InputError at the sweep file's line otherwise."""
    if not isinstance(table, dict):
        raise InputError(at(("campaign", 0, None)), "[campaign] is a table: step = \"<label>\", chunk_cycles = N")
    for key, value in table.items():
        if key not in CAMPAIGN_KEYS:
            raise InputError(at(("campaign", 0, key)), f"[campaign]: unknown key '{key}' (valid: step, chunk_cycles)")
        if not isinstance(value, CAMPAIGN_KEYS[key]) or isinstance(value, bool):
            raise InputError(at(("campaign", 0, key)), f"[campaign]: '{key}' must be "
                                                       f"{'a step label' if key == 'step' else 'a whole number'}, not {value!r}")
    if "step" not in table:
        raise InputError(at(("campaign", 0, None)), "[campaign] needs step = \"<the power_loss step's label>\"")
    label = table["step"]
    steps = [s for s in base.steps if s.label == label]
    if len(steps) != 1 or steps[0].do != "power_loss":
        labels = [s.label for s in base.steps if s.do == "power_loss" and s.label]
        raise InputError(at(("campaign", 0, "step")), f"the plan has {'no' if not steps else 'no single'} power_loss "
                                                      f"step labelled {label!r} (its power_loss steps: "
                                                      f"{', '.join(map(repr, labels)) or 'none labelled'})")
    step = steps[0]
    others = [s.label or f"step {i + 1}" for i, s in enumerate(base.steps) if s.do == "power_loss" and s is not step]
    if others:
        raise InputError(at(("campaign", 0, "step")), f"the plan has other power_loss steps ({', '.join(map(repr, others))}), "
                                                      "which every chunk would run again: a campaign's plan has its one")
    if "run_cycles" in step.args:
        raise InputError(at(("campaign", 0, "step")), f"step {label!r} sets run_cycles itself: the campaign sets it")
    cycles = step.args.get("cycles", 100)
    chunk = table.get("chunk_cycles", 1000)
    if chunk < 1:
        raise InputError(at(("campaign", 0, "chunk_cycles")), f"chunk_cycles = {chunk}: must be at least 1")
    chunks = [[a, min(a + chunk - 1, cycles)] for a in range(1, cycles + 1, chunk)]
    return (f"step.{label}.run_cycles", chunks,
            {"step": label, "cycles": cycles, "chunk_cycles": chunk, "chunks": len(chunks)})


def merge(out: Path, key: str, points: list[dict]) -> list[dict]:
    """The chunks' verdicts (each point's run directory's power.json, verdicts.parquet and
    cuts.parquet) merged into out/campaign/, a group a value of the other axes; the groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    groups: dict[str, dict] = {}
    for p in points:
        others = {k: v for k, v in p["params"].items() if k != key}
        g = groups.setdefault(json.dumps(others, sort_keys=True, default=str),
                              {"params": others, "points": [], "chunks_done": 0, "chunks": 0, "steps": {}})
        g["chunks"] += 1
        g["points"].append(p["point"])
        run = out / p["run_dir"]
        power = run / pv.POWER_JSON
        if p.get("status") != "done" or not power.exists():
            continue
        g["chunks_done"] += 1
        for s in json.loads(power.read_text())["steps"]:
            g["steps"].setdefault(s["label"], []).append(s)
    target = out / DIR
    target.mkdir(exist_ok=True)
    tables: dict[str, list] = {pv.VERDICTS: [], pv.CUTS: []}
    for gi, g in enumerate(groups.values()):
        g["steps"] = [merge_steps(chunks) for chunks in g["steps"].values()]
        g["verdict"] = ("failures" if any(s["verdict"] == "failures" for s in g["steps"])
                        else "incomplete" if g["chunks_done"] < g["chunks"] else "clean")
        for name in tables:
            for point in g["points"]:
                path = out / "runs" / point / name
                if path.exists():
                    t = pq.read_table(path)
                    t = t.append_column("point", pa.array([point] * t.num_rows, pa.string()))
                    tables[name].append(t.append_column("group", pa.array([gi + 1] * t.num_rows, pa.uint32())))
    for name, parts in tables.items():
        if parts:  # a dictionary column's chunks each keep their own dictionary: read back as one
            pq.write_table(pa.concat_tables([t.cast(parts[0].schema) for t in parts]), target / name,
                           compression="zstd")
        else:
            (target / name).unlink(missing_ok=True)
    merged = list(groups.values())
    (target / pv.POWER_JSON).write_text(json.dumps({"key": key, "groups": merged}, indent=1, default=str) + "\n")
    return merged


def merge_steps(chunks: list[dict]) -> dict:
    """One step's summary (power_verdicts.StepVerdict.summary) from its chunks': counts
    summed, rates again over the cycles run, the first failing cycles of all."""
    chunks = sorted(chunks, key=lambda s: s.get("first_cycle", 1))
    cycles = sum(s["cycles"] for s in chunks)
    classes: dict[str, dict] = {}
    for s in chunks:
        for n, c in s["classes"].items():
            m = classes.setdefault(n, {"sectors": 0, "cycles": 0, "severity": c["severity"]})
            m["sectors"] += c["sectors"]
            m["cycles"] += c["cycles"]
    for c in classes.values():
        c["per_1000_cuts"] = round(1000 * c["cycles"] / max(1, cycles), 1)
    slots = [s["slots_at_cut"] for s in chunks if s["slots_at_cut"].get("cuts_recorded")]
    recorded = sum(s["cuts_recorded"] for s in slots)
    at_cut: dict[str, Any] = {"cuts_recorded": recorded}
    if recorded:
        at_cut.update({k: v for k, v in slots[0].items() if k == "protocol"})
        for k in ("issued_mean", "queued_mean", "data_mean"):
            at_cut[k] = round(sum(s[k] * s["cuts_recorded"] for s in slots) / recorded, 2)
        at_cut["cuts_mid_data"] = sum(s["cuts_mid_data"] for s in slots)
    failing = sorted(c for s in chunks for c in s["first_failing_cycles"])
    with_failures = sum(s["cycles_with_failures"] for s in chunks)
    return {
        # Planned: the whole step, so that a chunk that did not end shows as cycles not run.
        "label": chunks[0]["label"], "cycles_planned": chunks[0].get("cycles_total") or cycles, "cycles": cycles,
        "first_cycle": 1, "cycles_total": chunks[0].get("cycles_total"),
        "chunks": len(chunks),
        "verdict": "failures" if with_failures else "clean" if cycles else "not_run",
        "cuts_at_event": sum(s["cuts_at_event"] for s in chunks), "cuts_by_plan": sum(s["cuts_by_plan"] for s in chunks),
        "classes": dict(sorted(classes.items(), key=lambda kv: pv.CODE[kv[0]])),
        "cycles_with_failures": with_failures, "first_failing_cycles": failing[:20], "slots_at_cut": at_cut,
    }
