"""What each power cut did: the verdicts of a run's power_loss steps, from its records alone.

A power_loss step (compile/power.py do_power_loss) runs cycles of writes of the integrity stamp,
a cut, power back on and a verify pass over its span (vm.c run_verify: STAMP records say
what every sector read back). Each sector of the span is classified per cycle from what
it held before the cycle (the previous verify pass), the cycle's writes (their sequence,
acknowledgement, FUA), the FLUSHes that completed before the cut, and what it holds now.
docs/power-loss.md defines the classes; tests/host/test_power_loss.py holds the checker
to each lying drive profile (sim/ssd/profiles/plp-*.toml).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fisrig import program_format as pf
from fisrig.analysis.arrays import OP_FLUSH, OP_READ, OP_TRIM, op_classes
from fisrig.records import store

VERDICTS = "verdicts.parquet"
CUTS = "cuts.parquet"
POWER_JSON = "power.json"

# Each class and what it means for the drive: ok, allowed (with the write cache on, ATA
# lets a drive lose what no FLUSH or FUA made durable), or a failure.
CLASSES = {
    "intact": "ok",            # holds the last write acknowledged (or a later one)
    "lost_unacked": "ok",      # holds older data; the writes it lost were never acknowledged
    "lost_cached": "allowed",  # lost an acknowledged write no completed FLUSH or FUA covered
    "lost_flushed": "failure",  # lost a write a completed FLUSH or FUA had made durable
    "unserializable": "failure",  # lost an acknowledged write while a write issued after that
                                  # acknowledgement survived
    "shorn": "failure",        # a sector cut part-way: unreadable, or its stamp torn
    "flying": "failure",       # another LBA's data (a misdirected write)
    "corrupt": "failure",      # bit errors, or data no write of the run put there
    "lost_at_rest": "failure",  # data no write of this cycle touched changed
    "identity_changed": "failure",  # IDENTIFY's capacity or page changed over the cut
    "no_return": "failure",    # the drive did not come back within the step's ready timeout
}
NAMES = list(CLASSES)
CYCLE_CLASSES = ("identity_changed", "no_return")  # said of a cycle, not of sectors
CODE = {n: i for i, n in enumerate(NAMES)}
# A damaged stamp this close to whole (bits that differ) is bit corruption; more is a
# sector written part-way (shorn): a torn sector mixes two sectors' dwords, hundreds of bits.
BIT_ERROR_MAX = 8
_F = {n: i for i, n in enumerate(pf.FINDINGS)}
COLUMNS = ["marker", "kind", "protocol", "command", "result", "tag", "lba", "lbas", "seq", "detail",
           "d2h_lba", "check_errors", "t_submit_ns", "t_h2d_ns", "t_status_ns", "queue"]
# The slots at a cut (engine_if.h's struct fisrig_cut_record), as the cut's record carries
# them (program.h, FISRIG_RECORD_POWER): cuts.parquet's mask columns. An NVMe engine's cut
# (struct fisrig_nvme_cut_record) counts its commands in the same words: sent, fetched,
# with data and done.
SLOT_MASKS = ("slots_issued", "slots_queued", "slots_data", "slots_done")


@dataclass
class StepVerdict:
    label: str
    cycles_planned: int
    cycles: int = 0
    classes: dict = field(default_factory=dict)   # name -> {"sectors", "cycles"}
    cut_by_event: int = 0
    cut_by_plan: int = 0
    failing_cycles: list = field(default_factory=list)
    example_cycle: int | None = None  # the cycle the timeline plot shows (of this run's, from 1)
    cuts: list = field(default_factory=list)  # per cycle cut_state's (or None: no record)
    counts: bool = False  # the cut records count commands (NVMe) rather than mask slots (SATA)
    first_cycle: int = 1  # the step's cycle this run's first is (a campaign's chunk: run_cycles)
    cycles_total: int | None = None  # the step's cycles, of which the run ran cycles_planned

    def summary(self) -> dict:
        failures = {n: c for n, c in self.classes.items() if CLASSES[n] == "failure"}
        return {
            "label": self.label, "cycles_planned": self.cycles_planned, "cycles": self.cycles,
            "first_cycle": self.first_cycle, "cycles_total": self.cycles_total or self.cycles_planned,
            # A step the run never reached (an earlier drive did not come back) says nothing.
            "verdict": "failures" if failures else "clean" if self.cycles else "not_run",
            "cuts_at_event": self.cut_by_event, "cuts_by_plan": self.cut_by_plan,
            "classes": {n: {**c, "severity": CLASSES[n],
                            "per_1000_cuts": round(1000 * c["cycles"] / max(1, self.cycles), 1)}
                        for n, c in sorted(self.classes.items(), key=lambda kv: CODE[kv[0]])},
            "cycles_with_failures": len(self.failing_cycles),
            "first_failing_cycles": self.failing_cycles[:20],
            "slots_at_cut": self._slots_at_cut(),
        }

    def _slots_at_cut(self) -> dict:
        """What the engine's cut records said, over the cuts that have one: slots holding an
        issued command, one the drive had released (NCQ), one whose data had begun to cross
        (a whole Data FIS), on average; and the cuts that fell inside a command's data: after
        a Data FIS of it and before its status."""
        cuts = [c for c in self.cuts if c is not None]
        if not cuts:
            return {"cuts_recorded": 0}
        m = np.array([[c[k] for k in SLOT_MASKS] for c in cuts], dtype=np.uint64)
        count = m.astype(np.int64) if self.counts else np.array([[slots_in(int(x)) for x in row] for row in m])
        # Over NVMe a command with data begun and not done is counted in the one and not the other.
        mid_data = count[:, 2] > count[:, 3] if self.counts else m[:, 2] & ~m[:, 3]
        return {"cuts_recorded": len(cuts), **({"protocol": "nvme"} if self.counts else {}),
                "issued_mean": round(float(count[:, 0].mean()), 2),
                "queued_mean": round(float(count[:, 1].mean()), 2),
                "data_mean": round(float(count[:, 2].mean()), 2),
                "cuts_mid_data": int(np.count_nonzero(mid_data))}


@dataclass
class Rows:
    """What power verdicts read of records.parquet, in one pass: the power_loss steps'
    records (`cols`: COLUMNS as arrays, dictionary columns as strings, nulls as 0, in
    record order) and every stamp write of the run (`known`: seq, lba, lbas by seq; a
    sector holding one of them where it did not write is misdirected, not corrupted)."""
    cols: dict
    known: tuple


def read_rows(run_dir: Path, labels: list[str]) -> Rows:
    path = run_dir / store.PARQUET
    with store.reading_parquet(path):  # a damaged file: InputError naming it
        t = pq.read_table(path, columns=COLUMNS)
    marker, names = store.codes(t, "marker")
    kind, kinds = store.codes(t, "kind")
    seq = t.column("seq").combine_chunks().fill_null(0).to_numpy(zero_copy_only=False)
    lba, lbas = t.column("lba").to_numpy(), t.column("lbas").to_numpy()
    write = (kind == store.code_of(kinds, "command")) & (seq > 0)
    order = np.argsort(seq[write], kind="stable")
    known = (seq[write][order], lba[write][order], lbas[write][order])
    # The run's END record carries the last phase's marker: not a row of a step.
    keep = np.isin(marker, [names.index(l) for l in labels if l in names]) & (kind != store.code_of(kinds, "end"))
    cols = {"marker": np.array(names, dtype=object)[marker[keep]]}
    for c in COLUMNS[1:]:
        if c in ("kind", "result"):
            codes, vals = store.codes(t, c)
            cols[c] = np.array(vals, dtype=object)[codes[keep]]
        else:
            cols[c] = t.column(c).combine_chunks().fill_null(0).to_numpy(zero_copy_only=False)[keep]
    # What each command is (a read, a write, a TRIM, a FLUSH) by its protocol's opcodes.
    cols["op"] = op_classes(cols["command"], cols["protocol"], cols["queue"])
    return Rows(cols, known)


def step_cycles(r: dict, label: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """A step's rows before its first cycle (its FLUSH and first verify pass) and each
    cycle's rows (_cycle_bounds)."""
    mine = np.flatnonzero(r["marker"] == label)
    bounds = _cycle_bounds(r, mine)
    if not bounds:
        return mine, []
    cuts = np.searchsorted(mine, bounds)
    return mine[:cuts[0]], [mine[cuts[c]:cuts[c + 1]] for c in range(len(bounds) - 1)]


