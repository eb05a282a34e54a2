"""The table form of the CRC and scrambler steps (fisrig_hw.lfsr_tables) against LiteSATA's
own modules, simulated side by side with Migen. Both forms are linear over GF(2), so
agreeing on inputs that span the input space (the unit vectors, then random words and a
scrambler's run of contexts) is agreeing everywhere."""
import random

from litesata.core.link import CRCEngine, LiteSATACRC, Scrambler
from migen import Module, run_simulation

from fisrig_hw.lfsr_tables import crc_step_map, scrambler_step_map, tabulate_link
from fisrig_hw.phy.link import RigSATALink
from fisrig_hw.phy.sim_phy import SimSATAPHY


class SideBySide(Module):
    def __init__(self, make):
        self.submodules.ref = make()
        holder = Module()
        holder.submodules.dut = self.dut = make()
        self.submodules.holder = holder
        assert tabulate_link(holder) == 1


def test_crc_table_step_is_litesatas():
    rng = random.Random(3)
    words = [1 << i for i in range(32)] + [rng.getrandbits(32) for _ in range(300)]
    top = SideBySide(LiteSATACRC)
    seen = []

    def bench():
        yield top.ref.ce.eq(1)
        yield top.dut.ce.eq(1)
        for w in words:
            yield top.ref.data.eq(w)
            yield top.dut.data.eq(w)
            yield
            seen.append(((yield top.ref.value), (yield top.dut.value)))

    run_simulation(top, bench())
    assert all(ref == dut for ref, dut in seen), next((i, r, d) for i, (r, d) in enumerate(seen) if r != d)
    # And the map itself: the register (sampled before each word goes in) starts at the
    # specification's seed and steps by crc_step_map.
    assert seen[0][0] == 0x52325032
    assert seen[1][0] == crc_step_map(0x52325032 ^ words[0])


def test_scrambler_table_step_is_litesatas():
    top = SideBySide(Scrambler)
    seen = []

    def bench():
        yield top.ref.ce.eq(1)
        yield top.dut.ce.eq(1)
        yield
        for _ in range(500):
            seen.append(((yield top.ref.value), (yield top.dut.value)))
            yield

    run_simulation(top, bench())
    assert [r for r, _ in seen] == [d for _, d in seen]
    # The first output is the map of the specification's reset context.
    assert seen[0][0] == scrambler_step_map(0xF0F6)


def test_rig_link_steps_every_crc_and_scrambler_by_tables():
    """RigSATALink's two CRCs and two scramblers step by tables: none is left with its
    XOR trees (one statement per output bit)."""
    found = []

    def walk(module):
        for _, sub in module._submodules:
            if isinstance(sub, (CRCEngine, Scrambler)):
                found.append(len(sub._fragment.comb))
            walk(sub)

    walk(RigSATALink(SimSATAPHY()))
    assert found == [2, 2, 2, 2]
