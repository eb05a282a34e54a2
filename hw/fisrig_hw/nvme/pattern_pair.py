"""firmware/core/include/fisrig/pattern.h's sectors two dwords a cycle, from any dword of a
command's data: the state at a dword (its index in the data, the sector's LBA, the LFSR
stream and the CRC so far) and the next two dwords and the state after them, as logic.
The completer sends a write's data from it and the controller's writes of a read's data
are checked against it, a 64-bit beat a cycle (the SATA engine's PatternGenerator goes a
dword a cycle)."""
from migen import Array, C, Cat, Constant, If, Module, Mux, Signal

from fisrig_hw.engine.pattern import CRC_SEED, KIND_LFSR, KIND_STAMP, SECTOR_DWORDS, stamp_random_dwords, xorshift32
from fisrig_hw.lfsr_tables import crc_step_map, linear_lookup

STATE = [("d", 20), ("lba", 48), ("s", 32), ("crc", 32)]   # a state's fields and widths
STATE_BITS = sum(w for _, w in STATE)


class PatternState:
    def __init__(self, name):
        for f, w in STATE:
            setattr(self, f, Signal(w, name=f"{name}_{f}"))

    def bits(self):
        return Cat(*[getattr(self, f) for f, _ in STATE])

    def eq_bits(self, v):
        out, at = [], 0
        for f, w in STATE:
            out.append(getattr(self, f).eq(v[at:at + w]))
            at += w
        return out

    def eq(self, other):
        return [getattr(self, f).eq(getattr(other, f)) for f, _ in STATE]


def seed(lba, word):
    """pattern.h's fisrig_pattern_seed as an expression."""
    raw = lba[:32] ^ (lba[32:48] << 16) ^ word ^ 0xA5A5A5A5
    return Mux(raw[:32] == 0, 1, raw[:32])


class PatternPair(Module):
    """kind (FISRIG_DATA_ZEROS, STAMP, LFSR), word (data_word), pct (compress_pct) and a state
    in `cur`: dw0 and dw1 are the dwords at cur.d and cur.d + 1, `nxt` the state after them
    (all combinational). `start(slba, t)` is the state at dword t's sector's start (t's
    state itself when t is a multiple of 128)."""

    def __init__(self):
        self.kind = Signal(3)
        self.word = Signal(32)
        self.pct = Signal(7)
        self.cur = PatternState("cur")
        self.nxt = PatternState("nxt")
        self.dw0, self.dw1 = Signal(32), Signal(32)

        # # #

        pct = Signal(7)
        random_n = Signal(7)
        self.comb += [
            pct.eq(Mux(self.pct > 100, 100, self.pct)),
            random_n.eq(Array(Constant(stamp_random_dwords(p), 7) for p in range(128))[self.pct]),
        ]
        mid = PatternState("mid")
        self._step(self.cur, mid, self.dw0, pct, random_n)
        self._step(mid, self.nxt, self.dw1, pct, random_n)

    def _step(self, a, b, out, pct, random_n):
        i = a.d[:7]   # the dword in its sector
        _, _, stepped, steps = xorshift32(a.s)
        in_random = Signal()
        crc_in, crc_next = Signal(32), Signal(32)
        last = i == SECTOR_DWORDS - 1
        self.comb += steps + [
            in_random.eq((i >= 3) & (i < 3 + random_n)),
            If(self.kind == KIND_LFSR,
                out.eq(stepped),
            ).Elif(self.kind == KIND_STAMP,
                If(i == 0, out.eq(a.lba[:32]))
                .Elif(i == 1, out.eq(Cat(a.lba[32:48], pct, C(0, 1), C(0x5A, 8))))
                .Elif(i == 2, out.eq(self.word))
                .Elif(last, out.eq(a.crc))
                .Elif(in_random, out.eq(stepped))
                .Else(out.eq(0)),
            ).Else(
                out.eq(0),
            ),
            crc_in.eq(a.crc ^ out),
            linear_lookup(crc_next, crc_in, 32, crc_step_map),
            b.d.eq(a.d + 1),
            If(last,
                b.lba.eq(a.lba + 1), b.s.eq(seed(a.lba + 1, self.word)), b.crc.eq(CRC_SEED),
            ).Else(
                b.lba.eq(a.lba),
                b.s.eq(Mux((self.kind == KIND_LFSR) | in_random, stepped, a.s)),
                b.crc.eq(crc_next),
            ),
        ]

    def start(self, slba, t, out: PatternState):
        """Statements: out = the state at the start of dword t's sector."""
        lba = Signal(48)
        return [
            lba.eq(slba + (t >> 7)),
            out.d.eq(t & ~(SECTOR_DWORDS - 1)), out.lba.eq(lba), out.s.eq(seed(lba, self.word)), out.crc.eq(CRC_SEED),
        ]


class SlotPattern:
    """What the engine tells a unit of the slot its TLP is for (its `decoded.slot`) and what
    the unit tells it back: the slot's data is generated (`on`: ZEROS, STAMP, LFSR, its
    kind, word and pct in `pair`, from LBA `slba`), the pattern's state where the slot's
    last TLP left it (`saved`, when `saved_ok`), and, at a TLP's end (`save`), where this
    one leaves it (`save_state`): the completer and the controller's writes each have one."""

    def __init__(self):
        self.pair = PatternPair()
        self.on = Signal()
        self.slba = Signal(48)
        self.saved = PatternState("saved")
        self.saved_ok = Signal()
        self.save = Signal()
        self.save_state = PatternState("save")
