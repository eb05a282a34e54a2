"""capture.parquet: one row per captured entry (docs/capture.md), made from capture.bin at
the run's end beside records.parquet, each FIS tied to its command's record row and holding
its payload (the dwords past its first 7 that the capture kept) in a column of its own."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fisrig.capture import decode
from fisrig.capture.format import (BAD, CAPTURE_BIN, CAPTURE_PARQUET, CONT, CUT_SHORT, DIRECTIONS, EVENTS, FIS_TYPES,
                                   HEADER_DWORDS, KIND_CODE, KINDS, MODELLED, NO_TAG, PAYLOAD, PRIMITIVES, TRIGGERS,
                                   payload_owner, read_bin, ticks_to_ns)
from fisrig.records import store

COLUMNS = ("window", "tick", "t_ns", "direction", "kind", "name", "count", "tag", "record_row", "modelled", "bad",
           "cut_short", "cont", "command", "features", "status", "error", "lba", "fis_count", "sactive", "transfer_bytes",
           "dma_tag", "dwords", "payload")


_BY_KIND = {KIND_CODE["fis"]: FIS_TYPES, KIND_CODE["primitive"]: PRIMITIVES, KIND_CODE["event"]: EVENTS,
            KIND_CODE["trigger"]: TRIGGERS}
# The dictionaries of the string columns, the same in every capture.parquet (a value unknown
# to this fisrig, an FIS type byte it has no name for, is spelt in hex after them).
NAMES = list(dict.fromkeys(n for table in _BY_KIND.values() for n in table.values()))


def names(kind: np.ndarray, ftype: np.ndarray) -> pa.DictionaryArray:
    """Each entry's name (its FIS type, primitive, event or trigger) as a dictionary column of
    NAMES, looked up for all entries at once (a type this fisrig has no name for, in hex)."""
    words = list(NAMES)
    lut = np.full(len(KINDS) * 256, -1, dtype=np.int32)
    for k, table in _BY_KIND.items():
        for t, n in table.items():
            lut[k * 256 + t] = words.index(n)
    key = kind.astype(np.int32) * 256 + ftype
    idx = lut[np.minimum(key, len(lut) - 1)]
    for k in np.unique(key[idx < 0]):
        words.append(f"{int(k) % 256:#04x}")
        idx[key == k] = len(words) - 1
    return pa.DictionaryArray.from_arrays(pa.array(idx), pa.array(words, pa.string()))


def _codes(codes: np.ndarray, words: list[str], valid: np.ndarray | None = None) -> pa.DictionaryArray:
    """A dictionary column of `words` from codes that index them (null where not `valid`)."""
    idx = pa.array(codes.astype(np.int32), mask=None if valid is None else ~valid)
    return pa.DictionaryArray.from_arrays(idx, pa.array(words, pa.string()))


def record_rows(tag: np.ndarray, t_ns: np.ndarray, records: Path) -> np.ndarray:
    """The records.parquet row of the command each entry belongs to: the command record of
    its slot whose submit-to-status span holds the entry's time (-1: none)."""
    rows = np.full(len(tag), -1, dtype=np.int64)
    if not len(tag) or not records.exists():
        return rows
    t = pq.read_table(records, columns=["kind", "tag", "t_submit_ns", "t_status_ns"])
    kind, kinds = store.codes(t, "kind")
    cmd = np.flatnonzero(kind == store.code_of(kinds, "command"))
    rtag = t.column("tag").to_numpy()[cmd]
    submit, status = t.column("t_submit_ns").to_numpy()[cmd], t.column("t_status_ns").to_numpy()[cmd]
    for s in np.unique(tag[tag != NO_TAG]):
        mine = np.flatnonzero(rtag == s)
        if not len(mine):
            continue
        mine = mine[np.argsort(submit[mine], kind="stable")]
        at = np.flatnonzero(tag == s)
        i = np.searchsorted(submit[mine], t_ns[at], side="right") - 1
        ok = (i >= 0) & (t_ns[at] <= status[mine[np.maximum(i, 0)]])
        rows[at[ok]] = cmd[mine[i[ok]]]
    return rows


