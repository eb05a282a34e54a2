"""The tick gate (fisrig_hw.soc.tick_gate): a read of WAIT returns on the tick the CPU asked for,
whatever cycle it began on, and says how late a read was that began after it."""
from migen import *

from litex.soc.interconnect import wishbone

from fisrig_hw.soc.tick_gate import TARGET_HI, TARGET_LO, WAIT, TickGate


class TB(Module):
    def __init__(self):
        self.now = Signal(64)
        self.sync += self.now.eq(self.now + 1)
        self.submodules.gate = TickGate(self.now)


def gate_read_at(start_cycle, target):
    """Writes the target, idles until start_cycle, reads WAIT: (its value, `now` when the ack came)."""
    tb = TB()
    out = {}

    def cpu():
        bus = tb.gate.bus
        yield from bus.write(TARGET_LO, target & 0xFFFFFFFF)
        yield from bus.write(TARGET_HI, target >> 32)
        while (yield tb.now) < start_cycle:
            yield
        yield bus.adr.eq(WAIT)
        yield bus.we.eq(0)
        yield bus.cyc.eq(1)
        yield bus.stb.eq(1)
        yield
        while not (yield bus.ack):
            yield
        out["value"], out["now"] = (yield bus.dat_r), (yield tb.now)
        yield bus.cyc.eq(0)
        yield bus.stb.eq(0)
        yield

    run_simulation(tb, cpu())
    return out["value"], out["now"]


def test_a_read_begun_early_returns_on_the_target_tick_whatever_cycle_it_began():
    seen = {gate_read_at(start, 200) for start in (20, 21, 57, 150, 198)}
    assert seen == {(0, 201)}, seen  # the ack is seen the cycle after `now` reached 200


def test_a_read_begun_late_returns_at_once_with_how_late():
    value, at = gate_read_at(300, 200)
    assert 100 <= value <= 102 and at - 300 <= 3, (value, at)


def test_the_target_reads_back_and_holds_64_bits():
    tb = TB()
    got = []

    def cpu():
        yield from tb.gate.bus.write(TARGET_LO, 0x89ABCDEF)
        yield from tb.gate.bus.write(TARGET_HI, 0x1234567)
        got.append((yield from tb.gate.bus.read(TARGET_LO)))
        got.append((yield from tb.gate.bus.read(TARGET_HI)))
        got.append((yield tb.gate.target))

    run_simulation(tb, cpu())
    assert got == [0x89ABCDEF, 0x1234567, 0x123456789ABCDEF]
