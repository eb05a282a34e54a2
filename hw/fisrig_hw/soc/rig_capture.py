"""The analyzer's capture ring (engine/capture.py) as the host reads it over the bridge while
it holds a window, as it drains the record ring: CSRs for its state, its trigger's tick, the
window's depths as armed and the release that lets the capture go on (RigCapture), and the
entries themselves on a Wishbone slave of the bridge's own (RingBus), read in bursts."""

from functools import reduce
from operator import add

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import wishbone
from litex.soc.interconnect.csr import CSRField, CSRStatus, CSRStorage

from fisrig_hw.engine.capture import ENTRY_BITS

# The ring's entries on the bridge's own port (rig_soc.add_rig), ENTRY_WORDS words an entry
# from RING_BASE (its ENTRY_BITS in the first words, the tick in the lowest bits), in the
# IO region after the tick gate: the host's, not on the SoC's bus.
RING_BASE = 0x9200_0000
ENTRY_WORDS = 16

# Where RigCapture's CSRs are on every rig SoC: the last of LiteX's 32 CSR locations of 0x800
# bytes (its defaults) from the CSR region's base, so that a host without the SoC's csr.json
# (a board's: fisrig.targets.rig.board_run) finds them; rig_soc.add_rig puts them there.
CSR_REGION, CSR_LOCATIONS, CSR_PAGING = 0xF000_0000, 32, 0x800
CSR_BASE = CSR_REGION + (CSR_LOCATIONS - 1) * CSR_PAGING


class RigCapture(LiteXModule):
    def __init__(self, capture, compressors):
        self.state = CSRStatus(fields=[
            CSRField("armed", description="Armed by a CAPTURE descriptor."),
            CSRField("fired", description="Its trigger has fired."),
            CSRField("done", description="Its window has passed: the ring is frozen until the next arming."),
            CSRField("wrapped", description="The ring overwrote its oldest entries."),
            CSRField("holding", description="A window is held for the host: read it, then write `release`."),
            CSRField("cut", description="The window ended before its end (a STOP, or a new arming)."),
            CSRField("late", description="The window could start only at a release (`armed_at`): what "
                                         "came between its arming and then is not in the ring."),
            CSRField("pending", description="An arming waits for the release."),
        ])
        self.release = CSRStorage(description="Written once the held window is read: the capture goes on "
                                              "(the pending arming, or the arming's next window) or ends.")
        self.armed_at = CSRStatus(64, description="The tick the window could start at: its arming, or the "
                                                  "release it waited for.")
        self.missed = CSRStatus(32, description="Triggers that came while this window was held: not looked for then.")
        self.count = CSRStatus(32, description="Entries the ring holds, from index 0 at RING_BASE (the oldest "
                                               "once wrapped is at the write pointer: entries are read in "
                                               "ring order and sorted by tick).")
        self.trigger_tick = CSRStatus(64, description="The tick the trigger fired at.")
        self.before = CSRStatus(32, description="The pre-trigger depth as armed (ticks).")
        self.after = CSRStatus(32, description="The post-trigger depth as armed (ticks).")
        self.trigger = CSRStatus(16, description="The trigger (capture.h enum fisrig_capture_trigger) and its "
                                                 "value (bits 15:8), as armed.")
        self.dropped = CSRStatus(32, description="Entries the compressors could not hand on at once and "
                                                 "dropped, both directions, since the SoC started (never "
                                                 "stalling the wire).")
        self.depth = CSRStatus(32, reset=capture.depth,
                               description="The ring's entries: nonzero says the SoC has a capture (a CSR "
                                           "location with none reads 0).")
        self.write_index = CSRStatus(32, description="The ring's index the next entry goes to: the newest is the one "
                                              "before (the host reads a window back from it).")
        self.comb += [
            self.state.fields.armed.eq(capture.armed), self.state.fields.fired.eq(capture.fired),
            self.state.fields.done.eq(capture.done), self.state.fields.wrapped.eq(capture.wrapped),
            self.state.fields.holding.eq(capture.holding), self.state.fields.cut.eq(capture.cut),
            self.state.fields.late.eq(capture.late), self.state.fields.pending.eq(capture.pending),
            capture.release.eq(self.release.re),
            self.armed_at.status.eq(capture.armed_at), self.missed.status.eq(capture.missed),
            self.count.status.eq(capture.count), self.trigger_tick.status.eq(capture.trigger_tick),
            self.before.status.eq(capture.armed_before), self.after.status.eq(capture.armed_after),
            self.trigger.status.eq(Cat(capture.armed_trigger, Constant(0, 4), capture.armed_value)),
            self.dropped.status.eq(reduce(add, [c.dropped for c in compressors] +
                                          ([capture.store_dropped] if capture.external_store else []))),
            self.write_index.status.eq(capture.wr_ptr),
        ]


class RingBus(LiteXModule):
    """The ring's entries as a Wishbone slave: entry i's bits at word 16 i on (ENTRY_WORDS, the
    low word first), read a word a cycle after the address (the block RAM's read port, which
    only this reads), so that the host reads a window in bursts, not an entry a round trip."""
    def __init__(self, capture, address_width):
        self.depth = capture.depth
        self.bus = bus = wishbone.Interface(data_width=32, address_width=address_width)
        shift = (ENTRY_WORDS - 1).bit_length()
        words = [capture.rd_data[32 * k:32 * (k + 1)] for k in range((ENTRY_BITS + 31) // 32)]
        word = Signal(shift)
        self.comb += [
            capture.rd_index.eq(bus.adr[shift:]),
            bus.dat_r.eq(Array(words + [C(0, 32)] * (ENTRY_WORDS - len(words)))[word]),
        ]
        self.sync += [
            bus.ack.eq(0),
            If(bus.cyc & bus.stb & ~bus.ack, bus.ack.eq(1), word.eq(bus.adr[:shift])),
        ]

    @staticmethod
    def size(depth):
        """The bytes its region spans: the entries', rounded up to a power of two."""
        return 1 << (depth * ENTRY_WORDS * 4 - 1).bit_length()

    def region_size(self):
        return self.size(self.depth)


def csr_addresses(base=CSR_BASE) -> dict[str, int]:
    """RigCapture's registers as csr.json names them, at their addresses from `base`: in the
    order they are declared, each as many 32-bit words as its width takes (LiteX's layout;
    tests/hw/test_boards.py holds it to the built SoCs' csr.json)."""
    from fisrig_hw.engine.capture import CaptureWindow, WireCompressor
    compressors = [WireCompressor(0), WireCompressor(1)]
    at, out = base, {}
    for csr in RigCapture(CaptureWindow(compressors, depth=2), compressors).get_csrs():
        out[f"wire_capture_{csr.name}"] = at
        at += 4 * ((csr.size + 31) // 32)
    return out