def cut_rows(r: dict, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of a cycle's rows: the engine's record of the cut (an event record, not a POWER
    descriptor's), and the plan's POWER OFF after the cycle's commands."""
    kind, proto, cmd = r["kind"][idx], r["protocol"][idx], r["command"][idx]
    power = kind == "power"
    return idx[power & (proto != pf.PROTO["power"])], idx[power & (proto == pf.PROTO["power"]) & (cmd == pf.POWER_OFF)]


def slots_in(mask: int) -> int:
    """How many slots a cut record's mask names."""
    return int(mask).bit_count()


def cut_state(r: dict, idx: np.ndarray) -> dict | None:
    """Of a cycle's rows: the engine's cut record's tick and the one it counted its delay
    from (ns on the rig's clock; the trigger is where a command's row has t_h2d_ns) and the
    slots' masks (bit n: slot n); None when the plan's own POWER OFF cut the rails."""
    event, _ = cut_rows(r, idx)
    cut = event[r["tag"][event] == pf.EVENT_POWER_CUT]
    if not len(cut):
        return None
    i = cut[0]
    lba = int(r["lba"][i])
    return {"t_cut_ns": int(r["t_status_ns"][i]), "t_trigger_ns": int(r["t_h2d_ns"][i]), "slots_issued": lba & 0xFFFFFFFF, "slots_queued": lba >> 32,
            "slots_data": int(r["lbas"][i]), "slots_done": int(r["seq"][i])}


def classify(run_dir: Path, meta: dict, rows: Rows | None = None) -> list[StepVerdict]:
    """Verdicts of every power_loss step of the run in run_dir (from `rows`, read_rows's,
    if given); writes verdicts.parquet and power.json beside the records. [] when the run
    had none."""
    steps = meta.get("power_loss") or []
    if not steps:
        return []
    rows = rows or read_rows(run_dir, [s["label"] for s in steps])
    out_rows: list[tuple] = []
    verdicts = [_classify_step(rows.cols, s, rows.known, out_rows) for s in steps]
    _write(run_dir, out_rows, verdicts)
    return verdicts


def _classify_step(r: dict, step: dict, known, out_rows: list) -> StepVerdict:
    label, start, span = step["label"], int(step["lba_start"]), int(step["lba_count"])
    v = StepVerdict(label, int(step["cycles"]), counts=step.get("protocol") == "nvme",
                    first_cycle=int(step.get("first_cycle", 1)), cycles_total=step.get("cycles_total"))
    base, cycles = step_cycles(r, label)
    prev_what, prev_seq, _ = _found(r, base, start, span)
    ident = _identify(r, base)
    for number, idx in enumerate(cycles, 1):
        v.cuts.append(cut_state(r, idx))
        cls, cut_by, found = _classify_cycle(r, idx, start, span, prev_what, prev_seq, ident, known)
        if cls is None:  # the drive did not come back: the run ended there
            v.cycles += 1
            _count(v, number, {"no_return": 1}, out_rows, label, start, None, None)
            break
        v.cycles += 1
        v.cut_by_event += cut_by == "event"
        v.cut_by_plan += cut_by == "plan"
        codes, lost_seq, what, seq = cls
        counts = {NAMES[k]: int(n) for k, n in zip(*np.unique(codes[codes >= 0], return_counts=True))}
        if found == "identity_changed":
            counts["identity_changed"] = 1
        _count(v, number, counts, out_rows, label, start, codes, (lost_seq, what, seq))
        prev_what, prev_seq = what, seq
    if v.example_cycle is None and v.cycles:
        v.example_cycle = v.cycles
    return v


def _cycle_bounds(r: dict, mine: np.ndarray) -> list[int]:
    """Where each cycle's rows begin, and the end: a cycle is everything after one verify
    pass up to the end of the next (its IDENTIFY, then its reads and their STAMP records);
    rows after the last pass (a drive that did not come back) are a cycle of their own."""
    if not len(mine):
        return []
    kind = r["kind"][mine]
    # (A power_loss step's writes read nothing: its reads are the verify passes'.)
    verify_row = (kind == "stamp") | (kind == "identify") | ((kind == "command") & (r["op"][mine] == OP_READ) & (r["seq"][mine] == 0))
    idents = np.flatnonzero(kind == "identify")
    ends = []
    for p in idents:
        q = p + 1
        while q < len(mine) and verify_row[q] and kind[q] != "identify":
            q += 1
        ends.append(q)
    bounds = [int(mine[e]) if e < len(mine) else int(mine[-1]) + 1 for e in ends]
    if bounds and bounds[-1] <= mine[-1]:
        bounds.append(int(mine[-1]) + 1)  # what ran after the last pass
    return bounds


def _count(v: StepVerdict, cycle: int, counts: dict, out_rows: list, label: str, start: int,
           codes, detail) -> None:
    for n, k in counts.items():
        c = v.classes.setdefault(n, {"sectors": 0, "cycles": 0})
        c["sectors"] += k
        c["cycles"] += 1
    local, cycle = cycle, v.first_cycle - 1 + cycle  # the run's cycle, and the step's
    if any(CLASSES[n] == "failure" for n in counts):
        v.failing_cycles.append(cycle)
        if v.example_cycle is None:
            v.example_cycle = local
    if codes is None:
        for n in counts:
            if n in ("no_return", "identity_changed"):
                out_rows.append((label, cycle, n, CLASSES[n], -1, 0, "", 0, 0))
        return
    if "identity_changed" in counts:
        out_rows.append((label, cycle, "identity_changed", "failure", -1, 0, "", 0, 0))
    lost_seq, what, seq = detail
    # Runs of sectors with one class, one lost write and one finding: a row each.
    key = np.stack([codes, lost_seq.astype(np.int64), what.astype(np.int64), seq.astype(np.int64)], axis=1)
    change = np.ones(len(codes), dtype=bool)
    change[1:] = np.any(key[1:] != key[:-1], axis=1)
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], len(codes))
    for a, b in zip(starts, ends):
        if codes[a] < 0:
            continue
        n = NAMES[codes[a]]
        out_rows.append((label, cycle, n, CLASSES[n], start + int(a), int(b - a), pf.FINDINGS[int(what[a])],
                         int(seq[a]), int(lost_seq[a])))


