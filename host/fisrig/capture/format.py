"""capture.bin and its entries, as firmware/core/include/fisrig/capture.h defines them
(through fisrig_hw.contract): the entry dtype, the names of kinds, triggers, primitives,
events and FIS types that capture.parquet and the listings spell."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fisrig.errors import InputError
from fisrig.records.schema import ticks_to_ns as _to_ns
from fisrig.sata import ata
from fisrig_hw import contract as _c

MAGIC, VERSION = _c.FISRIG_CAPTURE_FILE_MAGIC, _c.FISRIG_CAPTURE_FILE_VERSION
HEADER = np.dtype([("magic", "<u4"), ("version", "<u4"), ("entry_bytes", "<u4"), ("reserved", "<u4")])
HEADER_DWORDS = _c.FISRIG_CAPTURE_HEADER_DWORDS
ENTRY = np.dtype({"names": ["tick", "kind", "dir", "type", "flags", "window", "tag", "reserved", "count", "header"],
                  "formats": ["<u8", "u1", "u1", "u1", "u1", "<u2", "u1", "u1", "<u4", ("<u4", (HEADER_DWORDS,))],
                  "offsets": [_c.FIELDS["fisrig_capture_entry"][f][0] for f in
                              ("tick", "kind", "dir", "type", "flags", "window", "tag", "reserved", "count", "header")],
                  "itemsize": _c.SIZES["fisrig_capture_entry"]})

ARM, STOP = _c.FISRIG_CAPTURE_ARM, _c.FISRIG_CAPTURE_STOP
MODELLED, BAD, CUT_SHORT, CONT = (_c.FISRIG_CAPTURE_MODELLED, _c.FISRIG_CAPTURE_BAD, _c.FISRIG_CAPTURE_CUT_SHORT,
                                  _c.FISRIG_CAPTURE_CONT)
NO_TAG = _c.FISRIG_CAPTURE_NO_TAG
TO_DEVICE, TO_HOST = _c.FISRIG_CAPTURE_TO_DEVICE, _c.FISRIG_CAPTURE_TO_HOST
DIRECTIONS = {TO_DEVICE: "to_device", TO_HOST: "to_host"}


def _enum(name: str, prefix: str) -> dict[int, str]:
    return {getattr(_c, m): m[len(prefix):].lower() for m in _c.ENUMS[name]}


KINDS = _enum("fisrig_capture_kind", "FISRIG_CAPTURE_")  # 0: "fis", 1: "primitive", ...
TRIGGERS = _enum("fisrig_capture_trigger", "FISRIG_TRIGGER_")  # 0: "armed", 1: "fis", ...
EVENTS = _enum("fisrig_capture_event", "FISRIG_CAPTURE_EVENT_")  # 1: "power_cut", ...
PRIMITIVES = {v: n.upper() for v, n in _enum("fisrig_primitive", "FISRIG_PRIM_").items()}  # 11: "R_ERR"
FIS_TYPES, FIS_BY_NAME = ata.FIS_TYPES, ata.FIS_BY_NAME
KIND_CODE = {v: k for k, v in KINDS.items()}

CAPTURE_BIN = "capture.bin"
CAPTURE_PARQUET = "capture.parquet"
# `fisrig capture export`'s files in the run directory, when --out does not say otherwise.
EXPORTS = ("capture.perfetto-trace", "capture.vcd", "capture.gtkw")  # the VCD's GTKWave save file last


def read_bin(path: Path) -> np.ndarray:
    """The entries of a capture.bin (a torn last entry of a killed run left out);
    InputError for a file that is not one."""
    raw = Path(path).read_bytes()
    if len(raw) < HEADER.itemsize:
        return np.zeros(0, dtype=ENTRY)
    head = np.frombuffer(raw[:HEADER.itemsize], dtype=HEADER)[0]
    if int(head["magic"]) != MAGIC:
        raise InputError(str(path), f"not a fisrig capture (magic {int(head['magic']):#010x}, want {MAGIC:#010x})")
    if int(head["entry_bytes"]) != ENTRY.itemsize:
        raise InputError(str(path), f"entries of {int(head['entry_bytes'])} bytes; this fisrig reads {ENTRY.itemsize}")
    body = raw[HEADER.itemsize:]
    whole = len(body) - len(body) % ENTRY.itemsize
    return np.frombuffer(body[:whole], dtype=ENTRY).copy()


PAYLOAD, FIS = _c.FISRIG_CAPTURE_PAYLOAD, _c.FISRIG_CAPTURE_FIS


def payload_owner(e: np.ndarray) -> np.ndarray:
    """For each payload entry of `e` (capture.h FISRIG_CAPTURE_PAYLOAD), the index in `e` of the
    FIS it continues; -1 for other entries, and for a payload whose FIS is not in `e` (a window
    that began inside the frame). A FIS's payload is a run of entries from its dword 7 on, after
    the FIS's first dword and before the next frame of its direction: the FIS of its direction
    and window that began last before the run's first entry, when that FIS is 7 dwords or
    longer (its CRC can be a payload entry's last dword) and has no other run."""
    owner = np.full(len(e), -1, dtype=np.int64)
    pay = np.flatnonzero(e["kind"] == PAYLOAD)
    if not len(pay):
        return owner
    fis = np.flatnonzero(e["kind"] == FIS)
    for d in (TO_DEVICE, TO_HOST):
        for w in np.unique(e["window"][pay]):
            f = fis[(e["dir"][fis] == d) & (e["window"][fis] == w)]
            p = pay[(e["dir"][pay] == d) & (e["window"][pay] == w)]
            if not len(p) or not len(f):
                continue
            f = f[np.argsort(e["tick"][f], kind="stable")]
            p = p[np.lexsort((e["count"][p], e["tick"][p]))]
            run = np.cumsum(e["count"][p] == HEADER_DWORDS)  # each run starts at dword 7
            taken = set()
            for r in np.unique(run[run > 0]):
                mine = p[run == r]
                i = int(np.searchsorted(e["tick"][f], e["tick"][mine[0]], side="left")) - 1
                if i < 0 or f[i] in taken or int(e["count"][f[i]]) < HEADER_DWORDS:
                    continue
                taken.add(f[i])
                owner[mine] = f[i]
    return owner


def ticks_to_ns(ticks):
    """The rig's ticks as whole ns, as the records' columns are (engine_if.h's rounding)."""
    return _to_ns(np.asarray(ticks, dtype=np.int64))



def window_ticks(dwords) -> tuple[int, int]:
    """A trigger entry's window: its first and last tick (capture.h, FISRIG_CAPTURE_TRIGGER)."""
    return int(dwords[1]) | int(dwords[2]) << 32, int(dwords[3]) | int(dwords[4]) << 32
