"""The gateware's capture ring as capture.bin (docs/capture.md): what the host reads through
the bridge after a run (RigCapture's CSRs: the trigger, the window's depths, each entry as
engine/capture.py lays it out) turned into capture.h's entries, those of the window only,
after a trigger entry; the FIS entries a command's tag can be read off get it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fisrig.capture.format import CUT_SHORT, ENTRY, HEADER, HEADER_DWORDS, MAGIC, NO_TAG, VERSION
from fisrig.sata import ata
from fisrig_hw import contract as _c
from fisrig_hw.engine.capture import ENTRY_BITS, entry_layout

WORDS = (ENTRY_BITS + 31) // 32  # a ring entry's CSR words
# The triggers the gateware fires itself, for one window an arming (descriptor_checks.capture_ok).
GATEWARE_TRIGGERS = {_c.FISRIG_TRIGGER_ARMED, _c.FISRIG_TRIGGER_FIS, _c.FISRIG_TRIGGER_COMMAND,
                     _c.FISRIG_TRIGGER_TAG, _c.FISRIG_TRIGGER_R_ERR, _c.FISRIG_TRIGGER_POWER_CUT}


@dataclass
class Ring:
    armed: bool
    fired: bool
    done: bool
    wrapped: bool
    trigger: int
    value: int
    trigger_tick: int
    before: int
    after: int
    values: list[int]  # each entry's bits, in ring order
    dropped: int = 0   # entries the compressors dropped since the SoC started


def read(link, regs: dict) -> Ring:
    """The ring through the bridge (`link`: read(addr, n) of 32-bit words, write(addr, v));
    a CSR wider than a word comes high word first."""
    def word(name, n=1):
        ws = link.read(regs[f"wire_capture_{name}"], n)
        ws = [ws] if isinstance(ws, int) else list(ws)
        v = 0
        for w in ws:
            v = v << 32 | w
        return v
    state = word("state")
    trigger = word("trigger")
    values = []
    for i in range(word("count")):
        link.write(regs["wire_capture_rd_index"], i)
        values.append(word("rd_data", WORDS))
    return Ring(bool(state & 1), bool(state & 2), bool(state & 4), bool(state & 8), trigger & 0xF, trigger >> 8,
                word("trigger_tick", 2), word("before"), word("after"), values, word("dropped"))


def entries(ring: Ring) -> np.ndarray:
    """capture.h's entries of the ring's window: the trigger's first, then the window's in tick
    order; none when it never fired."""
    if not ring.fired:
        return np.zeros(0, dtype=ENTRY)
    e = np.zeros(len(ring.values), dtype=ENTRY)
    for i, v in enumerate(ring.values):
        at = 0
        for name, width in entry_layout:
            field = (v >> at) & ((1 << width) - 1)
            at += width
            if name == "header":
                e["header"][i] = [(field >> (32 * k)) & 0xFFFFFFFF for k in range(HEADER_DWORDS)]
            else:
                e[name][i] = field
    first = max(0, ring.trigger_tick - ring.before)
    last = ring.trigger_tick + ring.after
    e = e[(e["tick"] >= first) & (e["tick"] <= last)]
    e = e[np.argsort(e["tick"], kind="stable")]
    e["tag"] = NO_TAG
    fis = e["kind"] == _c.FISRIG_CAPTURE_FIS
    command = (e["header"][:, 0] >> 16) & 0xFF
    h2d = fis & (e["type"] == _c.FISRIG_FIS_REG_H2D) & np.isin(command, sorted(ata.QUEUED))
    e["tag"][h2d] = (e["header"][h2d, 3] >> 3) & 0x1F
    setup = fis & (e["type"] == _c.FISRIG_FIS_DMA_SETUP)
    e["tag"][setup] = e["header"][setup, 1] & 0x1F
    t = np.zeros(1, dtype=ENTRY)
    t["tick"], t["kind"], t["type"], t["tag"] = ring.trigger_tick, _c.FISRIG_CAPTURE_TRIGGER, ring.trigger, NO_TAG
    # A wrapped ring lost the window's oldest entries: the window is cut short.
    t["flags"] = CUT_SHORT if ring.wrapped and (not len(e) or int(e["tick"][0]) > first) else 0
    t["header"][0, :6] = [ring.value, first & 0xFFFFFFFF, first >> 32, last & 0xFFFFFFFF, last >> 32, ring.dropped]
    return np.concatenate([t, e])


def write(path: Path, e: np.ndarray) -> None:
    """capture.bin: its header (capture.h struct fisrig_capture_file_header), then `e`."""
    head = np.array([(MAGIC, VERSION, ENTRY.itemsize, 0)], dtype=HEADER)
    with open(path, "wb") as f:
        f.write(head.tobytes())
        f.write(e.tobytes())
