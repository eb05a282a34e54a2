"""SNIA SSS PTS's IOPS test: what a run says of the matrix a `pts_iops` step runs each round
(plan/pts_matrix.py defines it): each round's figure for the tracked cell, the steady-state
window and whether it held, and the PTS tables (each cell's IOPS averaged over the
window's rounds).

The rig decides when to stop (the VM's until-steady loop, struct fisrig_op_loop in
program.h); each round ends with a LOOP_PASS record carrying the tracked workload's
commands and its first and last ticks, and the steady verdict the VM reached. The rounds
of the other cells are told apart by those records: records come in completion order and
every cell drains before the next starts, so a command belongs to the round whose
LOOP_PASS record follows it.

The steady-state rule is the PTS's (SNIA SSS PTS 2.0.2, section 3): over a window of
rounds of the tracked variable (4 KiB random write IOPS), the range (max - min) within
20% of the window's average, and the excursion of the least-squares line across the
window (|slope| x (rounds - 1)) within 10% of it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from fisrig.plan.pts_matrix import DEFAULTS, SPEC_SECONDS_PER_CELL, cell_label, cells
from fisrig.records.store import code_of, codes

JSON = "pts.json"
PLOT = "pts_steady_state.png"
# LOOP_PASS records carry the VM's verdict in `status` (1: the window held steady).
COLUMNS = ["kind", "marker", "status", "t_submit_ns", "t_status_ns", "lba", "lbas"]


def caveats(args: dict) -> list[str]:
    """Why a run's verdict is not the one the PTS would give, as the report says it.

    Measured on consumer-256gb (docs/plans.md, "The SNIA PTS's verdict"): its 4 KiB random
    writes alone in this step, a minute a round (each round new LBAs), settle by the PTS rule
    at round 18 at 10,500 IOPS; with the default 2-second cells the matrix settles at round
    16 at 11,400. Each round's LBAs are new (FISRIG_WORKLOAD_SEED_PER_PASS), so short cells
    are the one reason left."""
    out = []
    secs = args.get("seconds_per_cell", DEFAULTS["seconds_per_cell"])
    if secs < SPEC_SECONDS_PER_CELL:
        out.append(f"cells of {secs:g} s, not the PTS's {SPEC_SECONDS_PER_CELL} s: a round writes "
                   f"1/{SPEC_SECONDS_PER_CELL / secs:g} of what the specification's does, and the tracked cell can "
                   f"hold steady, or not, long before the drive does (seconds_per_cell = {SPEC_SECONDS_PER_CELL} "
                   f"runs the specification's cells)")
    return out


def steady(y: np.ndarray, range_pct: float, slope_pct: float) -> dict:
    """The window's figures as the PTS states them, and whether they hold."""
    x = np.arange(len(y), dtype=float)
    mean = float(y.mean())
    slope, intercept = np.polyfit(x, y, 1) if len(y) > 1 else (0.0, mean)
    rng = float(y.max() - y.min())
    excursion = abs(float(slope)) * (len(y) - 1)
    return {"average": mean, "range": rng, "range_pct_of_average": 100 * rng / mean if mean else None,
            "slope_per_round": float(slope), "intercept": float(intercept), "excursion": excursion,
            "excursion_pct_of_average": 100 * excursion / mean if mean else None,
            "holds": bool(mean > 0 and rng * 100 <= range_pct * mean and excursion * 100 <= slope_pct * mean)}


@dataclass
class PtsResult:
    step: dict
    base: str
    rounds: list[dict] = field(default_factory=list)  # each pass: round, tracked IOPS, steady
    steady_round: int | None = None   # the round whose window held (the VM's verdict)
    window: list[int] = field(default_factory=list)  # the rounds of the measurement window
    window_figures: dict = field(default_factory=dict)
    table: dict[str, dict[str, float]] = field(default_factory=dict)  # "<kib> KiB" -> {"r/w": IOPS}
    not_pts: list[str] = field(default_factory=list)  # caveats(): why the verdict is not the PTS's

    def to_json(self) -> dict:
        return {"label": self.base, "step": self.step, "rounds_run": len(self.rounds),
                "steady_state_reached": self.steady_round is not None, "steady_round": self.steady_round,
                "window_rounds": self.window, "window": self.window_figures, "rounds": self.rounds,
                "iops_table": self.table, "not_pts": self.not_pts}


