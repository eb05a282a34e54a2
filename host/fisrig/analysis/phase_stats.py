"""The figures of each phase of a run, computed once: the console headline, summary.json's
per-job "fisrig" block and the plots all read these, so no two of them can disagree.

A phase is the command records that carry one marker (a step's label; a step without one
joins the phase before it, as plan.phase_label says). Its kind comes from the plan's
step kinds in run.json, never from the shape of its LBAs: a random-write workload is a
workload even when a run of its LBAs happens to be sequential.

Only command records enter a phase (power, link and "end" records are not commands), and
only commands that completed without error enter its latency figures.

The queue depth a phase held is the time-weighted mean of the commands in flight (from
each command's submit to its status) over the phase's span, which is exactly the sum of
the latencies over the span, and its maximum. A phase that held less than 90% of what its
plan asked for is warned about: its figures are not figures at the depth it asked.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from fisrig.analysis import figure_text as ft
from fisrig.analysis import smart
from fisrig import program_format as pf
from fisrig.plan import pts_matrix
from fisrig.plan import asked_queue_depth, phase_label
from fisrig.analysis.arrays import OP_READ, OP_TRIM, OP_WRITE, PhaseRows, depth_after_submits, is_sorted, masked, split, sum_diff
from fisrig.analysis.arrays import percentiles

QD_WARN_FRACTION = 0.9
# The step kinds that issue a stream of commands; the others issue a command or a few.
STREAM_KINDS = ("sweep", "fill", "workload", "replay", "trim", "pts_iops")
HEADLINE_PERCENTILES = (50, 99, 99.9)
# A phase's latency as a user publishes it, in the order the headline, report.html and
# compare give it: published_latency.
PUBLISHED_LATENCY = ("mean",) + tuple(f"p{k:g}" for k in HEADLINE_PERCENTILES) + ("max",)


def published_latency(j: dict) -> dict[str, float] | None:
    """A phase's latency from submit to status (of `j`, the dict summary.json holds for it:
    PhaseStats.to_json) by PUBLISHED_LATENCY's names, in ns; None when no command completed OK."""
    lat = j["latency_ns"]
    if not lat["N"]:
        return None
    pct = lat["percentile"]
    return {"mean": lat["mean"], **{f"p{k:g}": pct[f"{k:.6f}"] for k in HEADLINE_PERCENTILES}, "max": lat["max"]}
COLUMNS = ["marker", "kind", "result", "lba", "lbas", "sectors", "t_submit_ns", "t_status_ns", "latency_ns", "command", "detail",
           "protocol", "queue"]


def queue_depth_held(t0: np.ndarray, t1: np.ndarray, depth: np.ndarray | None = None) -> tuple[float, int]:
    """(time-weighted mean, maximum) of the commands in flight, each over [submit, status).

    The mean is the integral of the depth over the span, and that integral is the sum of
    the commands' times in flight. The maximum is reached just after a submit: the depth
    then is the submits so far minus the statuses at or before that time (`depth`, when
    arrays.PhaseRows has it already: arrays.depth_after_submits)."""
    if not len(t0):
        return 0.0, 0
    span = int(t1.max()) - int(t0.min())
    busy = float(sum_diff(t1, t0))
    mean = busy / span if span > 0 else 0.0
    if depth is None:
        depth = depth_after_submits(*(t if is_sorted(t) else np.sort(t, kind="stable") for t in (t0, t1)))
    return mean, int(depth.max())


@dataclass
class PlanPhase:
    """What the plan asked of one phase."""
    steps: list[str] = field(default_factory=list)  # the kinds of its steps, in order
    asked_qd: list[int] = field(default_factory=list)  # per stream step
    zones: int = 0  # the zones its sweep steps asked for

    @property
    def kind(self) -> str:
        stream = list(dict.fromkeys(k for k in self.steps if k in STREAM_KINDS))
        if len(stream) == 1:
            return stream[0]
        if stream:
            return "mixed"
        return self.steps[0] if self.steps else "unknown"


def plan_phases(meta: dict) -> dict[str, PlanPhase]:
    """Each phase label of the run's plan (run.json) with the kinds of its steps."""
    out: dict[str, PlanPhase] = {}
    current = None
    for s in meta.get("plan", {}).get("steps", []):
        current = phase_label(s.get("label"), current, s["do"])
        p = out.setdefault(current, PlanPhase())
        p.steps.append(s["do"])
        args = {k: v for k, v in s.items() if k not in ("do", "label")}
        qd = asked_queue_depth(s["do"], args)
        if qd is not None:
            p.asked_qd.append(qd)
        if s["do"] == "sweep":
            p.zones += args.get("zones", 256)
        if s["do"] == "pts_iops":  # each cell of its matrix is a phase of its own
            for kib, read in pts_matrix.cells(args):
                cell = out.setdefault(pts_matrix.cell_label(current, kib, read), PlanPhase())
                cell.steps.append("pts_iops")
                cell.asked_qd.append(qd)
    return out


