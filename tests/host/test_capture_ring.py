"""The host's side of the gateware's capture ring (fisrig.capture.ring) against a ring of
words standing in for the bridge: each held window goes into capture.bin as it is taken and
is released; a window that waited for a release past its start, or that the run's end cut,
is marked cut short; the triggers missed while it was held and the entries dropped ride in
its trigger entry; only the window's entries are kept, in tick order."""
import numpy as np

from fisrig.capture import format as capture_format, ring
from fisrig_hw import contract as _c
from fisrig_hw.engine.capture import entry_layout
from fisrig_hw.soc.rig_capture import ENTRY_WORDS, RING_BASE, csr_addresses

REGS = csr_addresses()
STATE = {name: 1 << k for k, name in enumerate(ring.STATE_BITS)}


class FakeLink:
    """RigCapture's CSRs (a wide one high word first) and the ring's entries at RING_BASE."""

    def __init__(self):
        self.words, self.released, self.entries_read = {}, 0, 0

    def csr(self, name, value, words=1):
        at = REGS[f"wire_capture_{name}"]
        for k in range(words):
            self.words[at + 4 * k] = (value >> (32 * (words - 1 - k))) & 0xFFFFFFFF

    def ring(self, window):
        """window: dict of the ring's state and its entries as (tick, kind, type, count)."""
        self.csr("state", sum(STATE[n] for n in window["state"]))
        self.csr("trigger", window["trigger"] | window.get("value", 0) << 8)
        self.csr("trigger_tick", window["trigger_tick"], 2)
        self.csr("armed_at", window.get("armed_at", 0), 2)
        for name in ("before", "after", "missed", "dropped"):
            self.csr(name, window.get(name, 0))
        depth = window.get("depth", 64)
        self.csr("depth", depth)
        self.csr("count", min(depth, window.get("written", len(window["entries"]))))
        self.csr("write_index", window.get("written", len(window["entries"])) % depth)
        start = window.get("written", len(window["entries"])) - len(window["entries"])  # the oldest's slot
        for i, (tick, kind, typ, count) in enumerate(window["entries"]):
            fields = {"tick": tick, "kind": kind, "type": typ, "count": count, "dir": 0, "flags": 0,
                      "header": typ}
            v, at = 0, 0
            for name, width in entry_layout:
                v |= fields[name] << at
                at += width
            for k in range(ENTRY_WORDS):
                self.words[RING_BASE + 4 * (ENTRY_WORDS * ((start + i) % depth) + k)] = (v >> (32 * k)) & 0xFFFFFFFF

    def read(self, addr, length=None):
        if addr >= RING_BASE:
            self.entries_read += (length or 1) // ENTRY_WORDS
        words = [self.words.get(addr + 4 * k, 0) for k in range(length or 1)]
        return words[0] if length is None else words

    def write(self, addr, value):
        assert addr == REGS["wire_capture_release"] and value == 1
        self.released += 1


FIS, PRIM = _c.FISRIG_CAPTURE_FIS, _c.FISRIG_CAPTURE_PRIMITIVE
SDB, SYNC = _c.FISRIG_FIS_SET_DEVICE_BITS, _c.FISRIG_PRIM_SYNC


