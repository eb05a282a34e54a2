"""Migen's FSM with NextValue and NextState lowered straight into the clocked block.

Migen lowers each NextValue into a combinational pair (value, enable) that defaults to zero,
and a clocked `if (enable) reg <= value`. The hardware is the same either way, but
Verilator evaluates every default and every enable test on every cycle: for the engine's
state machine, some 200 assignments and 100 tests a cycle whatever state it is in. Here
the clocked block gets its own `case (state)` holding only the NextValue and NextState
statements, under the same conditions, so a cycle runs the current state's branch alone;
the combinational `case (state)` keeps only the combinational statements.

before_entering/leaving and after_entering/leaving need the next state as a signal and
are not offered."""

from migen import Case, If, Signal
from migen.fhdl.structure import _Statement
from migen.genlib.fsm import FSM, NextState, NextValue


def _flatten(statements):
    if isinstance(statements, (list, tuple)):
        for s in statements:
            yield from _flatten(s)
    else:
        yield statements


class DirectFSM(FSM):
    def _get_signal(self, d, state):
        raise NotImplementedError("DirectFSM has no next-state signal; use FSM")

    def do_finalize(self):
        nstates = len(self.actions)
        self.encoding = {s: n for n, s in enumerate(self.actions.keys())}
        self.decoding = {n: s for s, n in self.encoding.items()}
        self.state = Signal(max=nstates, reset=self.encoding[self.reset_state])
        self.state._enumeration = self.decoding
        comb_cases, sync_cases = {}, {}
        for state, actions in self.actions.items():
            comb_cases[self.encoding[state]] = self._split(actions, clocked=False)
            sync_cases[self.encoding[state]] = self._split(actions, clocked=True)
        default = self.encoding[self.reset_state]
        self.comb += Case(self.state, comb_cases).makedefault(default)
        self.sync += Case(self.state, sync_cases).makedefault(default)

    def _split(self, statements, clocked):
        """The clocked (NextValue, NextState) or the combinational part of `statements`,
        under the same If and Case conditions; branches left empty are dropped."""
        out = []
        for s in _flatten(statements):
            if isinstance(s, If):
                t, f = self._split(s.t, clocked), self._split(s.f, clocked)
                if t or f:
                    branch = If(s.cond, *t)
                    branch.f = f
                    out.append(branch)
            elif isinstance(s, Case):
                cases = {k: self._split(v, clocked) for k, v in s.cases.items()}
                if any(cases.values()):
                    c = Case(s.test, {})
                    c.cases = cases
                    out.append(c)
            elif isinstance(s, NextState):
                if clocked:
                    out.append(self.state.eq(self.encoding[self.state_aliases.get(s.state, s.state)]))
            elif isinstance(s, NextValue):
                if clocked:
                    out.append(s.target.eq(s.value))
            elif isinstance(s, _Statement):
                if not clocked:
                    out.append(s)
            else:
                raise TypeError("DirectFSM: unexpected statement {!r}".format(s))
        return out
