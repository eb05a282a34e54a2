"""Two runs of one plan, record by record and phase by phase: did they send the same commands
and get the same answers, and how far apart are their times? The model target is held to
the gateware this way (tests/rtl/test_targets_agree.py, scripts/bench_targets.py), and any
two runs of a plan (two drives, two firmware versions) compare the same way.

What must be equal, record by record in completion order: the command (opcode, LBA, the
LBAs it covered), its result, status, error, D2H LBA, sectors and data dwords moved, and
which phases it had (a stamp that is 0 on one side and not on the other).

What must be close, per plan phase (marker) and per time, as the median and the p99 over
the phase's commands (fio_json.percentiles, the values a command had):
  - each stamp relative to the command's ts_h2d (accept, setup, data_first, data_last,
    status): what the wire and the drive did after the command reached the wire;
  - "latency", ts_status - ts_h2d: the command's whole time on the wire and in the drive.
The baseline is ts_h2d, not ts_submit: ts_submit is when the engine took the descriptor
from the ring, and what follows until the H2D goes out is the engine's fetch and the bus
the rig's CPU shares with it (on the rtl target) or nothing (on the model). It is shown as
"submit->h2d", not gated: the plan's latency_ns (submit to status) differs by it.
And per plan phase, its IOPS as the run's report gives them (phase_stats: commands over
the time from the phase's first submit to its last status), the rig's rate: at queue depth
1 the rig's CPU's time between commands is in it, at 32 the link's when the firmware keeps
up. Like a latency, a phase's IOPS count only when the two spans are more than an ALIGN
pair and a tick apart (a one-command phase's IOPS are its latency's inverse).

Completion order is the drive's and the link's: at queue depth 1 it is the issue order on
both targets; deeper, two commands that end within a few ticks of each other may end in the
other order on the other target. `in_order=False` matches records as a multiset per phase
(sorted by what they were and how they ended) for such plans.

A difference is within tolerance when it is within `pct` percent of the reference run
(`b`) or within an ALIGN pair and a tick (3 ticks, 20 ns at Gen3): a tick is a stamp's
resolution (the model schedules in ns, so its ticks round where the gateware's count), and
LiteSATA's link sends an ALIGN pair every 256 dwords, which a short command's window holds
or not depending on where in that period the rig's CPU happened to issue it; the model
books ALIGNs by their average (WireStamps). A change to the firmware's code alone (its
CPU timing) moved every FLUSH of targets-agree on the gateware from 107 to 120 ns, the
model's 100 ns; the rig core runner's FLUSH, with no ALIGN inside, takes 107.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import program_format as pf
from .errors import InputError
from .fio_json import percentiles
from . import phase_stats
from .results import PARQUET, codes, code_of, read_meta

# Equal record by record.
IDENTITY = ("marker", "command", "lba", "lbas")
OUTCOME = ("result", "status", "error", "d2h_lba", "sectors", "data_dwords")
STAMPS = ("t_accept_ns", "t_setup_ns", "t_data_first_ns", "t_data_last_ns", "t_status_ns")
STATS = (50, 99)
TICK_NS = pf.NS_PER_TICK
ALIGN_PAIR_NS = 2 * TICK_NS  # two dwords at Gen3


def apart(a_ns: float, b_ns: float, align_pairs: int = 1) -> bool:
    """Further apart than a tick and `align_pairs` ALIGN pairs: one for runs that start from
    boot (the module's docstring); two, one each way, for a resident board's second plan,
    which starts at no set point of either end's ALIGN period (tests/rtl/test_board_target.py)."""
    return abs(a_ns - b_ns) > TICK_NS + align_pairs * ALIGN_PAIR_NS + 0.5


@dataclass
class Row:
    """One time of one phase: its median or p99 on both runs, in ns."""
    phase: str
    what: str   # "latency", a stamp ("setup" is t_setup_ns - t_h2d_ns), or "submit->h2d"
    stat: str   # "p50" or "p99"
    a_ns: int
    b_ns: int
    gated: bool = True

    @property
    def diff_pct(self) -> float:
        if self.a_ns == self.b_ns:
            return 0.0
        return abs(self.a_ns - self.b_ns) * 100.0 / max(abs(self.b_ns), 1)

    @property
    def beyond_a_tick(self) -> bool:
        """Further apart than a stamp's resolution and an ALIGN pair (the module's docstring)."""
        return self.beyond(1)

    def beyond(self, align_pairs: int) -> bool:
        """Further apart than a tick and `align_pairs` ALIGN pairs (apart)."""
        return apart(self.a_ns, self.b_ns, align_pairs)

    def within(self, pct: float) -> bool:
        return not self.gated or self.diff_pct <= pct or not self.beyond_a_tick


@dataclass
class Comparison:
    a: str
    b: str
    records: tuple[int, int]
    mismatches: list[str] = field(default_factory=list)  # record-by-record differences
    rows: list[Row] = field(default_factory=list)
    iops: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase: (a, b)
    spans_ns: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase: its first submit to last status

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
        return [r for r in self.rows if not r.within(pct)]

    @property
    def worst_latency_pct(self) -> float:
        """The worst difference of a phase's median or p99 latency (status - h2d), percent,
        of those more than an ALIGN pair and a tick apart: a tick is the stamps'
        resolution, and on a FLUSH of 100 ns it alone is 6.7%."""
        return max((r.diff_pct for r in self.rows if r.what == "latency" and r.beyond_a_tick), default=0.0)

    def table(self, only_failing: float | None = None) -> str:
        rows = self.rows if only_failing is None else self.failing(only_failing)
        lines = [f"{'phase':<16} {'time':<12} {'stat':<4} {'a ns':>10} {'b ns':>10} {'diff %':>7}"]
        for r in rows:
            mark = "" if r.gated else "  (not gated)"
            lines.append(f"{r.phase:<16} {r.what:<12} {r.stat:<4} {r.a_ns:>10} {r.b_ns:>10} {r.diff_pct:>7.2f}{mark}")
        return "\n".join(lines)


def _table(run_dir: Path) -> pa.Table:
    """A run's records.parquet; InputError for a directory without one, or a damaged one."""
    path = Path(run_dir) / PARQUET
    if not path.is_file():
        raise InputError(str(run_dir), f"no {PARQUET} (not a finished run: `fisrig report` makes it from records.bin)")
    try:
        return pq.read_table(path)
    except Exception as e:  # noqa: BLE001 - a damaged file is an input problem, said in one line
        raise InputError(str(path), f"cannot be read: {e}") from None


def commands(run_dir: Path, table: pa.Table | None = None) -> dict[str, np.ndarray]:
    """The command records of a run (power, link and end records left out), as columns;
    dictionary columns as their names. InputError for a directory without records.parquet."""
    path = Path(run_dir) / PARQUET
    table = _table(run_dir) if table is None else table
    missing = [c for c in ("kind", "t_submit_ns", "t_h2d_ns") + IDENTITY + OUTCOME + STAMPS
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


def _record_mismatches(a: dict, b: dict, limit: int) -> list[str]:
    out = []
    n = min(len(a["command"]), len(b["command"]))
    if len(a["command"]) != len(b["command"]):
        out.append(f"{len(a['command'])} command records against {len(b['command'])}")
    for i in range(n):
        diffs = [f"{k} {a[k][i]!r} != {b[k][i]!r}" for k in IDENTITY + OUTCOME if a[k][i] != b[k][i]]
        diffs += [f"{k} {'present' if a[k][i] else 'absent'} != {'present' if b[k][i] else 'absent'}"
                  for k in STAMPS if bool(a[k][i]) != bool(b[k][i])]
        if diffs:
            out.append(f"record {i} ({a['marker'][i]}, command {int(a['command'][i]):#04x}): " + "; ".join(diffs))
            if len(out) >= limit:
                out.append("... (more left out)")
                break
    return out


def _stat(values: np.ndarray, p: int) -> int:
    return int(percentiles(values, (p,))[f"{p:.6f}"]) if len(values) else 0


def _as_multiset(r: dict) -> dict:
    """The records sorted by what they were and how they ended, phase by phase in the order
    the phases came: two runs that differ only in completion order compare equal."""
    phases = {p: i for i, p in enumerate(dict.fromkeys(r["marker"].tolist()))}
    keys = [[phases[p] for p in r["marker"].tolist()]] + [r[k].tolist() for k in IDENTITY[1:] + OUTCOME]
    order = sorted(range(len(r["command"])), key=lambda i: tuple(k[i] for k in keys))
    return {k: v[order] for k, v in r.items()}


def _phase_iops(run_dir: Path, table: pa.Table) -> dict[str, tuple[float, float]]:
    """Each phase's IOPS as the run's report gives them (phase_stats), and its span in ns."""
    return {p.label: (p.iops, p.seconds * 1e9) for p in phase_stats.compute(table, read_meta(Path(run_dir)))}


def compare(a_dir: Path, b_dir: Path, limit: int = 20, in_order: bool = True) -> Comparison:
    """Run `a` against run `b` (the reference: percentages are of b's values)."""
    ta, tb = _table(a_dir), _table(b_dir)
    a, b = commands(a_dir, ta), commands(b_dir, tb)
    iops_a, iops_b = _phase_iops(a_dir, ta), _phase_iops(b_dir, tb)
    cmp = Comparison(str(a_dir), str(b_dir), (len(a["command"]), len(b["command"])))
    cmp.mismatches = _record_mismatches(a, b, limit) if in_order else \
        _record_mismatches(_as_multiset(a), _as_multiset(b), limit)
    for phase in dict.fromkeys(b["marker"].tolist()):
        ma, mb = a["marker"] == phase, b["marker"] == phase
        (ia, sa), (ib, sb) = iops_a.get(str(phase), (0.0, 0.0)), iops_b.get(str(phase), (0.0, 0.0))
        cmp.iops[str(phase)], cmp.spans_ns[str(phase)] = (ia, ib), (sa, sb)
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