def payloads(e: np.ndarray) -> pa.BinaryArray:
    """Each entry's payload: a FIS's dwords from its 8th to its last before the CRC, as many as
    its payload entries hold, as the bytes crossed (each dword little-endian); null where the
    capture kept none. The payload entries' own rows are then left out (to_table)."""
    owner = payload_owner(e)
    pay = np.flatnonzero(owner >= 0)
    pay = pay[np.lexsort((e["count"][pay], owner[pay]))]
    # Each payload entry's dwords that are its FIS's: up to its type (how many it holds) and
    # before the FIS's end (its count; the CRC past it).
    first = e["count"][pay].astype(np.int64)
    n = np.clip(np.minimum(e["type"][pay].astype(np.int64), e["count"][owner[pay]].astype(np.int64) - first),
                0, HEADER_DWORDS)
    keep = np.arange(HEADER_DWORDS)[None, :] < n[:, None]
    flat = e["header"][pay][keep].astype("<u4")
    dwords = np.zeros(len(e), dtype=np.int64)
    np.add.at(dwords, owner[pay], n)
    offsets = np.zeros(len(e) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(dwords * 4)
    has = np.zeros(len(e), dtype=bool)
    has[owner[pay]] = True
    return pa.BinaryArray.from_buffers(pa.binary(), len(e), [pa.py_buffer(np.packbits(has, bitorder="little")),
                                                              pa.py_buffer(offsets), pa.py_buffer(flat.tobytes())])


def to_table(e: np.ndarray, records: Path) -> pa.Table:
    """capture.parquet's table of entries `e` (capture.bin's), rows in the file's order, the
    payload entries in their FIS's row."""
    payload = payloads(e)
    rows_of = e["kind"] != PAYLOAD
    if not rows_of.all():
        e, payload = e[rows_of], payload.filter(pa.array(rows_of))
    t_ns = ticks_to_ns(e["tick"])
    wire = (e["kind"] == KIND_CODE["fis"]) | (e["kind"] == KIND_CODE["primitive"])
    tag = e["tag"].astype(np.int16)
    f = decode.fields(e["kind"], e["type"], e["header"])
    masked = {k: pa.array(v, mask=v < 0) for k, v in f.items()}
    rows = record_rows(e["tag"], t_ns, records)
    dwords = pa.FixedSizeListArray.from_arrays(pa.array(e["header"].reshape(-1), pa.uint32()), e["header"].shape[1])
    return pa.table({
        "window": e["window"], "tick": e["tick"], "t_ns": t_ns,
        "direction": _codes(e["dir"], [DIRECTIONS[d] for d in sorted(DIRECTIONS)], wire),
        "kind": _codes(e["kind"], [KINDS[k] for k in sorted(KINDS)]),
        "name": names(e["kind"], e["type"]),
        "count": e["count"], "tag": pa.array(tag, mask=tag == NO_TAG),
        "record_row": pa.array(rows, mask=rows < 0),
        "modelled": (e["flags"] & MODELLED) != 0, "bad": (e["flags"] & BAD) != 0,
        "cut_short": (e["flags"] & CUT_SHORT) != 0, "cont": (e["flags"] & CONT) != 0,
        **masked, "dwords": dwords, "payload": payload,
    })


def make(run_dir: Path, keep_raw: bool = True) -> Path | None:
    """capture.parquet from the run's capture.bin, when it has one newer than the table
    (a run, or `fisrig report` of a killed one); capture.bin goes unless kept."""
    run_dir = Path(run_dir)
    raw, out = run_dir / CAPTURE_BIN, run_dir / CAPTURE_PARQUET
    if not raw.exists():
        return out if out.exists() else None
    if not out.exists() or raw.stat().st_mtime >= out.stat().st_mtime:
        table = to_table(read_bin(raw), run_dir / store.PARQUET)
        tmp = out.with_name(out.name + ".tmp")
        pq.write_table(table, tmp, compression="zstd")
        tmp.replace(out)
    if not keep_raw:
        raw.unlink()
    return out


def notes(run_dir: Path, captures: list[dict]) -> list[str]:
    """What the run says of its captures (compile's Compiled.captures), one line each: with no
    window at all, each arming, naming its step; windows cut short; entries the gateware
    dropped; triggers that came while the gateware held a window for the host."""
    path = Path(run_dir) / CAPTURE_PARQUET
    if not captures:
        return []
    if not path.exists() or not pq.read_metadata(path).num_rows:
        return [f"the capture step {c['step']} armed (trigger {c['trigger']}) never fired: capture.parquet has "
                "no window" for c in captures]
    t = pq.read_table(path, columns=["window", "kind", "cut_short", "dwords", "modelled"]).to_pandas()
    out = []
    asked = [c for c in captures if c.get("payload_dwords")]
    if asked and t["modelled"].any():
        out.append(f"the capture step {asked[0]['step']} asked for {asked[0]['payload_dwords']} payload dwords: the "
                   "model target keeps none (it has no FIS's dwords past its header); the gateware's capture (--target "
                   "rtl, a board) keeps them")
    t = t[t["kind"] == "trigger"]
    cut = [int(w) for w in t.loc[t["cut_short"], "window"]]
    if cut:
        out.append(f"capture window{'s' * (len(cut) > 1)} {', '.join(map(str, cut))} cut short: the ring wrapped "
                   "before the window's start, the window waited for the host's read of the one before, or the "
                   "run or a new arming ended it (docs/capture.md)")
    dropped = max((int(d[5]) for d in t["dwords"]), default=0)
    if dropped:
        out.append(f"the gateware's capture dropped {dropped} entries it could not take at once (never stalling "
                   "the wire)")
    missed = {int(w): int(d[6]) for w, d in zip(t["window"], t["dwords"]) if d[6]}
    if missed:
        out.append(f"{sum(missed.values())} capture trigger{'s' * (sum(missed.values()) != 1)} came while the "
                   f"gateware held window{'s' * (len(missed) > 1)} {', '.join(map(str, missed))} for the host to "
                   "read, and took no window")
    return out
