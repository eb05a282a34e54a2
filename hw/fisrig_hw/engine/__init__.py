"""The raw command engine: LiteSATA's command layer replaced by one that issues any ATA
command as a raw Register H2D FIS and sequences every protocol, NCQ included.

Descriptors (engine_if.h) come in on `desc`, one completion record per descriptor goes out
on `cpl` as 20 dwords. 32 slots; an FPDMA command's slot is its NCQ tag. Per slot the
engine stamps, on the free-running counter `now`, every phase the record carries. Data
moves from/to main RAM (`ram_*` streams to LiteX's Wishbone DMA) or from the pattern
generator and to the checker, which never touch RAM.

This file composes the parts, one concern each (LiteSATA's layers are the model):
- slots.py: the slot memories and per-slot results, with their write ports;
- sequencer.py: the protocol states (PIO, DMA and FPDMA share them);
- h2d.py: the Register H2D encoder;
- data_phase.py: the data path (RAM streams, pattern generator and checker);
- sent_frames.py: what became of each frame sent (wire record, R_OK / R_ERR);
- records.py: the record writer and the event queue;
- current.py: the current sampler, whose records the writer sends;
and, beside them, transport.py (FIS receiver and transmitter) and wire_tap.py (when each
frame crossed the pins: every stamp but ts_submit comes from there).
"""

from migen import *

from litex.soc.interconnect import stream

from fisrig_hw.descriptor import DEFAULT_TIMEOUT_TICKS, DESC_BITS, SLOTS, desc_field
from fisrig_hw.engine.current import CurrentSampler
from fisrig_hw.engine.data_phase import DataPhase
from fisrig_hw.engine.records import RecordWriter
from fisrig_hw.engine.sent_frames import SentFrames
from fisrig_hw.engine.sequencer import Sequencer
from fisrig_hw.engine.slots import SlotTable
from fisrig_hw.engine.transport import FisReceiver, FisTransmitter
from fisrig_hw.engine.wire_tap import tap_layout

__all__ = ["RawCommandEngine", "SLOTS"]