@dataclass
class PhaseStats:
    label: str
    kind: str  # the plan's step kind ("sweep", "workload", ...), "mixed", or "unknown"
    steps: list[str]
    commands: int  # records: a command the error policy sent again has one per attempt
    errors: int    # records that did not end OK ...
    seconds: float
    data_bytes: int  # sectors read and written
    trimmed_lbas: int
    qd_asked: int | None
    qd_mean: float
    qd_max: int
    issue_rate: float  # commands submitted per second, first submit to last
    latency_ns: np.ndarray  # of the commands that completed without error
    t_status_ns: np.ndarray
    zones: list[tuple[int, float]]  # (first LBA, MB/s) of each zone, sweeps only
    zone_bytes: int = 0
    zone_seconds: float = 0.0
    zones_asked: int = 0
    warnings: list[str] = field(default_factory=list)
    sent_again: int = 0  # ... of which the plan's error policy sent the command again
    # Its SLOWEST commands, slowest first: each's opcode, LBA, LBAs, submit stamp (ns on the
    # rig's clock), latency and result, for the stall a reviewer looks for first.
    slowest: list[dict] = field(default_factory=list)
    # A phase the run's stop cut short: its commands (or seconds) done and asked (mark_partial).
    partial: dict | None = None
    # The drive's own write amplification over the phase, from SMART readings around it
    # (analysis/smart.py): host_bytes, nand_bytes and their ratio, `value`.
    write_amplification: dict | None = None
    # The phase's records (arrays.PhaseRows), for summary.json and the plots to read without
    # taking them out of the run's records again.
    rows: PhaseRows | None = field(default=None, repr=False, compare=False)
    _percentiles: dict | None = field(default=None, repr=False, compare=False)
    # summary.json's job of the phase but for its place in the run (fio_json.job_body), when
    # made before summary.json is (report.during_run: while the run ran).
    fio_job: dict | None = field(default=None, repr=False, compare=False)
    # The latencies plots.plot_latency draws (plots.latency_curve), made once.
    latency_curve_ns: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def is_sweep(self) -> bool:
        return self.kind == "sweep"

    @property
    def failed(self) -> int:
        """Commands whose last attempt did not end OK."""
        return self.errors - self.sent_again

    @property
    def iops(self) -> float:
        """Commands per second, each once: an attempt the error policy sent again is not one."""
        return (self.commands - self.sent_again) / self.seconds if self.seconds else 0.0

    @property
    def mbps(self) -> float:
        """Data read and written per second (TRIM moves no data)."""
        return self.data_bytes / self.seconds / 1e6 if self.seconds else 0.0

    @property
    def trimmed_lbas_per_s(self) -> float:
        return self.trimmed_lbas / self.seconds if self.seconds else 0.0

    @property
    def sweep_mbps(self) -> float:
        """A sweep's average: all zones' bytes over all zones' time."""
        return self.zone_bytes / self.zone_seconds / 1e6 if self.zone_seconds else 0.0

    def latency_percentiles(self) -> dict[str, int]:
        # Once: the headline, summary.json and report.html each ask; from the phase's one sort of
        # its latencies (PhaseRows.sorted_latency) when its records are there.
        if self._percentiles is None:
            self._percentiles = (percentiles(self.rows.sorted_latency(self.rows.ok), HEADLINE_PERCENTILES, ordered=True)
                                 if self.rows is not None else percentiles(self.latency_ns, HEADLINE_PERCENTILES))
        return self._percentiles

    @property
    def latency_mean_ns(self) -> float:
        """The mean latency of the commands that completed OK (fio's clat mean)."""
        return float(self.latency_ns.mean()) if len(self.latency_ns) else 0.0

    @property
    def latency_max_ns(self) -> int:
        """The slowest command that completed OK: the stall a reviewer looks for first."""
        return int(self.latency_ns.max()) if len(self.latency_ns) else 0

    def to_json(self) -> dict:
        """summary.json's "fisrig" block of the phase's job; the headline prints these."""
        out = {
            "kind": self.kind, "steps": self.steps, "commands": self.commands, "errors": self.errors,
            "sent_again": self.sent_again, "failed": self.failed,
            "seconds": self.seconds, "iops": self.iops, "data_bytes": self.data_bytes,
            "data_mb_per_s": self.mbps, "trimmed_lbas": self.trimmed_lbas,
            "trimmed_lbas_per_s": self.trimmed_lbas_per_s,
            "queue_depth": {"asked": self.qd_asked, "held_mean": self.qd_mean, "held_max": self.qd_max},
            "issue_rate": self.issue_rate,
            "latency_ns": {"N": int(len(self.latency_ns)), "mean": self.latency_mean_ns, "max": self.latency_max_ns,
                           "percentile": self.latency_percentiles()},
            "warnings": self.warnings, "slowest": self.slowest,
        }
        if self.partial:
            out["partial"] = self.partial
        if self.write_amplification:
            out["write_amplification"] = self.write_amplification
        if self.is_sweep:
            out["sweep"] = {"zones": len(self.zones), "zones_asked": self.zones_asked,
                            "mb_per_s": self.sweep_mbps}
        return out


