"""Two runs of one plan, phase by phase and record by record: do they publish the same
figures, did they send the same commands and get the same answers, and how far apart are
their times? The model target is held to the gateware this way
(tests/rtl/test_targets_agree.py, tests/rtl/test_line_rate.py, scripts/bench_targets.py),
and any two runs of a plan (two drives, two firmware versions) compare the same way.

What a user publishes, per plan phase, held to the tolerance (Figure, Comparison.published):
its IOPS, MB/s (a sweep's: its zones' average, as the headline prints it) and its latency
from submit to status (records.parquet's latency_ns, t_status_ns - t_submit_ns, of the
commands that completed OK): mean, p50, p99, p99.9 and max. They are phase_stats' figures,
computed from records.parquet's report columns as `fisrig report` computes them, and read
from the same dict summary.json's "fisrig" block and the headline print
(PhaseStats.to_json): compare re-derives none of them.

What must be equal, record by record in completion order: the command (opcode, LBA, the
LBAs it covered), its result, status, error, D2H LBA, sectors and data dwords moved, and
which phases it had (a stamp that is 0 on one side and not on the other).

The stamps, per plan phase, as the median and the p99 over the phase's commands
(fio_json.percentiles, the values a command had), shown as information (Row,
Comparison.rows): where a difference in the published latency comes from.
  - each stamp relative to the command's ts_h2d (accept, setup, data_first, data_last,
    status: "latency" in Row.what, ts_status - ts_h2d): what the wire and the drive did
    after the command reached the wire;
  - "submit->h2d": from the engine taking the descriptor from the ring to its H2D on the
    wire: the engine's fetch and the bus the rig's CPU shares with it on the rtl target,
    and at queue depth 32 the time a command waits for its turn on the link. The published
    latency (submit to status) holds it; the stamps from the H2D do not.
tests/rtl holds the latency from the H2D to its goal too (Comparison.failing,
worst_latency_pct); `fisrig compare`'s exit status is the published figures' and the
records'.

A difference is within tolerance when it is within `pct` percent of the reference run
(`b`) or, for a time, within an ALIGN pair and a tick (3 ticks, 20 ns at Gen3: apart); a
rate (IOPS, MB/s) is its commands or bytes over the phase's span (a sweep's MB/s: over its
zones' times), and counts as within when those spans are (a one-command phase's IOPS are
its latency's inverse, and targets-agree's failing command, 173 ns against 167, is 3.5% on
a tick). A tick is a stamp's resolution (the model schedules in ns, so its ticks round
where the gateware's count), and LiteSATA's link sends an ALIGN pair every 256 dwords,
which a short command's window holds or not depending on where in that period the rig's
CPU happened to issue it; the model books ALIGNs by their average (WireStamps). A change to
the firmware's code alone (its CPU timing) moved every FLUSH of targets-agree on the
gateware from 107 to 120 ns, the model's 100 ns; the rig core runner's FLUSH, with no ALIGN
inside, takes 107.

Completion order is the drive's and the link's: at queue depth 1 it is the issue order on
both targets; deeper, two commands that end within a few ticks of each other may end in the
other order on the other target. `in_order=False` matches records as a multiset per phase
(sorted by what they were and how they ended) for such plans.

Two runs of different plans are refused, naming the first difference (plan_difference;
`any_plan` compares them anyway), and so is a run given twice: a run agrees with itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fisrig import program_format as pf
from fisrig.analysis import phase_stats
from fisrig.records import store, run_state
from fisrig.errors import InputError
from fisrig.analysis.arrays import percentiles
from fisrig.records.store import PARQUET, codes, code_of

# Equal record by record.
IDENTITY = ("marker", "command", "lba", "lbas")
OUTCOME = ("result", "status", "error", "d2h_lba", "sectors", "data_dwords")
STAMPS = ("t_accept_ns", "t_setup_ns", "t_data_first_ns", "t_data_last_ns", "t_status_ns")
STATS = (50, 99)
TICK_NS = pf.NS_PER_TICK
ALIGN_PAIR_NS = 2 * TICK_NS  # two dwords at Gen3
# The figures a user publishes of a phase, in the order compare prints them: its rates,
# then its latency (submit to status) in ns.
RATES = ("IOPS", "MB/s")
LATENCY = phase_stats.PUBLISHED_LATENCY
PUBLISHED = RATES + LATENCY
# What of run.json's "plan" does not make two runs' plans different: its words and file (its
# name and steps are compared first, apart); every other key is a setting that does.
NOT_SETTINGS = ("name", "description", "source", "steps")


def apart(a_ns: float, b_ns: float, align_pairs: int = 1) -> bool:
    """Further apart than a tick and `align_pairs` ALIGN pairs: one for runs that start from
    boot (the module's docstring); two, one each way, for a resident board's second plan,
    which starts at no set point of either end's ALIGN period (tests/rtl/test_board_target.py)."""
    return abs(a_ns - b_ns) > TICK_NS + align_pairs * ALIGN_PAIR_NS + 0.5


def _py(v):
    """A numpy scalar as the Python value it holds (so a message says 1528496, not
    np.uint64(1528496))."""
    return v.item() if isinstance(v, np.generic) else v


def _pct(a: float, b: float) -> float:
    return 0.0 if a == b else abs(a - b) * 100.0 / max(abs(b), 1)


@dataclass
class Figure:
    """One published figure of one phase on both runs (the module's docstring): a rate, or
    a latency from submit to status in ns; None where the phase has no latency (no command
    of it completed OK)."""
    phase: str
    what: str  # one of PUBLISHED
    a: float | None
    b: float | None
    # What decides "within a tick": for a latency its two values, for a rate the spans (ns)
    # it is over.
    a_ns: float | None = None
    b_ns: float | None = None

    @property
    def is_time(self) -> bool:
        return self.what in LATENCY

    @property
    def diff_pct(self) -> float:
        """Percent of b's; inf where only one run has it."""
        if self.a is None or self.b is None:
            return 0.0 if self.a is None and self.b is None else math.inf
        if self.a == self.b:
            return 0.0
        return abs(self.a - self.b) * 100.0 / abs(self.b) if self.b else math.inf

    @property
    def beyond_a_tick(self) -> bool:
        """The times behind it further apart than a tick and an ALIGN pair (apart)."""
        if self.a_ns is None or self.b_ns is None:
            return self.a_ns is not None or self.b_ns is not None
        return apart(self.a_ns, self.b_ns)

    def within(self, pct: float) -> bool:
        return self.diff_pct <= pct or not self.beyond_a_tick


def published_figures(p: phase_stats.PhaseStats) -> dict[str, tuple[float | None, float | None]]:
    """A phase's published figures as (value, the time in ns that decides "within a tick"),
    read from the dict summary.json's "fisrig" block holds (PhaseStats.to_json)."""
    j = p.to_json()
    span = p.seconds * 1e9
    out: dict[str, tuple[float | None, float | None]] = {"IOPS": (j["iops"], span)}
    out["MB/s"] = (j["sweep"]["mb_per_s"], p.zone_seconds * 1e9) if "sweep" in j else (j["data_mb_per_s"], span)
    lat = phase_stats.published_latency(j) or dict.fromkeys(LATENCY)
    out.update({what: (v, v) for what, v in lat.items()})
    return out


@dataclass
class Row:
    """One time of one phase: its median or p99 on both runs, in ns."""
    phase: str
    what: str   # "latency" (ts_status - ts_h2d), a stamp ("setup" is t_setup_ns - t_h2d_ns), or "submit->h2d"
    stat: str   # "p50" or "p99"
    a_ns: int
    b_ns: int
    gated: bool = True

    @property
    def diff_pct(self) -> float:
        return _pct(self.a_ns, self.b_ns)

    @property
    def beyond_a_tick(self) -> bool:
        """Further apart than a stamp's resolution and an ALIGN pair (the module's docstring)."""
        return self.beyond(1)

    def beyond(self, align_pairs: int) -> bool:
        """Further apart than a tick and `align_pairs` ALIGN pairs (apart)."""
        return apart(self.a_ns, self.b_ns, align_pairs)

    def within(self, pct: float) -> bool:
        return not self.gated or self.diff_pct <= pct or not self.beyond_a_tick


def _us(ns: float | None) -> str:
    """A latency in us as a column shows it: to the ns below 10 us."""
    if ns is None:
        return "-"
    us = ns / 1e3
    return f"{us:.3f}" if us < 10 else f"{us:,.2f}" if us < 1000 else f"{us:,.1f}" if us < 100_000 else f"{us:,.0f}"


def _value(what: str, v: float | None) -> str:
    if v is None:
        return "-"
    if what == "IOPS":
        return f"{v:,.0f}"
    if what == "MB/s":
        return f"{v:,.1f}"
    return _us(v)


def _figure_text(f: Figure) -> str:
    """One figure in words: ncq read 4k rand p50 43.274 us against 36.560 us (18.36%)."""
    unit = " us" if f.is_time else ""
    return (f"{f.phase} {f.what} {_value(f.what, f.a)}{unit} against {_value(f.what, f.b)}{unit}"
            + (f" ({f.diff_pct:.2f}%)" if math.isfinite(f.diff_pct) else ""))


@dataclass
class Comparison:
    a: str
    b: str
    records: tuple[int, int]
    mismatches: list[str] = field(default_factory=list)  # record-by-record differences, at most `limit` records'
    rows: list[Row] = field(default_factory=list)
    published: list[Figure] = field(default_factory=list)  # phase by phase, in PUBLISHED's order
    differing_records: int = 0  # records (by place, or as a multiset) whose command, answer or phases differ
    plan: str = "?"
    plans_differ: str | None = None  # plan_difference, when any_plan compared them anyway

    @property
    def iops(self) -> dict[str, tuple[float, float]]:
        """Each phase's IOPS on both runs, (a, b): its published IOPS figure."""
        return {f.phase: (f.a or 0.0, f.b or 0.0) for f in self.published if f.what == "IOPS"}

    @property
    def spans_ns(self) -> dict[str, tuple[float, float]]:
        """Each phase's first submit to last status on both runs, ns: what its IOPS are over."""
        return {f.phase: (f.a_ns or 0.0, f.b_ns or 0.0) for f in self.published if f.what == "IOPS"}

    def iops_beyond_a_tick(self, phase: str) -> bool:
        """The phase's spans further apart than a stamp's resolution and an ALIGN pair, as a
        latency must be to count: a one-command phase's IOPS is its latency's inverse, and
        targets-agree's one failing command, 173 ns against 167, is 3.5% on a tick."""
        a, b = self.spans_ns.get(phase, (None, None))
        return a is None or apart(a, b)

    @property
    def worst_iops(self) -> tuple[str, float, float] | None:
        """The phase whose IOPS differ most, percent of b's, and its (a, b), of the phases
        whose spans are more than an ALIGN pair and a tick apart; None when there is none."""
        return max(((phase, a, b) for phase, (a, b) in self.iops.items() if b and self.iops_beyond_a_tick(phase)),
                   key=lambda x: abs(x[1] - x[2]) / x[2], default=None)

    @property
    def worst_iops_pct(self) -> float:
        """worst_iops's difference in percent of b's (0 when there is none)."""
        w = self.worst_iops
        return abs(w[1] - w[2]) * 100.0 / w[2] if w else 0.0

    def failing(self, pct: float) -> list[Row]:
        """The stamp-level times over `pct` and a tick (information to `fisrig compare`;
        tests/rtl hold the latency from the H2D to it)."""
        return [r for r in self.rows if not r.within(pct)]

    @property
    def worst_latency_pct(self) -> float:
        """The worst difference of a phase's median or p99 latency from the H2D (status -
        h2d), percent, of those more than an ALIGN pair and a tick apart: a tick is the
        stamps' resolution, and on a FLUSH of 100 ns it alone is 6.7%."""
        return max((r.diff_pct for r in self.rows if r.what == "latency" and r.beyond_a_tick), default=0.0)

    def published_failing(self, pct: float) -> list[Figure]:
        """The published figures over `pct` and more than a tick and an ALIGN pair apart (a
        rate: over spans so far apart), or that only one run has."""
        return [f for f in self.published if not f.within(pct)]

    @property
    def worst_published(self) -> Figure | None:
        """The published figure that differs most, in percent of b's, of those both runs
        have and more than an ALIGN pair and a tick apart; None when there is none."""
        return max((f for f in self.published if math.isfinite(f.diff_pct) and f.beyond_a_tick),
                   key=lambda f: f.diff_pct, default=None)

    @property
    def published_err_pct(self) -> float:
        """worst_published's difference in percent (0 when there is none)."""
        w = self.worst_published
        return w.diff_pct if w else 0.0

    def agree(self, pct: float) -> bool:
        """The same records, and every published figure within `pct` (or a tick)."""
        return not self.mismatches and not self.differing_records and not self.published_failing(pct)

    def table(self, only_failing: float | None = None) -> str:
        """The stamp-level rows, one a line (only those over `only_failing` and a tick)."""
        rows = self.rows if only_failing is None else self.failing(only_failing)
        lines = [f"{'phase':<16} {'time':<12} {'stat':<4} {'a ns':>10} {'b ns':>10} {'diff %':>7}"]
        for r in rows:
            mark = "" if r.gated else "  (not gated)"
            lines.append(f"{r.phase:<16} {r.what:<12} {r.stat:<4} {r.a_ns:>10} {r.b_ns:>10} {r.diff_pct:>7.2f}{mark}")
        return "\n".join(lines)

    def published_table(self, pct: float) -> list[str]:
        """The published figures, a phase in three lines: run a, run b, and their difference
        in percent of b's ("!" where over `pct` and a tick apart, "~" over `pct` within a tick)."""
        width = max([len("phase")] + [len(f.phase) for f in self.published])
        cols = {w: 10 if w in LATENCY else 9 for w in PUBLISHED}
        head = f"{'phase':<{width}}  {'run':<6}" + "".join(f"{w:>{cols[w]}}" for w in PUBLISHED)
        lines = [head]
        by_phase: dict[str, dict[str, Figure]] = {}
        for f in self.published:
            by_phase.setdefault(f.phase, {})[f.what] = f
        for phase, figs in by_phase.items():
            for run, get in (("A", lambda f: f.a), ("B", lambda f: f.b)):
                lines.append(f"{phase if run == 'A' else '':<{width}}  {run:<6}"
                             + "".join(f"{_value(w, get(figs[w])):>{cols[w]}}" for w in PUBLISHED))
            cells = []
            for w in PUBLISHED:
                f = figs[w]
                d = f"{f.diff_pct:.2f}" if math.isfinite(f.diff_pct) else "-"
                mark = "!" if not f.within(pct) else "~" if f.diff_pct > pct else " "
                cells.append(f"{d + mark:>{cols[w]}}")
            lines.append(f"{'':<{width}}  {'diff %':<6}" + "".join(cells))
        return lines

    def stamp_table(self, pct: float, every: bool = False) -> list[str]:
        """The stamp-level times (from the H2D; "status" is Row.what "latency"), a line per
        phase and stamp with its p50 and p99 on both runs (ns) and their difference in
        percent: those where either is over `pct` and a tick apart, or `every` one."""
        pairs: dict[tuple[str, str], dict[str, Row]] = {}
        for r in self.rows:
            pairs.setdefault((r.phase, r.what), {})[r.stat] = r
        shown = [(k, v) for k, v in pairs.items()
                 if every or any(r.diff_pct > pct and r.beyond_a_tick for r in v.values())]
        width = max([len("phase")] + [len(p) for (p, _), _ in shown])
        lines = [f"{'phase':<{width}}  {'stamp':<12}" + "".join(
            f"{h:>{w}}" for s in ("p50", "p99") for h, w in ((f"{s} A", 12), (f"{s} B", 12), ("diff %", 8)))]
        for (phase, what), by in shown:
            cells = "".join(f"{r.a_ns:>12,}{r.b_ns:>12,}{r.diff_pct:>8.2f}" if r else f"{'':>32}"
                            for r in (by.get("p50"), by.get("p99")))
            lines.append(f"{phase:<{width}}  {'status' if what == 'latency' else what:<12}{cells}")
        return lines if shown else []

    def lines(self, pct: float, every_stamp: bool = False) -> list[str]:
        """What `fisrig compare` prints: the published table, the stamp table, the record
        differences kept (compare's `limit`) and a line saying how many more, and the verdict."""
        out = [f"compare: {self.a} ({self.records[0]:,} commands) against {self.b} ({self.records[1]:,} commands, "
               f"the reference), plan {self.plan}"]
        if self.plans_differ:
            out.append(f"  (different plans, compared anyway: {self.plans_differ})")
        out += ["", f"published figures (latency from submit to status, us; diff in % of B's; ! over {pct:g}% "
                    "and a tick apart, ~ over it within a tick):"]
        out += self.published_table(pct)
        stamps = self.stamp_table(pct, every_stamp)
        pairs = len({(r.phase, r.what) for r in self.rows})
        what = f"stamp times from the H2D, p50 and p99, ns (information, not held to {pct:g}%)"
        if every_stamp:
            out += ["", f"{what}:"]
        else:
            over = len(stamps) - 1 if stamps else 0
            out += ["", f"{what}: {over} of {pairs} over {pct:g}% and a tick apart (--stamps shows them all)"
                        + (":" if stamps else "")]
        out += stamps
        kept = sum(m.startswith("record ") for m in self.mismatches)
        out += ["", f"records: {self.differing_records:,} differ" + (":" if self.mismatches else "")]
        out += [f"  {m}" for m in self.mismatches]
        if self.differing_records > kept:
            out.append(f"  ... and {self.differing_records - kept:,} more records differ (--limit N shows N)")
        failing = self.published_failing(pct)
        worst = self.worst_published
        out.append(f"published figures over {pct:g}%: {len(failing)} of {len(self.published)}"
                   + (f"; the worst: {_figure_text(worst)}" if worst else ""))
        if self.agree(pct):
            out.append(f"compare: the runs agree (every published figure within {pct:g}%, the same records)")
        else:
            why = [f"{len(failing)} published figures over {pct:g}%"] if failing else []
            why += ["their records"] if self.mismatches or self.differing_records else []
            out.append(f"compare: the runs differ ({', '.join(why)})")
        return [line.rstrip() for line in out]


def _table(run_dir: Path) -> pa.Table:
    """A run's records.parquet; InputError for a directory without one, or a damaged one."""
    path = Path(run_dir) / PARQUET
    if not path.is_file():
        raise InputError(str(run_dir), f"no {PARQUET} (not a finished run: `fisrig report` makes it from records.bin)")
    with store.reading_parquet(path):  # a damaged file: one line naming it
        return pq.read_table(path)


def commands(run_dir: Path, table: pa.Table | None = None) -> dict[str, np.ndarray]:
    """The command records of a run (power, link and end records left out), as columns;
    dictionary columns as their names. InputError for a directory without records.parquet."""
    path = Path(run_dir) / PARQUET
    table = _table(run_dir) if table is None else table
    missing = [c for c in dict.fromkeys(("kind", "t_submit_ns", "t_h2d_ns") + IDENTITY + OUTCOME + STAMPS
                                        + tuple(phase_stats.COLUMNS))
               if c not in table.column_names]
    if missing:
        raise InputError(str(path), f"has no {', '.join(missing)} column (a run from an older fisrig: "
                                    "`fisrig report` on its records.bin makes it anew)")
    kind, kind_names = codes(table, "kind")
    keep = kind == code_of(kind_names, "command")
    out = {}
    for name in table.column_names:
        if name in ("marker", "kind", "result"):
            idx, names = codes(table, name)
            out[name] = np.array(names, dtype=object)[idx][keep] if len(names) else np.zeros(0, dtype=object)
        else:
            out[name] = table.column(name).to_numpy()[keep]
    return out


def _record_mismatches(a: dict, b: dict, limit: int) -> tuple[list[str], int]:
    """The first `limit` differing records, one line each (Python values, never numpy's),
    and how many records differ."""
    out = []
    na, nb = len(a["command"]), len(b["command"])
    n = min(na, nb)
    if na != nb:
        out.append(f"{na:,} command records against {nb:,}")
    differ = np.zeros(n, dtype=bool)
    for k in IDENTITY + OUTCOME:
        differ |= np.asarray(a[k][:n] != b[k][:n], dtype=bool)
    for k in STAMPS:
        differ |= (a[k][:n] != 0) != (b[k][:n] != 0)
    where = np.flatnonzero(differ)
    for i in where[:max(limit, 0)].tolist():
        diffs = [f"{k} {_py(a[k][i])!r} != {_py(b[k][i])!r}" for k in IDENTITY + OUTCOME if a[k][i] != b[k][i]]
        diffs += [f"{k} {'present' if a[k][i] else 'absent'} != {'present' if b[k][i] else 'absent'}"
                  for k in STAMPS if bool(a[k][i]) != bool(b[k][i])]
        out.append(f"record {i} ({a['marker'][i]}, command {int(a['command'][i]):#04x}): " + "; ".join(diffs))
    return out, len(where)


def _stat(values: np.ndarray, p: int) -> int:
    return int(percentiles(values, (p,))[f"{p:.6f}"]) if len(values) else 0


def _as_multiset(r: dict) -> dict:
    """The records sorted by what they were and how they ended, phase by phase in the order
    the phases came: two runs that differ only in completion order compare equal."""
    phases = {p: i for i, p in enumerate(dict.fromkeys(r["marker"].tolist()))}
    keys = [[phases[p] for p in r["marker"].tolist()]] + [r[k].tolist() for k in IDENTITY[1:] + OUTCOME]
    order = sorted(range(len(r["command"])), key=lambda i: tuple(k[i] for k in keys))
    return {k: v[order] for k, v in r.items()}


def _steps(meta: dict) -> list:
    plan = meta.get("plan")
    return plan.get("steps", []) if isinstance(plan, dict) and isinstance(plan.get("steps"), list) else []


def _show(v) -> str:
    return "not given" if v is None else repr(v) if isinstance(v, str) else str(v)


def plan_difference(a: dict, b: dict) -> str | None:
    """The first difference of two runs' plans (run.json's "plan"), in words: its name, one
    of its settings, its steps' number, or step N's field; None when they are one plan (or
    either run.json has none to compare). The description and the file it came from do not
    count, nor does the drive: one plan on two drives is what compare is for."""
    pa_, pb = a.get("plan"), b.get("plan")
    if not isinstance(pa_, dict) or not isinstance(pb, dict):
        return None
    if pa_.get("name") != pb.get("name"):
        return f"plan {_show(pa_.get('name'))} vs {_show(pb.get('name'))}"
    for key in dict.fromkeys([*pa_, *pb]):
        if key not in NOT_SETTINGS and pa_.get(key) != pb.get(key):
            return f"the plan's {key}: {_show(pa_.get(key))} vs {_show(pb.get(key))}"
    sa, sb = _steps(a), _steps(b)
    for n, (x, y) in enumerate(zip(sa, sb), 1):
        if not isinstance(x, dict) or not isinstance(y, dict):
            continue
        for key in dict.fromkeys([*x, *y]):
            if x.get(key) != y.get(key):
                return f"step {n} ({x.get('do', '?')})'s {key}: {_show(x.get(key))} vs {_show(y.get(key))}"
    if len(sa) != len(sb):
        return f"{len(sa)} steps vs {len(sb)}"
    return None


def check_pair(a_dir: Path, b_dir: Path, any_plan: bool = False) -> tuple[dict, dict, str | None]:
    """Both runs' run.json, and their plans' first difference; InputError (one line) for a
    run given twice, and for runs of different plans unless `any_plan`."""
    a_dir, b_dir = Path(a_dir), Path(b_dir)
    if a_dir.resolve() == b_dir.resolve():
        raise InputError(str(a_dir), f"compared with itself ({b_dir} is the same directory): a run agrees "
                                     "with itself; give two runs")
    for d in (a_dir, b_dir):  # not a run, a damaged file, files of two runs
        run_state.inspect(d)
    ma, mb = run_state.read_meta(a_dir), run_state.read_meta(b_dir)
    diff = plan_difference(ma, mb)
    if diff and not any_plan:
        raise InputError(f"{a_dir} against {b_dir}", f"runs of different plans: {diff} "
                                                     "(--any-plan compares them anyway)")
    return ma, mb, diff


def _phases(table: pa.Table, meta: dict) -> dict[str, phase_stats.PhaseStats]:
    """Each phase's figures as `fisrig report` computes them (phase_stats over the report
    columns), by label."""
    return {p.label: p for p in phase_stats.compute(table.select(phase_stats.COLUMNS), meta)}


def compare(a_dir: Path, b_dir: Path, limit: int = 20, in_order: bool = True, any_plan: bool = False) -> Comparison:
    """Run `a` against run `b` (the reference: percentages are of b's values). InputError
    for what is not a run, a run given twice, and runs of different plans unless `any_plan`
    (check_pair). `limit`: the record differences kept as lines (all are counted)."""
    meta_a, meta_b, diff = check_pair(a_dir, b_dir, any_plan)
    ta, tb = _table(a_dir), _table(b_dir)
    a, b = commands(a_dir, ta), commands(b_dir, tb)
    phases_a, phases_b = _phases(ta, meta_a), _phases(tb, meta_b)
    plan = meta_b.get("plan")
    cmp = Comparison(str(a_dir), str(b_dir), (len(a["command"]), len(b["command"])),
                     plan=str(plan.get("name", "?")) if isinstance(plan, dict) else "?", plans_differ=diff)
    cmp.mismatches, cmp.differing_records = _record_mismatches(a, b, limit) if in_order else \
        _record_mismatches(_as_multiset(a), _as_multiset(b), limit)
    for one, other, run in ((phases_a, phases_b, a_dir), (phases_b, phases_a, b_dir)):
        for label in [p for p in one if p not in other]:
            n = one[label].commands
            cmp.mismatches.append(f"phase {label!r} only in {run} ({n:,} command{'s' if n != 1 else ''})")
    for label, pb in phases_b.items():
        if label not in phases_a:
            continue
        fa, fb = published_figures(phases_a[label]), published_figures(pb)
        cmp.published += [Figure(label, w, _py(fa[w][0]), _py(fb[w][0]), fa[w][1], fb[w][1]) for w in PUBLISHED]
    for phase in dict.fromkeys(b["marker"].tolist()):
        ma, mb = a["marker"] == phase, b["marker"] == phase
        times = {"latency": lambda r, m: r["t_status_ns"][m] - r["t_h2d_ns"][m]}
        for s in STAMPS[:-1]:
            times[s[2:-3]] = lambda r, m, s=s: (r[s][m] - r["t_h2d_ns"][m])[r[s][m] > 0]
        times["submit->h2d"] = lambda r, m: r["t_h2d_ns"][m] - r["t_submit_ns"][m]
        for what, of in times.items():
            va, vb = of(a, ma), of(b, mb)
            if not len(va) and not len(vb):
                continue
            for p in STATS:
                cmp.rows.append(Row(str(phase), what, f"p{p}", _stat(va, p), _stat(vb, p),
                                    gated=what != "submit->h2d"))
    return cmp
