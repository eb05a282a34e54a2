"""The engine's slots: a command's slot is its command identifier on the link. Each slot has
a state (FREE, ISSUED: its SQE on a queue, no CQE yet; CQE_IN: its CQE taken, its MSI-X
awaited; ENDING: its record waiting to go) and a generation, bumped as a command takes the
slot. What each machine learns of a command goes into a field memory of its own, one writer
each, tagged with the generation it was written in: a value of an earlier command reads as
none, so nothing is cleared between commands."""
from migen import Array, Cat, If, Memory, Signal

from litex.gen import LiteXModule

FREE, ISSUED, CQE_IN, ENDING = range(4)
GEN_BITS = 4


class SlotField(LiteXModule):
    """A value per slot, written by one machine (`write(slot, value)` statements, comb) and
    read by any (`read(slot)`: a combinational port); `valid(slot)` says it was written for
    the slot's command under way."""

    def __init__(self, table, width: int):
        self.table = table
        self.width = width
        self.mem = Memory(width + GEN_BITS, table.slots)
        self.specials += self.mem
        self.wp = self.mem.get_port(write_capable=True, async_read=True)
        self.specials += self.wp
        self._reads = []

    def write(self, slot, value):
        return [self.wp.adr.eq(slot), self.wp.dat_w.eq(Cat(value, self.table.gen[slot])), self.wp.we.eq(1)]

    def read(self, slot):
        """(value, valid) at `slot`: value 0 when it was written for an earlier command."""
        p = self.mem.get_port(async_read=True)
        self.specials += p
        value, ok = Signal(self.width), Signal()
        self.comb += [
            p.adr.eq(slot),
            ok.eq(p.dat_r[self.width:] == self.table.gen[slot]),
            value.eq(0),
            If(ok, value.eq(p.dat_r[:self.width])),
        ]
        return value, ok


class SlotTable(LiteXModule):
    def __init__(self, slots: int):
        self.slots = slots
        self.state = Array(Signal(2, name=f"slot_state{i}") for i in range(slots))
        self.gen = Array(Signal(GEN_BITS, name=f"slot_gen{i}") for i in range(slots))
        # The lowest free slot, and whether there is one.
        self.free_slot = Signal(max=max(slots, 2))
        self.any_free = Signal()
        free = Cat(*[s == FREE for s in self.state])
        pick = self.free_slot.eq(0)
        for i in reversed(range(slots)):
            pick = If(free[i], self.free_slot.eq(i)).Else(pick)
        self.comb += [self.any_free.eq(free != 0), pick]
        self._moves = []

    def move(self, when, slot, to):
        """A state change: on the cycles `when` is high, slot `slot` goes to `to`. Moves
        declared later win a cycle they share a slot in."""
        self._moves.append((when, slot, to))

    def bump(self, when, slot):
        """A new command takes `slot`: its generation moves on."""
        self.sync += If(when, self.gen[slot].eq(self.gen[slot] + 1))

    def do_finalize(self):
        for i in range(self.slots):
            stmts = []
            for when, slot, to in self._moves:
                stmts.append(If(when & (slot == i), self.state[i].eq(to)))
            self.sync += stmts
