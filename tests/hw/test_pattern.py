"""The gateware pattern generator produces, dword for dword, pattern.h's sectors."""

import pytest
from migen import run_simulation

from fisrig_hw.engine.pattern import PatternGenerator, KIND_LFSR, KIND_STAMP, KIND_ZEROS


def generate(kind, lba, word, pct, sectors, stall_every=0):
    dut = PatternGenerator()
    out = []

    def bench():
        yield dut.kind.eq(kind)
        yield dut.lba.eq(lba)
        yield dut.word.eq(word)
        yield dut.pct.eq(pct)
        yield dut.load.eq(1)
        yield
        yield dut.load.eq(0)
        n = 0
        while len(out) < sectors * 128:
            n += 1
            stall = bool(stall_every) and n % stall_every == 0
            yield dut.advance.eq(0 if stall else 1)
            yield
            # After a yield the signals show this cycle; the edge that ends it steps the
            # generator if advance is high, so the dword read now is the one consumed.
            if (yield dut.advance):
                out.append((yield dut.data))
    run_simulation(dut, bench())
    return out


@pytest.mark.parametrize("kind,lba,word,pct", [
    (KIND_STAMP, 0, 1, 100),
    (KIND_STAMP, 0x123456789AB, 0xDEADBEEF, 37),
    (KIND_STAMP, 5, 7, 0),
    (KIND_LFSR, 1000, 42, 0),
    (KIND_LFSR, 0xFFFFFFFF, 0x5A5A5A5A, 0),  # the seed's zero fix-up is near here
    (KIND_ZEROS, 9, 9, 50),
])
def test_generator_matches_pattern_h(pattern_reference, kind, lba, word, pct):
    got = generate(kind, lba, word, pct, 3, stall_every=7)
    assert got == pattern_reference(kind, lba, word, pct, 3)


@pytest.mark.parametrize("kind,lba,word,pct", [(3, 77, 5, 60), (4, 1 << 40, 3, 0), (2, 1, 1, 1)])
def test_python_reference_matches_pattern_h(pattern_reference, kind, lba, word, pct):
    from pattern_ref import sector
    assert sector(kind, lba, word, pct) + sector(kind, lba + 1, word, pct) == \
        pattern_reference(kind, lba, word, pct, 2)
