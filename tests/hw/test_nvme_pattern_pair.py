"""fisrig_hw/nvme/pattern_pair.py, two dwords a cycle, against pattern.h compiled (the
pattern_reference fixture): every pattern's first three sectors from a sector's start, and
from a state stepped to the middle of one, as the completer and the checker continue a
command's data from one TLP to the next."""
import pytest
from migen import Module, Signal
from migen.sim import run_simulation

from fisrig_hw.nvme.pattern_pair import STATE, PatternPair, PatternState

FIELDS = [f for f, _ in STATE]


class Dut(Module):
    def __init__(self):
        self.submodules.pp = PatternPair()
        self.slba, self.t = Signal(48), Signal(20)
        self.st = PatternState("st")
        self.comb += self.pp.start(self.slba, self.t, self.st)


@pytest.mark.parametrize("kind, lba, word, pct", [(3, 1000, 7, 100), (3, 5, 9, 37), (3, (1 << 40) + 5, 0xDEADBEEF, 0),
                                                  (4, 77, 3, 100), (2, 1, 1, 100)])
def test_pairs_are_pattern_h_sectors(pattern_reference, kind, lba, word, pct):
    dut = Dut()
    got = {}

    def pairs(st, n):
        """n pairs from state st: their dwords, and the state after them."""
        out = []
        for _ in range(n):
            for f, v in st.items():
                yield getattr(dut.pp.cur, f).eq(v)
            yield
            out += [(yield dut.pp.dw0), (yield dut.pp.dw1)]
            st = {}
            for f in FIELDS:
                st[f] = yield getattr(dut.pp.nxt, f)
        return out, st

    def start(t):
        yield dut.t.eq(t)
        yield
        st = {}
        for f in FIELDS:
            st[f] = yield getattr(dut.st, f)
        return st

    def proc():
        yield dut.pp.kind.eq(kind)
        yield dut.pp.word.eq(word)
        yield dut.pp.pct.eq(pct)
        yield dut.slba.eq(lba)
        got["whole"], _ = yield from pairs((yield from start(0)), 192)
        # Continued: 32 pairs, then on from the state they left (a TLP of 256 bytes, then the next).
        first, st = yield from pairs((yield from start(128)), 32)
        more, _ = yield from pairs(st, 32)
        got["second"] = first + more

    run_simulation(dut, proc())
    want = pattern_reference(kind, lba, word, pct, 3)
    assert got["whole"] == want
    assert got["second"] == want[128:256]