SLOWEST = 10


def slowest(r: PhaseRows, k: int = SLOWEST) -> list[dict]:
    """The phase's k slowest commands (submit to status, whatever their result), slowest
    first; ties in record order."""
    lat = r["latency_ns"]
    k = min(k, len(lat))
    if not k:
        return []
    top = np.argpartition(lat, len(lat) - k)[len(lat) - k:]
    top = top[np.lexsort((top, -lat[top]))]
    result = r._column("result").take(pa.array(top)).to_pylist()
    return [{"command": int(r["command"][i]), "lba": int(r["lba"][i]), "lbas": int(r["lbas"][i]),
             "t_submit_ns": int(r["t_submit_ns"][i]), "latency_ns": int(lat[i]), "result": res}
            for i, res in zip(top.tolist(), result)]


def _zones(lba: np.ndarray, sectors: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> tuple[list, int, float]:
    """A sweep's zones: its runs of back-to-back sequential commands (two or more)."""
    if len(lba) < 2:
        return [], 0, 0.0
    breaks = np.flatnonzero(lba[1:] != lba[:-1] + sectors[:-1]) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(lba)]])
    keep = ends - starts >= 2
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return [], 0, 0.0
    total = np.concatenate([[0], np.cumsum(sectors, dtype=np.int64)])
    nbytes = (total[ends] - total[starts]) * 512
    secs = (t1[ends - 1] - t0[starts]) / 1e9
    mbps = np.where(secs > 0, nbytes / np.maximum(secs, 1e-12) / 1e6, 0.0)
    return list(zip(lba[starts].tolist(), mbps.tolist())), int(nbytes.sum()), float(secs.sum())


def _warnings(p: PhaseStats, asked: list[int], plan_known: bool) -> list[str]:
    w = []
    if not plan_known:
        w.append("run.json has no plan: the phase's kind and asked queue depth are unknown")
    if len(set(asked)) > 1:
        w.append(f"its steps ask for different queue depths ({', '.join(map(str, sorted(set(asked))))}): "
                 "the depth held is not compared with them")
    elif p.qd_asked and p.qd_mean < QD_WARN_FRACTION * p.qd_asked:
        w.append(f"held {p.qd_mean:.2f} commands in flight on average (at most {p.qd_max}) of the "
                 f"{p.qd_asked} asked ({100 * p.qd_mean / p.qd_asked:.0f}%): its figures are not "
                 f"QD{p.qd_asked} figures")
    if p.is_sweep and len(p.zones) != p.zones_asked:
        w.append(f"the plan asked for {p.zones_asked} zones; the records hold {len(p.zones)} sequential runs")
    return w


def qd_asked(pp: PlanPhase) -> int | None:
    """The queue depth the phase's plan asked for; None when its steps ask for different
    ones, or none."""
    asked = set(pp.asked_qd)
    return next(iter(asked)) if len(asked) == 1 else None


