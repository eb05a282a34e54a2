"""The engine's slots: a command's slot is its command identifier on the link. Each slot has
a state (FREE, ISSUED: its SQE on a queue, no CQE yet; CQE_IN: its CQE taken, its MSI-X
awaited; ENDING: its record waiting to go). What each machine learns of a command goes into
a field memory of its own, one writer each, with a bit a slot that says it was written for
the command under way: the bits of a slot are cleared as a command takes it, so a value an
earlier command left reads as none, and nothing else is cleared between commands. (A
generation number kept beside each value instead wrapped: a slot's 16th command read its
1st one's data count as its own.)"""
from migen import Array, Cat, If, Memory, Mux, Signal

from litex.gen import LiteXModule

FREE, ISSUED, CQE_IN, ENDING = range(4)


class SlotField(LiteXModule):
    """A value per slot, written by one machine (`write(slot, value)` statements, comb) and
    read by any (`read(slot)`: a combinational port); its `ok` says it was written for the
    slot's command under way."""

    def __init__(self, table, width: int):
        self.width = width
        self.mem = Memory(width, table.slots)
        self.specials += self.mem
        self.wp = self.mem.get_port(write_capable=True, async_read=True)
        self.specials += self.wp
        self.written = Signal(table.slots)
        one = Signal(table.slots, reset=1, reset_less=True)
        self.sync += self.written.eq((self.written & ~Mux(table.taking, one << table.taken, 0)) |
                                     Mux(self.wp.we, one << self.wp.adr, 0))

    def write(self, slot, value):
        return [self.wp.adr.eq(slot), self.wp.dat_w.eq(value), self.wp.we.eq(1)]

    def read(self, slot):
        """(value, ok) at `slot`: value 0 when nothing was written for its command."""
        p = self.mem.get_port(async_read=True)
        self.specials += p
        value, ok = Signal(self.width), Signal()
        self.comb += [
            p.adr.eq(slot),
            ok.eq((self.written >> slot)[0]),
            value.eq(0),
            If(ok, value.eq(p.dat_r)),
        ]
        return value, ok



class SlotTable(LiteXModule):
    def __init__(self, slots: int):
        self.slots = slots
        self.state = Array(Signal(2, name=f"slot_state{i}") for i in range(slots))
        # A command takes slot `taken` on the cycles `taking` is high (take()).
        self.taking = Signal()
        self.taken = Signal(max=max(slots, 2))
        # The lowest free slot, and whether there is one.
        self.free_slot = Signal(max=max(slots, 2))
        self.any_free = Signal()
        free = Cat(*[s == FREE for s in self.state])
        # Statements in order, the last that applies wins: the lowest free slot (not one
        # If nested in the next: 128 deep is past Python's recursion in LiteX's namer).
        self.comb += [self.any_free.eq(free != 0), self.free_slot.eq(0)]
        self.comb += [If(free[i], self.free_slot.eq(i)) for i in reversed(range(slots))]
        self._moves = []

    def move(self, when, slot, to):
        """A state change: on the cycles `when` is high, slot `slot` goes to `to`. Moves
        declared later win a cycle they share a slot in."""
        self._moves.append((when, slot, to))

    def take(self, when, slot):
        """A new command takes `slot` (once, by the engine's intake): its fields read as none."""
        self.comb += [self.taking.eq(when), self.taken.eq(slot)]

    def do_finalize(self):
        for i in range(self.slots):
            stmts = []
            for when, slot, to in self._moves:
                stmts.append(If(when & (slot == i), self.state[i].eq(to)))
            self.sync += stmts
