"""The gateware's capture ring as capture.bin (docs/capture.md): each window the ring holds,
read through the bridge as the run goes (RigCapture's CSRs: the trigger, the window's depths,
each entry as engine/capture.py lays it out) and released, turned into capture.h's entries,
those of the window only, after a trigger entry; the FIS entries a command's tag can be read
off get it."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fisrig.capture.format import CUT_SHORT, ENTRY, HEADER, HEADER_DWORDS, MAGIC, NO_TAG, VERSION, payload_owner
from fisrig.sata import ata
from fisrig_hw import contract as _c
from fisrig_hw.engine.capture import ENTRY_BITS, entry_layout
from fisrig_hw.soc.rig_capture import ENTRY_WORDS, RING_BASE

WORDS = (ENTRY_BITS + 31) // 32  # the words of an entry's bits (of its ENTRY_WORDS on the bus)
BURST_ENTRIES = 255 // ENTRY_WORDS  # entries a bridge read: UARTBone moves at most 255 words
STATE_BITS = ("armed", "fired", "done", "wrapped", "holding", "cut", "late", "pending")  # RigCapture.state


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
    holding: bool = False
    cut: bool = False       # the window ended before its end (a STOP, a new arming, the run's end)
    late: bool = False      # it could start only at a release (armed_at)
    armed_at: int = 0
    missed: int = 0         # triggers that came while a window was held


def _word(link, regs, name, n=1):
    """A RigCapture CSR through the bridge (`link`: read(addr, n) of 32-bit words, write(addr,
    v)); a CSR wider than a word comes high word first."""
    ws = link.read(regs[f"wire_capture_{name}"], n)
    ws = [ws] if isinstance(ws, int) else list(ws)
    v = 0
    for w in ws:
        v = v << 32 | w
    return v


def state(link, regs) -> dict:
    s = _word(link, regs, "state")
    return {name: bool(s >> k & 1) for k, name in enumerate(STATE_BITS)}


def _all(link, regs) -> dict[str, int]:
    """Every RigCapture CSR in one read of the words they span (they lie one after the other:
    rig_capture.csr_addresses), each by its name less the prefix; a CSR wider than a word
    comes high word first."""
    at = sorted((a, n[len("wire_capture_"):]) for n, a in regs.items() if n.startswith("wire_capture_"))
    base = at[0][0]
    words = link.read(base, (at[-1][0] - base) // 4 + 1)
    out = {}
    for (a, name), (end, _) in zip(at, at[1:] + [(at[-1][0] + 4, None)]):
        v = 0
        for w in words[(a - base) // 4:(end - base) // 4]:
            v = v << 32 | w
        out[name] = v
    return out


# Entries that can go into the ring after one of a window while older than the window's
# first tick: an entry goes in when it ends, and what is open each way at that tick is at
# most a primitive run, a frame and its payload entry being gathered.
OPEN_AT_ONCE = 6
TICK_MASK = (1 << 64) - 1  # an entry's tick is its lowest bits (engine/capture.py entry_layout)


def window_first(armed_at: int, trigger_tick: int, before: int) -> int:
    """A window's first tick: `before` ticks ahead of its trigger, never before its arming (or
    the release it waited for)."""
    return max(armed_at, trigger_tick - before)


def _window_values(link, csr: dict, first: int) -> list[int]:
    """The ring's entries from the newest back (in bursts from RING_BASE) to the first of
    OPEN_AT_ONCE + 1 in a row older than `first`: every older one went in before `first` and
    is older still. In ring order. A deep ring (a board's DDR: capture_dram) is read for its
    window alone, not whole."""
    n, depth, after = csr["count"], csr["depth"], csr["write_index"]
    bursts, old, k = [], 0, 0
    while k < n and old <= OPEN_AT_ONCE:
        end = (after - 1 - k) % depth  # the newest not yet read
        take = min(BURST_ENTRIES, n - k, end + 1)
        ws = link.read(RING_BASE + 4 * ENTRY_WORDS * (end - take + 1), ENTRY_WORDS * take)
        values = [sum(w << (32 * j) for j, w in enumerate(ws[ENTRY_WORDS * i:ENTRY_WORDS * i + WORDS]))
                  for i in range(take)]
        bursts.append(values)
        k += take
        for v in reversed(values):
            old = old + 1 if (v & TICK_MASK) < first else 0
    return [v for b in reversed(bursts) for v in b]


def read(link, regs) -> Ring:
    """The ring as it is: its CSRs in one read and, when it has fired, its window's entries."""
    csr = _all(link, regs)
    st = {name: bool(csr["state"] >> k & 1) for k, name in enumerate(STATE_BITS)}
    trigger = csr["trigger"]
    first = window_first(csr["armed_at"], csr["trigger_tick"], csr["before"])
    values = _window_values(link, csr, first) if st["fired"] else []
    return Ring(st["armed"], st["fired"], st["done"], st["wrapped"], trigger & 0xF, trigger >> 8,
                csr["trigger_tick"], csr["before"], csr["after"], values, csr["dropped"], st["holding"],
                st["cut"], st["late"], csr["armed_at"], csr["missed"])


def entries(ring: Ring, window: int = 0) -> np.ndarray:
    """capture.h's entries of the ring's window: the trigger's first, then the window's in tick
    order; none when it never fired."""
    if not ring.fired:
        return np.zeros(0, dtype=ENTRY)
    e = np.zeros(len(ring.values), dtype=ENTRY)
    for i, v in enumerate(ring.values):
        at = 0
        for name, width in entry_layout:
            f = (v >> at) & ((1 << width) - 1)
            at += width
            if name == "header":
                e["header"][i] = [(f >> (32 * k)) & 0xFFFFFFFF for k in range(HEADER_DWORDS)]
            else:
                e[name][i] = f
    first = window_first(ring.armed_at, ring.trigger_tick, ring.before)
    last = ring.trigger_tick + ring.after
    # The window's entries by tick; a payload entry goes with its FIS, wherever its own tick.
    owner = payload_owner(e)
    inside = (e["tick"] >= first) & (e["tick"] <= last) & (e["kind"] != _c.FISRIG_CAPTURE_PAYLOAD)
    inside |= (owner >= 0) & inside[np.maximum(owner, 0)]
    e = e[inside]
    e = e[np.argsort(e["tick"], kind="stable")]
    e["tag"] = NO_TAG
    fis = e["kind"] == _c.FISRIG_CAPTURE_FIS
    command = (e["header"][:, 0] >> 16) & 0xFF
    h2d = fis & (e["type"] == _c.FISRIG_FIS_REG_H2D) & np.isin(command, sorted(ata.QUEUED))
    e["tag"][h2d] = (e["header"][h2d, 3] >> 3) & 0x1F
    setup = fis & (e["type"] == _c.FISRIG_FIS_DMA_SETUP)
    e["tag"][setup] = e["header"][setup, 1] & 0x1F
    owner = payload_owner(e)
    e["tag"][owner >= 0] = e["tag"][owner[owner >= 0]]
    t = np.zeros(1, dtype=ENTRY)
    t["tick"], t["kind"], t["type"], t["tag"] = ring.trigger_tick, _c.FISRIG_CAPTURE_TRIGGER, ring.trigger, NO_TAG
    # Cut short: a wrapped ring lost the window's oldest entries; the window waited for a
    # release past where it would have started; or it ended before its end.
    lost_start = ring.wrapped and (not len(e) or int(e["tick"][0]) > first)
    waited = ring.late and ring.trigger_tick - ring.before < ring.armed_at
    t["flags"] = CUT_SHORT if lost_start or waited or ring.cut else 0
    t["header"][0] = [ring.value, first & 0xFFFFFFFF, first >> 32, last & 0xFFFFFFFF, last >> 32, ring.dropped,
                      ring.missed]
    out = np.concatenate([t, e])
    out["window"] = window
    return out


@dataclass
class Drain:
    """Takes each window the gateware's ring holds as the run goes, and releases it so that the
    capture goes on (the arming's next window, or a later arming); `finish` takes what is left
    once the run has ended. Each window goes into capture.bin at `out` as it is taken (a host
    that dies keeps the windows it took, as records.bin keeps its records). Polls the ring's
    state at most every `every_s` of wall time, so the record ring's drain keeps its pace."""
    link: object
    regs: dict
    out: Path
    every_s: float = 0.005
    windows: int = 0  # taken so far
    _next: float = 0.0

    def __post_init__(self):
        write(self.out, np.zeros(0, dtype=ENTRY))

    def once(self) -> int:
        if time.monotonic() < self._next:
            return 0
        self._next = time.monotonic() + self.every_s
        if not state(self.link, self.regs)["holding"]:
            return 0
        self._take(read(self.link, self.regs))
        self.link.write(self.regs["wire_capture_release"], 1)
        return 1

    def finish(self) -> None:
        """A window still held, or fired and not yet passed when the run ended (cut short)."""
        ring = read(self.link, self.regs)
        if ring.armed and ring.fired:
            ring.cut = ring.cut or not ring.done
            self._take(ring)

    def _take(self, ring: Ring) -> None:
        e = entries(ring, self.windows)
        if len(e):
            self.windows += 1
            with open(self.out, "ab") as f:
                f.write(e.tobytes())


def write(path: Path, e: np.ndarray) -> None:
    """capture.bin: its header (capture.h struct fisrig_capture_file_header), then `e`."""
    head = np.array([(MAGIC, VERSION, ENTRY.itemsize, 0)], dtype=HEADER)
    with open(path, "wb") as f:
        f.write(head.tobytes())
        f.write(e.tobytes())