def analyse(table: pa.Table, meta: dict) -> list[PtsResult]:
    """One result per pts_iops step of the run's plan, from its records (COLUMNS of them)."""
    steps = [s for s in meta.get("plan", {}).get("steps", []) if s.get("do") == "pts_iops"]
    if not steps:
        return []
    import pyarrow.compute as pc

    from fisrig.plan import phase_label
    from fisrig.analysis.arrays import command_runs, take_rows
    kind, kind_names = codes(table, "kind")
    marker, marker_names = codes(table, "marker")
    passes = np.flatnonzero(kind == code_of(kind_names, "loop_pass"))
    # A LOOP_PASS record's figures: the tracked cell's commands (lba) over its span, the
    # verdict (status 1: the window held), the round (lbas).
    status, t0, t1, lba, lbas = (take_rows(table.column(c), passes).to_numpy()
                                 for c in ("status", "t_submit_ns", "t_status_ns", "lba", "lbas"))
    # Each cell's commands in each pass: its runs of rows (one, but for a cell cut by another
    # record), each run counted and spanned where it lies, never gathered.
    starts, ends = command_runs(marker, kind == code_of(kind_names, "command"))
    pass_of = np.searchsorted(passes, starts)  # the pass whose LOOP_PASS record follows the run
    cell_runs: dict[tuple[int, int], list[int]] = {}  # (pass, marker code): [commands, first submit, last status]
    sub, sta = table.column("t_submit_ns"), table.column("t_status_ns")
    for a, b, k, m in zip(starts.tolist(), ends.tolist(), pass_of.tolist(), marker[starts].tolist()):
        if k >= len(passes):
            continue
        lo, hi = pc.min(sub.slice(a, b - a)).as_py(), pc.max(sta.slice(a, b - a)).as_py()
        c = cell_runs.setdefault((k, m), [0, lo, hi])
        c[0], c[1], c[2] = c[0] + b - a, min(c[1], lo), max(c[2], hi)
    out, current = [], None
    for s in meta["plan"]["steps"]:
        current = phase_label(s.get("label"), current, s["do"])
        if s["do"] != "pts_iops":
            continue
        args = {**DEFAULTS, **{k: v for k, v in s.items() if k not in ("do", "label")}}
        labels = {cell_label(current, k, r): (k, r) for k, r in cells(args)}
        codes_of = {code_of(marker_names, lab): lab for lab in labels}
        # This step's passes: the LOOP_PASS records carrying one of its cells' markers.
        mine = np.flatnonzero(np.isin(marker[passes], list(codes_of))) if len(passes) else passes
        res = PtsResult(step=s, base=current, not_pts=caveats(args))
        for k in mine.tolist():
            span = (int(t1[k]) - int(t0[k])) / 1e9
            iops = float(lba[k]) / span if span > 0 else 0.0
            held = bool(status[k] == 1)
            res.rounds.append({"round": int(lbas[k]), "tracked_iops": iops, "steady": held})
            if held:
                res.steady_round = int(lbas[k])
            for c, lab in codes_of.items():
                if (n_t := cell_runs.get((k, c))) is not None:
                    dt = (n_t[2] - n_t[1]) / 1e9
                    res.rounds[-1].setdefault("cells", {})[lab] = n_t[0] / dt if dt > 0 else 0.0
        if res.rounds:
            n = min(args["window"], len(res.rounds))
            win = res.rounds[:res.steady_round][-n:] if res.steady_round else res.rounds[-n:]
            res.window = [r["round"] for r in win]
            res.window_figures = steady(np.array([r["tracked_iops"] for r in win]), args["range_pct"],
                                        args["slope_pct"])
            for lab, (k, rd) in labels.items():
                vals = [r.get("cells", {}).get(lab) for r in win]
                vals = [v for v in vals if v is not None]
                res.table.setdefault(f"{k:g} KiB", {})[f"{rd}/{100 - rd}"] = float(np.mean(vals)) if vals else 0.0
        out.append(res)
    return out


def lines(run_dir: Path) -> list[str]:
    """The console's account of a run's PTS steps (pts.json): the verdict, the window's
    figures against the rule, and the PTS table."""
    path = Path(run_dir) / JSON
    if not path.exists():
        return []
    out = []
    for r in json.loads(path.read_text()):
        w, win = r["window"], r["window_rounds"]
        verdict = (f"steady state at round {r['steady_round']} (window rounds {win[0]}-{win[-1]})"
                   if r["steady_state_reached"] else f"no steady state in {r['rounds_run']} rounds")
        rule = {**DEFAULTS, **r["step"]}
        out.append(f"PTS {r['label']}: {verdict}; tracked cell {w.get('average', 0):.0f} IOPS on average, range "
                   f"{w.get('range_pct_of_average') or 0:.1f}% (at most {rule['range_pct']}%), least-squares "
                   f"excursion {w.get('excursion_pct_of_average') or 0:.1f}% (at most {rule['slope_pct']}%)")
        out += [f"  ! PTS {r['label']}: not the PTS's verdict: {c}" for c in r.get("not_pts", [])]
        mixes = list(next(iter(r["iops_table"].values()), {}))
        out.append(f"  {'IOPS (R/W)':>12} " + " ".join(f"{m:>9}" for m in mixes))
        for size, row in r["iops_table"].items():
            out.append(f"  {size:>12} " + " ".join(f"{row[m]:>9.0f}" for m in mixes))
    return out


def write(run_dir: Path, results: list[PtsResult]) -> Path | None:
    """pts.json beside summary.json (removed when the run has no PTS step)."""
    path = Path(run_dir) / JSON
    if not results:
        path.unlink(missing_ok=True)
        return None
    path.write_text(json.dumps([r.to_json() for r in results], indent=1) + "\n")
    return path
