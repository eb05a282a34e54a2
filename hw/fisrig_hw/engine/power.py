"""The power controller: the drive's rails on or off from the program or a CSR, or off a
set number of ticks after the Nth FIS of a kind crossed the wire (wire_tap.TapEvents; at least
one tick after it), or after the arming itself (FISRIG_EVENT_TIME: a cut at a time), all on
the engine's timestamp counter.

`rails` is the power state the program asked for, switched at the edge (a cut, POWER OFF,
POWER ON); `pins` are the drive's power pins (engine_if.h enum fisrig_power_pin: 3.3 V,
5 V, 12 V and SATA 3.3's P3 Power Disable), each switched its own staged offset after the
edge (FISRIG_POWER_STAGE), as a hot-plug connector or a power module stages them. In
simulation `pins` power the simulated drive (sim/device pins.h); on a board they drive
load switches and the P3 line. The cut fires on the counter itself, so its place relative
to the trigger is exact (rtl.power_cut_jitter_ticks measures that it stays so); a pin with
offset k switches k ticks after the edge, as a pin at offset 0 switches with it."""

from migen import *

from fisrig_hw.descriptor import EVENT_TIME, PIN_P3, PINS, PINS_ON


class PowerController(Module):
    def __init__(self):
        self.now = Signal(64)
        self.rails = Signal(reset=1)
        self.pins = Signal(PINS, reset=PINS_ON)
        # POWER STAGE: how a pin takes the next edges (engine_if.h FISRIG_POWER_STAGE).
        self.stage, self.stage_pin, self.stage_used = Signal(), Signal(2), Signal()
        self.stage_off, self.stage_on = Signal(32), Signal(32)
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

        # The pins: each follows the edge its staged offset later; an edge drops what the
        # one before still had to do. Until staged, the rails switch with the edge, P3 never.
        used = Signal(PINS, reset=PINS_ON)
        off_at = Array(Signal(32) for _ in range(PINS))
        on_at = Array(Signal(32) for _ in range(PINS))
        pending = Signal(PINS)
        going_off = Signal()
        edge_t = Signal(64)
        down = self.off | self.cut
        self.sync += If(self.stage,
            used.eq(Mux(self.stage_used, used | (1 << self.stage_pin), used & ~(1 << self.stage_pin))),
            off_at[self.stage_pin].eq(self.stage_off),
            on_at[self.stage_pin].eq(self.stage_on),
        )
        self.sync += If(down | self.on,
            edge_t.eq(self.now), going_off.eq(down),
        )
        for i in range(PINS):
            # A rail is on (1) when not going off; P3 is asserted (1) when going off.
            off_value, on_value = (1, 0) if i == PIN_P3 else (0, 1)
            self.sync += If(down | self.on,
                If(used[i] & (Mux(down, off_at[i], on_at[i]) == 0),
                    self.pins[i].eq(Mux(down, off_value, on_value)), pending[i].eq(0),
                ).Else(
                    pending[i].eq(used[i]),
                )
            ).Elif(pending[i],
                # Nested, so that the simulation subtracts only while a pin waits (an
                # always-on 64-bit difference cost rtl.sim_host_instructions_per_cycle).
                If(self.now - edge_t >= Mux(going_off, off_at[i], on_at[i]),
                    self.pins[i].eq(Mux(going_off, off_value, on_value)), pending[i].eq(0),
                )
            )


def wire_engine(power, engine, tap_events):
    """What ties the power controller to the engine and the wire's FIS events, wherever the
    engine is built (the rig core, the engine's bench): the events counted, the cut and its
    trigger back to the engine, the pins' staging. Rails off, on and the arming are each
    builder's: the rig core's CSRs take part in them."""
    return [
        power.event.eq(tap_events.event), power.event_kind.eq(tap_events.kind),
        power.event_time.eq(tap_events.time),
        engine.power_cut.eq(power.cut), engine.power_trigger.eq(power.trigger_time),
        power.stage.eq(engine.power_stage), power.stage_pin.eq(engine.power_stage_pin),
        power.stage_used.eq(engine.power_stage_used), power.stage_off.eq(engine.power_stage_off),
        power.stage_on.eq(engine.power_stage_on),
    ]
