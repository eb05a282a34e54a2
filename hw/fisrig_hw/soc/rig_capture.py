"""CSRs through which the host (over the bridge) reads the analyzer's capture ring
(engine/capture.py) once its window has passed: its state, its trigger's tick, the window's
depths as armed, and each entry by index."""

from functools import reduce
from operator import add

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRField, CSRStatus, CSRStorage

from fisrig_hw.engine.capture import ENTRY_BITS


class RigCapture(LiteXModule):
    def __init__(self, capture, compressors):
        self.state = CSRStatus(fields=[
            CSRField("armed", description="Armed by a CAPTURE descriptor."),
            CSRField("fired", description="Its trigger has fired."),
            CSRField("done", description="Its window has passed: the ring is frozen until the next arming."),
            CSRField("wrapped", description="The ring overwrote its oldest entries."),
        ])
        self.count = CSRStatus(32, description="Entries the ring holds, from index 0 (the oldest once wrapped "
                                               "is at the write pointer: entries are read in ring order and "
                                               "sorted by tick).")
        self.trigger_tick = CSRStatus(64, description="The tick the trigger fired at.")
        self.before = CSRStatus(32, description="The pre-trigger depth as armed (ticks).")
        self.after = CSRStatus(32, description="The post-trigger depth as armed (ticks).")
        self.trigger = CSRStatus(16, description="The trigger (capture.h enum fisrig_capture_trigger) and its "
                                                 "value (bits 15:8), as armed.")
        self.dropped = CSRStatus(32, description="Entries the compressors could not hand on at once and "
                                                 "dropped, both directions, since the SoC started (never "
                                                 "stalling the wire).")
        self.rd_index = CSRStorage(len(capture.rd_index), description="The entry rd_data shows.")
        self.rd_data = CSRStatus(ENTRY_BITS, description="The entry at rd_index (engine/capture.py's "
                                                         "entry_layout, tick in the lowest bits).")
        self.comb += [
            self.state.fields.armed.eq(capture.armed), self.state.fields.fired.eq(capture.fired),
            self.state.fields.done.eq(capture.done), self.state.fields.wrapped.eq(capture.wrapped),
            self.count.status.eq(capture.count), self.trigger_tick.status.eq(capture.trigger_tick),
            self.before.status.eq(capture.armed_before), self.after.status.eq(capture.armed_after),
            self.trigger.status.eq(Cat(capture.armed_trigger, Constant(0, 4), capture.armed_value)),
            capture.rd_index.eq(self.rd_index.storage), self.rd_data.status.eq(capture.rd_data),
            self.dropped.status.eq(reduce(add, [c.dropped for c in compressors])),
        ]