def _spread(first: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The positions first[i] .. first[i] + n[i] - 1 of every i, concatenated."""
    n = n.astype(np.int64)
    total = int(n.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n) + np.repeat(first.astype(np.int64), n)


def _found(r: dict, idx: np.ndarray, start: int, span: int):
    """What the verify pass in rows idx read: per sector of the span its finding, the
    sequence it read and its damaged bits (zeros where nothing was read)."""
    what = np.zeros(span, dtype=np.uint8)
    seq = np.zeros(span, dtype=np.uint32)
    bits = np.zeros(span, dtype=np.uint32)
    st = idx[r["kind"][idx] == "stamp"]
    a = r["lba"][st].astype(np.int64) - start
    n = r["lbas"][st].astype(np.int64)
    inside = (a >= 0) & (a + n <= span)
    st, a, n = st[inside], a[inside], n[inside]
    pos = _spread(a, n)
    what[pos] = np.repeat(r["detail"][st], n)
    seq[pos] = np.repeat(r["seq"][st], n)
    bits[pos] = np.repeat(r["check_errors"][st], n)
    return what, seq, bits


def _identify(r: dict, idx: np.ndarray):
    ids = idx[r["kind"][idx] == "identify"]
    if not len(ids) or r["result"][ids[-1]] != "ok":
        return None
    return int(r["lba"][ids[-1]]), int(r["seq"][ids[-1]])


def _classify_cycle(r, idx, start, span, prev_what, prev_seq, ident, known):
    """One cycle's rows idx: per sector of the span its class code (-1: untouched and as
    before), the newest write it lost, and what it holds now; how the cut came; and
    whether IDENTIFY changed. (None, None, None) when the drive did not come back."""
    kind, cmd, result = r["kind"][idx], r["command"][idx], r["result"][idx]
    wait = idx[(kind == "link") & (cmd == pf.LINK_WAIT_UP)]
    if not len(wait) or r["result"][wait[-1]] != "ok":
        return None, None, None
    event, off = cut_rows(r, idx)
    cut_by = "event" if len(event) else "plan" if len(off) else "none"
    found_what, found_seq, found_bits = _found(r, idx, start, span)
    now_ident = _identify(r, idx)
    id_changed = "identity_changed" if ident is not None and now_ident != ident else None

    # The cycle's writes, in the order they were issued (their sequence).
    w = idx[(kind == "command") & (r["seq"][idx] > 0)]
    w = w[np.argsort(r["seq"][w], kind="stable")]
    op = r["op"][idx]
    flushes = idx[(kind == "command") & (op == OP_FLUSH) & (result == "ok")]
    flush_at = int(r["t_submit_ns"][flushes].max()) if len(flushes) else -1
    wa = np.maximum(r["lba"][w].astype(np.int64) - start, 0)
    wn = np.minimum(r["lba"][w].astype(np.int64) + r["lbas"][w].astype(np.int64) - start, span) - wa
    wn = np.maximum(wn, 0)
    cyc_seq = r["seq"][w].astype(np.int64)
    ok = r["result"][w] == "ok"
    fua = (r["detail"][w] & pf.DETAIL_FUA) != 0
    w_status = r["t_status_ns"][w].astype(np.int64)
    durable_w = ok & (fua | (w_status <= flush_at))
    cyc_lba, cyc_n = wa, wn
    cyc_sub, cyc_fua = r["t_submit_ns"][w].astype(np.int64), fua
    # Per sector: the last write issued, acknowledged, made durable (sequences rise in issue order).
    pos = _spread(wa, wn)
    rep = np.repeat(np.arange(len(w)), wn)
    last_any = np.zeros(span, dtype=np.int64)
    last_acked = np.zeros(span, dtype=np.int64)
    last_durable = np.zeros(span, dtype=np.int64)
    np.maximum.at(last_any, pos, cyc_seq[rep])
    np.maximum.at(last_acked, pos, np.where(ok, cyc_seq, 0)[rep])
    np.maximum.at(last_durable, pos, np.where(durable_w, cyc_seq, 0)[rep])
    acked_at = np.zeros(span, dtype=np.int64)
    if len(cyc_seq):
        acked_at = np.where(last_acked > 0, w_status[np.minimum(np.searchsorted(cyc_seq, last_acked), len(w) - 1)], 0)
    trimmed = np.zeros(span, dtype=bool)
    for i in idx[(kind == "command") & (op == OP_TRIM)]:
        a = max(0, int(r["lba"][i]) - start)
        trimmed[a:min(span, a + int(r["lbas"][i]))] = True
    written = last_any > 0
    pos = np.arange(span, dtype=np.int64)

    codes = np.full(span, -1, dtype=np.int16)
    fw, fs = found_what, found_seq.astype(np.int64)
    # Where the sequence found is one of this cycle's writes, and whether that write covers it.
    covers = np.zeros(span, dtype=bool)
    if len(cyc_seq):
        kk = np.minimum(np.searchsorted(cyc_seq, fs), len(cyc_seq) - 1)
        covers = (fs > 0) & (cyc_seq[kk] == fs) & (cyc_lba[kk] <= pos) & (pos < cyc_lba[kk] + cyc_n[kk])
    # A sequence some other write of the run carries: misdirected data when it did not write here.
    ks, kl, kn = known
    j = np.minimum(np.searchsorted(ks, fs), max(0, len(ks) - 1))
    known_seq = (len(ks) > 0) & (ks[j] == fs) & (fs > 0) if len(ks) else np.zeros(span, dtype=bool)
    known_here = known_seq & (kl[j] <= pos + start) & (pos + start < kl[j] + kn[j]) if len(ks) else known_seq

    stamp = fw == _F["stamp"]
    zeros = fw == _F["zeros"]
    same_as_before = (fw == prev_what) & (fs == prev_seq)
    # Which write the data is: this cycle's (its sequence), or from before (0).
    eff = np.where(covers, fs, 0)
    plausible = (stamp & (covers | (fs == prev_seq) | known_here)) | zeros
    lost_seq = np.where(last_acked > eff, last_acked, np.where(last_any > eff, last_any, 0))

    codes[plausible & written & (last_durable > eff)] = CODE["lost_flushed"]
    sel = plausible & written & (codes < 0)
    codes[sel & (last_acked > eff)] = CODE["lost_cached"]
    codes[sel & (last_acked <= eff) & (last_any > eff)] = CODE["lost_unacked"]
    codes[sel & (last_any <= eff)] = CODE["intact"]
    # Trimmed in this cycle: zeros or anything it held are what TRIM allows.
    codes[trimmed & plausible & (codes < 0) | trimmed & plausible & zeros] = CODE["intact"]
    untouched = ~written & ~trimmed
    codes[untouched & same_as_before] = -1  # nothing happened there: not a verdict
    codes[untouched & ~same_as_before & plausible] = CODE["lost_at_rest"]
    # What no write explains.
    bad = codes < 0
    fresh = ~(untouched & same_as_before)
    codes[bad & fresh & stamp & known_seq & ~known_here] = CODE["flying"]
    codes[bad & fresh & (fw == _F["other_lba"])] = CODE["flying"]
    codes[bad & fresh & stamp & ~known_seq & ~plausible] = CODE["corrupt"]
    codes[bad & fresh & (fw == _F["foreign"])] = CODE["corrupt"]
    damaged = bad & fresh & (fw == _F["damaged"])
    codes[damaged & (found_bits <= BIT_ERROR_MAX)] = CODE["corrupt"]
    codes[damaged & (found_bits > BIT_ERROR_MAX)] = CODE["shorn"]
    codes[bad & fresh & (fw == _F["unreadable"])] = np.where(written, CODE["shorn"], CODE["lost_at_rest"])[
        bad & fresh & (fw == _F["unreadable"])]

    # Unserializable: an acknowledged write lost while a write issued after its
    # acknowledgement (and not FUA, which an honest drive commits on its own) survived.
    lc = codes == CODE["lost_cached"]
    if lc.any() and len(cyc_seq):
        k = np.searchsorted(cyc_seq, np.unique(fs[covers & stamp]))
        s_sub = cyc_sub[k][~cyc_fua[k]]
        if len(s_sub):
            codes[lc & (acked_at < s_sub.max())] = CODE["unserializable"]
    return (codes, lost_seq, found_what, found_seq), cut_by, id_changed


def _write(run_dir: Path, rows: list, verdicts: list[StepVerdict]) -> None:
    cols = list(zip(*rows)) if rows else [[] for _ in range(9)]
    table = pa.table({
        "step": pa.array(cols[0], pa.string()).dictionary_encode(),
        "cycle": pa.array(cols[1], pa.uint32()),
        "class": pa.array(cols[2], pa.string()).dictionary_encode(),
        "severity": pa.array(cols[3], pa.string()).dictionary_encode(),
        "lba": pa.array(cols[4], pa.int64()),
        "lbas": pa.array(cols[5], pa.uint32()),
        "found": pa.array(cols[6], pa.string()).dictionary_encode(),
        "found_seq": pa.array(cols[7], pa.uint32()),
        "lost_seq": pa.array(cols[8], pa.uint32()),
    })
    pq.write_table(table, run_dir / VERDICTS, compression="zstd")
    cuts = [(v.label, n, c) for v in verdicts for n, c in enumerate(v.cuts, v.first_cycle)]
    pq.write_table(pa.table({
        "step": pa.array([c[0] for c in cuts], pa.string()).dictionary_encode(),
        "cycle": pa.array([c[1] for c in cuts], pa.uint32()),
        **{k: pa.array([c[2][k] if c[2] else None for c in cuts], pa.int64()) for k in ("t_cut_ns", "t_trigger_ns")},
        **{k: pa.array([c[2][k] if c[2] else None for c in cuts], pa.uint32()) for k in SLOT_MASKS},
    }), run_dir / CUTS, compression="zstd")
    (run_dir / POWER_JSON).write_text(json.dumps({"steps": [v.summary() for v in verdicts]}, indent=1) + "\n")