class RawCommandEngine(Module):
    def __init__(self, default_timeout=DEFAULT_TIMEOUT_TICKS):
        self.now = Signal(64)
        self.link_up = Signal()
        self.desc = stream.Endpoint([("raw", DESC_BITS)])
        # Link side (LiteSATA's link layer in the SoC; a Python device in the benches).
        self.submodules.receiver = receiver = ResetInserter()(FisReceiver())
        self.submodules.transmitter = transmitter = ResetInserter()(FisTransmitter())
        self.rx = receiver.sink
        self.tx = transmitter.source
        self.tx_ok = Signal()
        self.tx_err = Signal()
        self.comreset = Signal()
        # The wire taps (wire_tap.FrameTap): one record per frame, in wire order, that says
        # when its dwords crossed the pins. Every stamp but ts_submit comes from them
        # (engine_if.h); a frame with no record, or another type's, is stamped on `now`
        # and counted in stat_tap_mismatch.
        self.tap_rx = stream.Endpoint(tap_layout)
        self.tap_tx = stream.Endpoint(tap_layout)
        self.stat_tap_mismatch = Signal(32)
        # Power controller interface (its FIS events come from the taps: wire_tap.TapEvents).
        self.power_off = Signal()
        self.power_on = Signal()
        self.power_arm = Signal()
        self.power_arm_event = Signal(3)
        self.power_arm_count = Signal(16)
        self.power_arm_delay = Signal(32)
        self.power_stage = Signal()  # a POWER STAGE descriptor: its pin, used, offsets below
        self.power_stage_pin, self.power_stage_used = Signal(2), Signal()
        self.power_stage_off, self.power_stage_on = Signal(32), Signal(32)
        self.power_cut = Signal()
        self.power_trigger = Signal(64)  # the power controller's: the tick a cut counted from
        # The analyzer's capture (capture.py, capture.h): a CAPTURE descriptor arms or stops it.
        self.capture_arm, self.capture_stop = Signal(), Signal()
        self.capture_trigger, self.capture_value = Signal(4), Signal(8)
        self.capture_before, self.capture_after = Signal(32), Signal(32)
        self.capture_windows = Signal(16)
        self.capture_payload = Signal(16)
        # The drive's current as the current sense reads it (POWER SAMPLE: current.py).
        self.current_ma = Signal(16)
        # Counters for the CSRs (stat_timeouts, stat_ncq_errors and stat_events_lost below).
        self.stat_rx_crc_errors = Signal(32)
        self.stat_tx_r_errs = Signal(32)

        # # #

        self.comb += [receiver.reset.eq(~self.link_up), transmitter.reset.eq(~self.link_up)]
        link_up_d = Signal()
        self.link_fell = Signal()
        self.sync += link_up_d.eq(self.link_up)
        self.comb += self.link_fell.eq(link_up_d & ~self.link_up)

        self.submodules.slots = slots = SlotTable(self.now, default_timeout)
        # A stamp port per machine that stamps, ORed in the table (they take turns).
        seq_stamps, data_stamps, sent_stamps = (slots.stamp_port() for _ in range(3))
        self.submodules.current = current = CurrentSampler(self.now)
        self.comb += current.pin.eq(self.current_ma)
        self.submodules.records = writer = RecordWriter(slots, self.now, current)
        self.submodules.data = data = DataPhase(slots, data_stamps, self.now, self.link_up, receiver.data, self.tap_rx)
        self.submodules.frames = frames = SentFrames(slots, sent_stamps, self.link_up, self.tx_ok, self.tx_err,
                                                     self.tap_tx)
        self.submodules.sequencer = seq = Sequencer(self, slots, seq_stamps, writer, data, frames)
        # Data to and from main RAM.
        self.data_base, self.data_bytes, self.ram_wr = data.data_base, data.data_bytes, data.ram_wr
        self.ram_rd_addr, self.ram_rd_data = data.ram_rd_addr, data.ram_rd_data
        self.cpl = writer.cpl
        self.stat_timeouts, self.stat_ncq_errors = seq.stat_timeouts, seq.stat_ncq_errors
        self.stat_events_lost = writer.stat_events_lost
        self.stat_current_lost = current.lost

        # The receiver and transmitter are shared by the sequencer and the data phase, which
        # take turns: what each drives is 0 while the other has the turn, so ORs join them
        # (always-on ORs cost the simulation less a cycle than forwarding in a state).
        tx = transmitter.sink
        self.comb += [
            receiver.ack.eq(seq.rx_ack | data.hdr_ack),
            self.tap_rx.ready.eq(seq.tap_rx_pop | data.tap_pop),
            tx.valid.eq(seq.tx.valid | data.dout.valid),
            tx.data.eq(seq.tx.data | data.dout.data),
            tx.last.eq(seq.tx.last | data.dout.last),
            seq.tx.ready.eq(tx.ready), data.dout.ready.eq(tx.ready),
        ]
        self.comb += [
            writer.power_cut.eq(self.power_cut), writer.link_fell.eq(self.link_fell),
            writer.power_trigger.eq(self.power_trigger),
            self.power_arm_event.eq(desc_field(self.desc.raw, "features")[:3]),
            self.power_arm_count.eq(desc_field(self.desc.raw, "count")),
            self.power_arm_delay.eq(desc_field(self.desc.raw, "timeout_ticks")),
            self.power_stage_pin.eq(desc_field(self.desc.raw, "features")[:2]),
            self.power_stage_used.eq(desc_field(self.desc.raw, "count") == 1),
            self.power_stage_off.eq(desc_field(self.desc.raw, "timeout_ticks")),
            self.power_stage_on.eq(desc_field(self.desc.raw, "data_word")),
            self.capture_trigger.eq(desc_field(self.desc.raw, "features")[:4]),
            self.capture_value.eq(desc_field(self.desc.raw, "count")[:8]),
            self.capture_before.eq(desc_field(self.desc.raw, "data_word")),
            self.capture_after.eq(desc_field(self.desc.raw, "timeout_ticks")),
            self.capture_windows.eq(desc_field(self.desc.raw, "lba")[:16]),
            self.capture_payload.eq(desc_field(self.desc.raw, "lba")[16:32]),
            current.start_on.eq(desc_field(self.desc.raw, "count") == 1),
            current.start_period.eq(desc_field(self.desc.raw, "timeout_ticks")),
        ]
        self.sync += [
            If(seq.hdr_crc_error | data.crc_error, self.stat_rx_crc_errors.eq(self.stat_rx_crc_errors + 1)),
            If(self.tx_err, self.stat_tx_r_errs.eq(self.stat_tx_r_errs + 1)),
            If(seq.rx_tap_bad | frames.tap_bad | data.tap_bad, self.stat_tap_mismatch.eq(self.stat_tap_mismatch + 1)),
        ]
