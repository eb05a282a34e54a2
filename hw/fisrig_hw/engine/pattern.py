"""The data pattern generator: one dword per cycle of ZEROS, STAMP or LFSR sectors, exactly
as firmware/core/include/fisrig/pattern.h defines them. The same module feeds Data FISes a
write sends and, as the checker's reference, compares what a read brings."""

from migen import *

from fisrig_hw.lfsr_tables import crc_step_map, linear_lookup


KIND_ZEROS, KIND_STAMP, KIND_LFSR = 2, 3, 4
SECTOR_DWORDS = 128
STAMP_RANDOM_MAX = 124
CRC_SEED = 0x52325032


def xorshift32(x):
    """xorshift32 as logic (three shift-xors, one cycle)."""
    a = Signal(32)
    b = Signal(32)
    c = Signal(32)
    return a, b, c, [a.eq(x ^ (x << 13)), b.eq(a ^ (a >> 17)), c.eq(b ^ (b << 5))]


def stamp_random_dwords(pct):
    pct = min(pct, 100)
    return (STAMP_RANDOM_MAX * pct + 99) // 100


class PatternGenerator(Module):
    """Load with (kind, lba, word, pct) on `load`; `data` is the current dword, `advance`
    steps to the next one (next sector, next LBA at the end of one). `sector_end` is high on
    a sector's last dword."""

    def __init__(self):
        self.load = Signal()
        self.kind = Signal(3)
        self.lba = Signal(48)
        self.word = Signal(32)
        self.pct = Signal(7)

        self.advance = Signal()
        self.data = Signal(32)
        self.sector_end = Signal()

        # # #

        kind = Signal(3)
        lba = Signal(48)
        word = Signal(32)
        pct = Signal(7)
        random_n = Signal(7)
        idx = Signal(7)
        state = Signal(32)
        crc = Signal(32, reset=CRC_SEED)

        # Seed of a sector (pattern.h's fisrig_pattern_seed).
        def seed(lba_v, word_v, out):
            raw = Signal(32)
            return [
                raw.eq(lba_v[:32] ^ (lba_v[32:48] << 16) ^ word_v ^ 0xA5A5A5A5),
                out.eq(Mux(raw == 0, 1, raw)),
            ]

        load_seed = Signal(32)
        next_seed = Signal(32)
        next_lba = Signal(48)
        self.comb += next_lba.eq(lba + 1)
        self.comb += seed(self.lba, self.word, load_seed)
        self.comb += seed(next_lba, word, next_seed)

        _, _, stepped, steps = xorshift32(state)
        self.comb += steps

        random_table = Array(Constant(stamp_random_dwords(p), 7) for p in range(128))

        crc_in, crc_next = Signal(32), Signal(32)
        self.comb += [crc_in.eq(crc ^ self.data), linear_lookup(crc_next, crc_in, 32, crc_step_map)]

        in_random = Signal()
        self.comb += [
            in_random.eq((idx >= 3) & (idx < 3 + random_n)),
            self.sector_end.eq(idx == SECTOR_DWORDS - 1),
            If(kind == KIND_LFSR,
                self.data.eq(stepped),
            ).Elif(kind == KIND_STAMP,
                Case(idx, {
                    0: self.data.eq(lba[:32]),
                    1: self.data.eq(Cat(lba[32:48], pct, C(0, 1), C(0x5A, 8))),
                    2: self.data.eq(word),
                    SECTOR_DWORDS - 1: self.data.eq(crc),
                    "default": self.data.eq(Mux(in_random, stepped, 0)),
                })
            ).Else(
                self.data.eq(0)
            )
        ]

        self.sync += [
            If(self.load,
                kind.eq(self.kind),
                lba.eq(self.lba),
                word.eq(self.word),
                pct.eq(Mux(self.pct > 100, 100, self.pct)),
                random_n.eq(random_table[self.pct]),
                idx.eq(0),
                state.eq(load_seed),
                crc.eq(CRC_SEED),
            ).Elif(self.advance,
                If(self.sector_end,
                    idx.eq(0),
                    lba.eq(next_lba),
                    state.eq(next_seed),
                    crc.eq(CRC_SEED),
                ).Else(
                    idx.eq(idx + 1),
                    crc.eq(crc_next),
                    If((kind == KIND_LFSR) | in_random, state.eq(stepped)),
                )
            )
        ]
