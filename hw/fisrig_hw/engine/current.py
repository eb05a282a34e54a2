"""The current sampler: the drive's supply current as a power module samples it (engine_if.h
FISRIG_POWER_SAMPLE), one sample every `period` ticks of the engine's counter from the
POWER SAMPLE descriptor's own tick, FISRIG_CURRENT_SAMPLES to a record (struct
fisrig_current_record) that the record writer sends as an event.

The samples come from `pin`, the current sense's last conversion (in simulation the
drive's current pins, sim/device pins.h; on a board an ADC's). Two buffers: one fills while
the other waits for the record writer, so a ring that stays full for a record's time (30
samples, 120 us at 4 us) costs nothing; one full for longer drops the buffer that has
nowhere to go, counts its samples in `lost`, and the next record says how many it dropped.
"""

from migen import *

from fisrig_hw.descriptor import CURRENT_PERIOD_TICKS, CURRENT_SAMPLES


class CurrentSampler(Module):
    def __init__(self, now):
        self.pin = Signal(16)
        # From the sequencer: a POWER SAMPLE descriptor taken this cycle.
        self.start, self.start_on, self.start_period = Signal(), Signal(), Signal(32)
        # To the record writer: a record waiting, what it says, and `taken` once written.
        self.waiting = Signal()
        self.out_ma = Signal(16 * CURRENT_SAMPLES)
        self.out_count = Signal(max=CURRENT_SAMPLES + 1)
        self.out_period = Signal(32)
        self.out_first = Signal(64)
        self.out_dropped = Signal(8)  # records dropped before this one (engine_if.h)
        self.taken = Signal()
        self.lost = Signal(32)  # samples dropped: both buffers full

        # # #

        on = Signal()
        period = Signal(32)
        left = Signal(32)   # cycles to the next sample
        count = Signal(max=CURRENT_SAMPLES + 1)
        first = Signal(64)
        fill = Array(Signal(16, name=f"ma{i}") for i in range(CURRENT_SAMPLES))
        sample = Signal()   # a sample is taken this cycle
        hand_over = Signal()  # the filling buffer goes to the writer's side (or is dropped)
        full = Signal()
        dropped = Signal(8)

        self.comb += [
            sample.eq(self.start & self.start_on | on & ~self.start & (left == 0)),
            full.eq(count == CURRENT_SAMPLES),
            # A stop or restart hands over what was taken; a buffer hands over once full.
            hand_over.eq(self.start & (count != 0) | full),
        ]
        self.sync += [
            If(self.taken, self.waiting.eq(0)),
            If(hand_over,
                If(~self.waiting | self.taken,
                    self.waiting.eq(1),
                    self.out_ma.eq(Cat(*fill)), self.out_count.eq(count),
                    self.out_period.eq(period), self.out_first.eq(first),
                    self.out_dropped.eq(dropped), dropped.eq(0),
                ).Else(
                    self.lost.eq(self.lost + count),
                    If(dropped != 255, dropped.eq(dropped + 1)),
                ),
            ),
            If(self.start,
                on.eq(self.start_on),
                period.eq(Mux(self.start_period == 0, CURRENT_PERIOD_TICKS, self.start_period)),
                left.eq(Mux(self.start_period == 0, CURRENT_PERIOD_TICKS, self.start_period) - 1),
                count.eq(self.start_on),
            ).Elif(on,
                If(left == 0,
                    left.eq(period - 1),
                ).Else(
                    left.eq(left - 1),
                ),
                # A buffer just handed over was full: this cycle's sample, if any, opens the
                # next one (a period of 1 samples every cycle).
                If(hand_over,
                    count.eq(sample),
                ).Elif(sample,
                    count.eq(count + 1),
                ),
            ),
            If(sample,
                fill[Mux(hand_over, 0, count)].eq(self.pin),
                If(hand_over | (count == 0), first.eq(now)),
            ),
        ]
