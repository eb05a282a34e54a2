"""DirectFSM against Migen's FSM: the same state machine (NextValue and NextState under If
and Case, combinational outputs, ongoing()) built both ways and driven with the same random
inputs must give the same outputs and registers every cycle."""
import random

import pytest
from migen import Case, If, Module, Signal, run_simulation
from migen.genlib.fsm import FSM, NextState, NextValue

from fisrig_hw.direct_fsm import DirectFSM


class Machine(Module):
    def __init__(self, fsm_class, a, b):
        self.count = Signal(8)
        self.last = Signal(4)
        self.strobe = Signal()
        self.out = Signal(8)
        self.submodules.fsm = fsm = fsm_class(reset_state="IDLE")
        self.busy = ~fsm.ongoing("IDLE")
        fsm.act("IDLE",
            If(a,
                NextValue(self.count, 0),
                NextState("RUN")
            ).Elif(b,
                self.strobe.eq(1),
                NextState("PAUSE")
            )
        )
        fsm.act("RUN",
            self.out.eq(self.count),
            NextValue(self.count, self.count + 1),
            Case(self.count[:2], {
                0: NextValue(self.last, 1),
                1: [self.strobe.eq(b), NextValue(self.last, 2)],
                "default": NextValue(self.last, self.last + 3),
            }),
            If(b & (self.count > 5), NextState("IDLE"))
        )
        fsm.act("PAUSE",
            self.out.eq(0xAA),
            If(~b, NextValue(self.count, self.count - 1), NextState("IDLE"))
        )


def test_direct_fsm_behaves_as_migens():
    a, b = Signal(), Signal()
    top = Module()
    top.submodules.ref = ref = Machine(FSM, a, b)
    top.submodules.dut = dut = Machine(DirectFSM, a, b)
    rng = random.Random(9)
    trace = []

    def bench():
        for _ in range(2000):
            yield a.eq(rng.random() < 0.2)
            yield b.eq(rng.random() < 0.4)
            yield
            row = []
            for m in (ref, dut):
                for n in ("count", "last", "strobe", "out", "busy"):
                    row.append((yield getattr(m, n)))
            trace.append(row)

    run_simulation(top, bench())
    assert all(t[:5] == t[5:] for t in trace)
    assert len({t[0] for t in trace}) > 5  # the machine went through its states


def test_direct_fsm_refuses_next_state_signals():
    fsm = DirectFSM()
    fsm.act("A", NextState("B"))
    with pytest.raises(NotImplementedError):
        fsm.before_entering("B")