def test_each_held_window_is_in_capture_bin_as_soon_as_it_is_taken(tmp_path):
    link, out = FakeLink(), tmp_path / "capture.bin"
    drain = ring.Drain(link, REGS, out, every_s=0)
    link.ring({"state": ("armed", "fired"), "trigger": _c.FISRIG_TRIGGER_FIS, "trigger_tick": 1000,
               "entries": [(990, PRIM, SYNC, 4)]})
    assert drain.once() == 0 and link.released == 0  # not held yet: its window has not passed
    link.ring({"state": ("armed", "fired", "done", "holding"), "trigger": _c.FISRIG_TRIGGER_FIS, "value": SDB,
               "trigger_tick": 1000, "before": 20, "after": 50, "missed": 3, "dropped": 1,
               "entries": [(1040, PRIM, SYNC, 9), (979, PRIM, SYNC, 2), (1000, FIS, SDB, 2), (1051, FIS, SDB, 2)]})
    assert drain.once() == 1 and link.released == 1
    e = capture_format.read_bin(out)  # before the run ends: a host that dies now keeps it
    assert [int(t) for t in e["tick"]] == [1000, 1000, 1040]  # the trigger, then the window's in tick order
    t = e[0]
    assert t["kind"] == _c.FISRIG_CAPTURE_TRIGGER and t["type"] == _c.FISRIG_TRIGGER_FIS and not t["flags"]
    assert list(t["header"]) == [SDB, 980, 0, 1050, 0, 1, 3]  # value, first, last, dropped, missed
    # The next window waited for the release, past where it would have started: cut short;
    # then the run ends with one that has fired and not passed: cut short too.
    link.ring({"state": ("armed", "fired", "done", "holding", "late"), "trigger": _c.FISRIG_TRIGGER_FIS,
               "trigger_tick": 2000, "before": 100, "after": 10, "armed_at": 1950,
               "entries": [(1960, PRIM, SYNC, 3), (2000, FIS, SDB, 2)]})
    assert drain.once() == 1
    link.ring({"state": ("armed", "fired"), "trigger": _c.FISRIG_TRIGGER_FIS, "trigger_tick": 3000,
               "after": 500, "armed_at": 2500, "entries": [(3000, FIS, SDB, 2)]})
    drain.finish()
    e = capture_format.read_bin(out)
    triggers = e[e["kind"] == _c.FISRIG_CAPTURE_TRIGGER]
    assert list(triggers["window"]) == [0, 1, 2] and drain.windows == 3
    assert [bool(f & capture_format.CUT_SHORT) for f in triggers["flags"]] == [False, True, True]
    assert int(triggers[1]["header"][1]) == 1950  # the window starts at its release
    assert link.released == 2  # finish() reads, and leaves the ring as the run left it


def test_a_capture_that_never_fired_leaves_no_window(tmp_path):
    link, out = FakeLink(), tmp_path / "capture.bin"
    drain = ring.Drain(link, REGS, out, every_s=0)
    link.ring({"state": ("armed",), "trigger": _c.FISRIG_TRIGGER_R_ERR, "trigger_tick": 0,
               "entries": [(10, PRIM, SYNC, 4)]})
    assert drain.once() == 0
    drain.finish()
    assert len(capture_format.read_bin(out)) == 0 and out.stat().st_size == capture_format.HEADER.itemsize
    assert np.dtype(capture_format.ENTRY).itemsize == 48


def test_a_deep_ring_is_read_back_from_its_newest_entry_for_its_window_alone(tmp_path):
    """A ring of 4,096 entries that wrapped (8,212 written since the arming: the newest in
    slot 19, the window's first ones at the ring's end): the host reads from the newest entry
    back, across the ring's end, until 7 in a row are older than the window (an entry goes in when it ends: what was
    open at the window's start, a run, a frame and its payload each way, can come after the
    window's first entries), not the 4,096 a board's DDR ring would make it read over UART."""
    link, out = FakeLink(), tmp_path / "capture.bin"
    drain = ring.Drain(link, REGS, out, every_s=0)
    ticks = [10 * k for k in range(10_000)]
    ticks[-30] = 99_000 - 5_000  # a long SYNC run that began before the window, ended in it
    entries = [(t, PRIM, SYNC, 1) for t in ticks]
    link.ring({"state": ("armed", "fired", "done", "holding", "wrapped"), "trigger": _c.FISRIG_TRIGGER_FIS,
               "trigger_tick": 99_800, "before": 300, "after": 100, "depth": 4096, "written": 8212,
               "entries": entries[-4096:]})
    assert drain.once() == 1
    e = capture_format.read_bin(out)
    assert [int(t) for t in e["tick"][1:]] == [t for t in sorted(ticks[-4096:]) if 99_500 <= t <= 99_900]
    assert link.entries_read < 100  # 50 in the window and the 10 after it, a burst past its start
