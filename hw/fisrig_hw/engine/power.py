"""The power controller: the drive's rails on or off from the program or a CSR, or off a
set number of ticks after the Nth FIS of a kind crossed the wire (wire_tap.TapEvents; at least
one tick after it), or after the arming itself (FISRIG_EVENT_TIME: a cut at a time), all on
the engine's timestamp counter.

In simulation `rails` powers the simulated drive; on a board it drives a GPIO to a load
switch. The cut fires on the counter itself, so its place relative to the trigger is exact
(rtl.power_cut_jitter_ticks measures that it stays so)."""

from migen import *

from fisrig_hw.descriptor import EVENT_TIME


class PowerController(Module):
    def __init__(self):
        self.now = Signal(64)
        self.rails = Signal(reset=1)
        # From the engine: POWER descriptors and the FIS events it sees.
        self.off = Signal()
        self.on = Signal()
        self.arm = Signal()
        self.arm_event = Signal(3)
        self.arm_count = Signal(16)
        self.arm_delay = Signal(32)
        self.event = Signal()          # strobe: a FIS of kind event_kind
        self.event_kind = Signal(3)
        self.event_time = Signal(64)   # the tick it crossed the wire (at or before now)
        # To the engine: the rails went off on a trigger (an event record at cut_time).
        self.cut = Signal()
        self.cut_time = Signal(64)
        self.armed = Signal()
        self.trigger_time = Signal(64)  # when the counted FIS happened

        # # #

        left = Signal(16)
        event = Signal(3)
        delay = Signal(32)
        deadline = Signal(64)
        counting = Signal()
        self.comb += self.cut.eq(self.armed & ~counting & (self.now >= deadline))
        self.sync += [
            If(self.off | self.cut,
                self.rails.eq(0),
            ).Elif(self.on,
                self.rails.eq(1)
            ),
            If(self.cut,
                self.armed.eq(0),
                self.cut_time.eq(self.now),
            ),
            If(self.arm,
                self.armed.eq(1),
                event.eq(self.arm_event),
                left.eq(Mux(self.arm_count == 0, 1, self.arm_count)),
                delay.eq(self.arm_delay),
                If(self.arm_event == EVENT_TIME,  # no FIS to wait for: the delay runs now
                    counting.eq(0),
                    self.trigger_time.eq(self.now),
                    deadline.eq(self.now + self.arm_delay),
                ).Else(
                    counting.eq(1),
                ),
            ).Elif(self.armed & counting & self.event & (self.event_kind == event),
                left.eq(left - 1),
                If(left == 1,
                    counting.eq(0),
                    self.trigger_time.eq(self.event_time),
                    deadline.eq(self.event_time + delay),
                )
            ),
            If(self.off | self.on, self.armed.eq(0)),
        ]