def compute_phase(r: PhaseRows, pp: PlanPhase, plan_known: bool) -> PhaseStats:
    """One phase's figures from its records (`r`) and what its plan asked of it (`pp`)."""
    ok, op = r.ok, r.op
    data = ok & ((op == OP_READ) | (op == OP_WRITE))
    t0, t1 = r["t_submit_ns"], r["t_status_ns"]
    n = r.n
    # Time, depth and issue rate over the phase's visits (one, unless it is in a loop).
    spans, depth_time, qd_max, submit_time = [], 0.0, 0, 0
    runs = r.visits()
    for v in runs:
        a, b = t0[v], t1[v]
        spans.append(int(b.max()) - int(a.min()))
        mean, top = queue_depth_held(a, b, r.depth() if len(runs) == 1 else None)
        depth_time += mean * spans[-1]
        qd_max = max(qd_max, top)
        submit_time += int(a.max()) - int(a.min())
    seconds = sum(spans) / 1e9
    qd_mean = mean if len(spans) == 1 else depth_time / sum(spans) if sum(spans) > 0 else 0.0
    issue_rate = (n - len(spans)) / (submit_time / 1e9) if n > len(spans) and submit_time > 0 else 0.0
    p = PhaseStats(
        label=r.label, kind=pp.kind, steps=pp.steps, commands=n, errors=n - int(ok.sum()),
        seconds=seconds,
        data_bytes=int(masked(r["sectors"], data).sum(dtype=np.int64)) * 512,
        trimmed_lbas=int(masked(r["lbas"], ok & (op == OP_TRIM)).sum(dtype=np.int64)),
        qd_asked=qd_asked(pp), qd_mean=qd_mean, qd_max=qd_max,
        issue_rate=float(issue_rate), latency_ns=masked(r["latency_ns"], ok),
        t_status_ns=t1, zones=[], zones_asked=pp.zones, rows=r,
        sent_again=int(np.count_nonzero(r["detail"] & pf.DETAIL_SENT_AGAIN)), slowest=slowest(r))
    if p.is_sweep:
        p.zones, p.zone_bytes, p.zone_seconds = _zones(
            *(masked(c, data) for c in (r["lba"], r["sectors"], t0, t1)))
    p.warnings = _warnings(p, pp.asked_qd, plan_known)
    return p


def mark_partial(phases: list[PhaseStats], meta: dict, rows: int | None = None) -> None:
    """The phase a run's stop cut short, marked: on a run that did not end done (or whose
    records are fewer than it took: `rows` of run.json's outcome.records), the phase of its
    last status, when it did fewer commands (or ran less time) than it asked (run.json's
    phase_goals). Its figures stay those of the time it ran; the mark says that is what they
    are, first among its warnings."""
    status = meta.get("status")
    goals = meta.get("phase_goals")
    outcome = meta.get("outcome") if isinstance(meta.get("outcome"), dict) else {}
    took = outcome.get("records", 0) - outcome.get("current_records", 0) if isinstance(outcome.get("records"), int) \
        and isinstance(outcome.get("current_records", 0), int) else None
    missing = rows is not None and took is not None and rows < took
    if (status == "done" and not missing) or not phases or not isinstance(goals, dict) or \
            any(p.partial for p in phases):
        return
    last = max(phases, key=lambda p: int(p.t_status_ns.max()) if len(p.t_status_ns) else -1)
    goal = goals.get(last.label)
    if not isinstance(goal, dict):
        return
    how = ("was killed" if status == "running" else f"ended {status}" if status != "done" else
           f"kept {rows:,} of its {took:,} records")
    done = last.commands - last.sent_again
    asked, asked_s = goal.get("commands"), goal.get("seconds")
    if isinstance(asked, int) and not asked_s and done < asked:
        last.partial = {"commands": done, "commands_asked": asked, "seconds": last.seconds}
        text = f"{done:,} of {asked:,} commands"
    elif isinstance(asked_s, (int, float)) and asked is None and last.seconds < asked_s:
        last.partial = {"commands": done, "seconds": last.seconds, "seconds_asked": asked_s}
        text = f"{last.seconds:,.1f} of the {asked_s:,.1f} s asked"
    else:
        return
    clock = ft.clock_word(meta)
    last.warnings.insert(0, f"partial: {text}; the run {how} during it, and its figures are those of the "
                            f"{last.seconds:,.3f} s ({clock}time) it ran")


def compute(table: pa.Table, meta: dict, ready: dict | None = None) -> list[PhaseStats]:
    """Every phase that issued commands, in the order it first appears in the records.
    `ready`: phases computed already (report.during_run: while the run ran), by (label, first row,
    row after the last) of `table`; a phase is taken from there only when it is that one
    run of rows here, else it is computed again."""
    plan = plan_phases(meta)
    out = []
    for r in split(table):  # each phase's records (arrays.PhaseRows: taken out once, for every reader)
        done = (ready or {}).get((r.label, r.sel.start, r.sel.stop)) if isinstance(r.sel, slice) else None
        out.append(done if done is not None else compute_phase(r, plan.get(r.label, PlanPhase()), bool(plan)))
    mark_partial(out, meta, table.num_rows)
    wa = smart.write_amplification(table)
    for p in out:
        p.write_amplification = wa.get(p.label)
    return out
