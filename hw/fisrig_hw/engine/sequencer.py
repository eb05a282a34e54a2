"""The sequencer: the engine's protocol states, for every protocol at once (PIO, DMA and
FPDMA share the H2D and data states).

The link is half duplex, so one machine handles both directions: it takes each FIS the
device sends and answers it, and queues Register H2Ds for the transmitter so that it never
waits on a link the device holds. It hands the data path a Data FIS to move and the record
writer a record to write, and waits for each. Rules a real host follows and this one does
too: one non-queued command at a time and never beside queued ones; a queued H2D waits for
the D2H that releases the previous one; no new command while a data phase is open; after
an NCQ error, READ LOG EXT 10h before anything else; a slot past its timeout ends as
TIMEOUT and the others by COMRESET; a link that goes down ends every slot in flight as
LINK_LOST. Every slot ends with a record.
"""

from types import SimpleNamespace

from migen import *

from fisrig_hw.engine import fis
from litex.soc.interconnect import stream

from fisrig_hw.descriptor import *
from fisrig_hw.direct_fsm import DirectFSM
from fisrig_hw.engine.h2d import H2D_DWORDS, h2d_dword
from fisrig_hw.engine.sent_frames import TXK_DATA, TXK_H2D, TXK_RECOVERY
from fisrig_hw.engine.slots import lowest_set
from fisrig_hw.engine.transport import link_layout
from fisrig_hw.engine.descriptor_checks import capture_ok, outside_window, sample_ok, stage_ok
from fisrig_hw.contract import FISRIG_CAPTURE_ARM as CAPTURE_ARM


class Sequencer(Module):
    def __init__(self, engine, slots, stamps, writer, data, frames):
        self.engine, self.slots, self.stamps, self.writer, self.data, self.frames = \
            engine, slots, stamps, writer, data, frames
        # What this machine sends and acknowledges; the engine ORs it with the data phase's.
        self.tx = stream.Endpoint(link_layout)
        self.rx_ack, self.tap_rx_pop = Signal(), Signal()
        self.hdr_crc_error = Signal()         # strobes for the engine's counters
        self.rx_tap_bad = Signal()
        self.stat_timeouts = Signal(32)
        self.stat_ncq_errors = Signal(32)

        # # #

        self.st = self._protocol_state()
        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")
        self._idle(fsm)
        self._take_descriptor(fsm)
        self._send_h2d_states(fsm)
        self._device_fis(fsm)
        self._end_slots(fsm)
        self._data_phase(fsm)
        self._timeout(fsm)
        fsm.act("RECORD", If(writer.done, NextState("IDLE")))

    # ---- what every state reads and sets ----
    def _protocol_state(self):
        """The protocol's state (the commands in flight, the data phase, NCQ recovery, the
        link) and what the states read of the descriptor, the received FIS and the slots."""
        engine, slots, data = self.engine, self.slots, self.data
        st = SimpleNamespace()
        st.rx, st.tap_rx = engine.receiver, engine.tap_rx
        st.link_up, link_fell = engine.link_up, engine.link_fell
        # The received frame the machine is looking at, on the wire.
        st.rx_t = Signal(64)
        self.comb += st.rx_t.eq(Mux(st.tap_rx.valid, st.tap_rx.t_fis, engine.now))

        st.nq_active, st.nq_slot = Signal(), Signal(5)           # the non-queued command
        st.accept_pending, st.accept_slot = Signal(), Signal(5)  # NCQ H2D awaiting its D2H
        st.data_phase, st.data_slot, st.data_in = Signal(), Signal(5), Signal()  # data_in: device to host
        st.pio, st.pio_e_status = Signal(), Signal(8)
        st.ncq_error, st.sdb_st, st.sdb_er = Signal(), Signal(8), Signal(8)
        st.recov = Signal()             # our READ LOG EXT 10h is the non-queued command
        st.wait_link, st.wait_link_slot = Signal(), Signal(5)
        st.sig_seen = Signal()          # the signature D2H after the link came up
        st.link_lost, st.link_lost_clear = Signal(), Signal()
        self.sync += If(link_fell, st.link_lost.eq(1)).Elif(st.link_lost_clear, st.link_lost.eq(0))

        # The slot whose descriptor the machine looks at.
        st.cur = Signal(5)
        st.cur_desc = slots.desc_reader(st.cur)
        st.d_protocol = desc_field(st.cur_desc, "protocol")
        st.d_count = desc_field(st.cur_desc, "count")
        # The incoming descriptor.
        st.in_raw = engine.desc.raw
        st.in_protocol = desc_field(st.in_raw, "protocol")
        st.in_command = desc_field(st.in_raw, "command")
        self.comb += [slots.take_desc.eq(st.in_raw), slots.take_timeout.eq(desc_field(st.in_raw, "timeout_ticks"))]

        st.h2d_slot, st.h2d_kind, st.h2d_idx = Signal(5), Signal(2), Signal(3)
        st.sweep_mask, st.sweep_res, st.sweep_slot = Signal(SLOTS), Signal(4), Signal(5)
        st.sweep_st, st.sweep_er = Signal(8), Signal(8)
        st.after_sweep_comreset = Signal()
        st.is_fpdma_in = (st.in_protocol == Protocol.FPDMA_IN) | (st.in_protocol == Protocol.FPDMA_OUT)
        # A descriptor whose data in RAM would run past the data window: refused, whatever
        # the firmware (the VM checks its own; another could DMA over its own memory).
        st.outside, window_logic = outside_window(st.in_raw, data.data_bytes)
        self.comb += window_logic
        no_data_phase = ~st.data_phase & ~st.accept_pending
        st.can_queue = no_data_phase & ~st.nq_active & ~st.ncq_error & ~st.wait_link & slots.any_free
        st.can_nonqueued = st.can_queue & (slots.queued == 0)
        st.waiting_link = Mux(st.wait_link, 1 << st.wait_link_slot, 0)

        h = st.rx.hdr
        st.hdr = h
        st.d2h_status = fis.field(h, fis.STATUS)
        st.d2h_error = fis.field(h, fis.ERROR)
        st.d2h_lba = Cat(fis.field(h, fis.LBA_LO), fis.field(h, fis.LBA_HI))
        st.sdb_st_now = fis.sdb_status(h)
        # A PIO Setup's command: the non-queued one, or a queued H2D the drive answers as PIO in.
        st.pio_slot = Mux(st.accept_pending & fis.field(h, fis.DIR_D), st.accept_slot, st.nq_slot)
        st.sdb_done = Signal(SLOTS)
        self.comb += st.sdb_done.eq(fis.field(h, fis.SDB_ACTIVE) & slots.queued)
        return st

    def _finish(self, slot, result, status=0, error=0, lba=0, keep=False, t=None):
        return self.slots.finish(self.stamps, slot, result, status, error, lba, keep, t=t)

    def _sweep(self, mask, result, then_comreset=False):
        """Every slot of `mask` ends `result`, one a cycle (SWEEP), then a COMRESET if asked."""
        st = self.st
        return [NextValue(st.sweep_mask, mask), NextValue(st.sweep_res, result),
                NextValue(st.after_sweep_comreset, int(then_comreset)), NextState("SWEEP")]

    def _reset_protocol(self):
        st = self.st
        return [NextValue(st.nq_active, 0), NextValue(st.accept_pending, 0),
                NextValue(st.data_phase, 0), NextValue(st.ncq_error, 0), NextValue(st.recov, 0),
                self.frames.forget.eq(1), NextValue(st.pio, 0)]

    def _send_h2d(self, kind):
        st = self.st
        return [NextValue(st.h2d_kind, kind), NextValue(st.h2d_idx, 0), NextState("H2D")]

    # ---- IDLE: what comes first, and RESEND ----
    def _idle(self, fsm):
        st, engine, slots, writer, frames = self.st, self.engine, self.slots, self.writer, self.frames
        issued = slots.issued
        fsm.act("IDLE",
            If(st.link_lost | (~st.link_up & ((issued & ~st.waiting_link) != 0)),
                st.link_lost_clear.eq(1),
                NextValue(st.sig_seen, 0),
                self._reset_protocol(),
                self._sweep(issued & ~st.waiting_link, RESULT_LINK_LOST)
            ).Elif(frames.waiting,
                frames.start.eq(1), NextState("FRAMES")
            ).Elif(st.rx.hdr_valid,
                NextState("RX-FIS")
            ).Elif(st.rx.data_start,
                NextState("DATA-IN")
            ).Elif(writer.event_waiting,
                writer.start.eq(1), writer.start_event.eq(1),
                NextState("RECORD")
            ).Elif(slots.cpl_pend != 0,
                writer.start.eq(1), lowest_set(slots.cpl_pend, SLOTS, writer.start_slot),
                NextState("RECORD")
            ).Elif(slots.timeout_hit,
                NextState("TIMEOUT")
            ).Elif(st.wait_link & st.link_up & st.sig_seen,
                self._finish(st.wait_link_slot, RESULT_OK),
                NextValue(st.wait_link, 0)
            ).Elif(frames.resend_recovery & ~st.data_phase,
                frames.recovery_resent.eq(1),
                self._send_h2d(TXK_RECOVERY)
            ).Elif((frames.resend != 0) & ~st.data_phase,
                NextState("RESEND")
            ).Elif(st.ncq_error & ~st.recov & ~st.accept_pending & ~st.data_phase & (frames.level == 0),
                NextValue(st.recov, 1),
                self._send_h2d(TXK_RECOVERY)
            ).Elif(engine.desc.valid,
                NextState("ISSUE")
            )
        )
        # One H2D answered by R_ERR goes again (the lowest slot first).
        resend_slot = Signal(5)
        fsm.act("RESEND",
            lowest_set(frames.resend, SLOTS, resend_slot),
            NextValue(st.cur, resend_slot), NextValue(st.h2d_slot, resend_slot),
            frames.resent.eq(1), frames.resent_slot.eq(resend_slot),
            self._send_h2d(TXK_H2D)
        )

    # ---- ISSUE: taking a descriptor, and what ends one at once ----
    def _take(self, then):
        """The descriptor into the free slot: its submit stamp, and the state it goes to."""
        st, slots = self.st, self.slots
        return [slots.take.eq(1), self.engine.desc.ready.eq(1), self.stamps.stamp(slots.free_slot, PH_SUBMIT),
                NextValue(st.cur, slots.free_slot), then]

    def _take_descriptor(self, fsm):
        st, engine, slots = self.st, self.engine, self.slots
        free_slot, issued = slots.free_slot, slots.issued
        in_raw, in_protocol, in_command = st.in_raw, st.in_protocol, st.in_command
        fsm.act("ISSUE",
            slots.find_free(),
            If(((in_protocol > Protocol.LINK) & (in_protocol != Protocol.CAPTURE)) | st.outside,
                # Stamped when taken: unstamped, its record carried the slot's last ts_submit.
                If(slots.any_free, self._take(NextState("REFUSE"))).Else(NextState("IDLE"))
            ).Elif(in_protocol == Protocol.POWER,
                If(slots.any_free & ~st.wait_link,
                    self._take(NextState("POWER-DONE")),
                    If(in_command == POWER_OFF,
                        engine.power_off.eq(1),
                    ).Elif(in_command == POWER_ON,
                        engine.power_on.eq(1),
                    ).Elif(in_command == POWER_OFF_AT_EVENT,
                        engine.power_arm.eq(1),
                    ).Elif(stage_ok(in_raw),
                        engine.power_stage.eq(1),
                    ).Elif(sample_ok(in_raw),
                        engine.current.start.eq(1),
                    ),
                ).Else(NextState("IDLE"))
            ).Elif(in_protocol == Protocol.LINK,
                If(slots.any_free & ~st.wait_link,
                    self._take([]),
                    If(in_command == LINK_COMRESET,
                        engine.comreset.eq(1),
                        NextValue(st.sig_seen, 0),
                        NextValue(st.wait_link, 1), NextValue(st.wait_link_slot, free_slot),
                        self._reset_protocol(),
                        self._sweep(issued, RESULT_LINK_LOST),
                    ).Elif(in_command == LINK_WAIT_UP,
                        NextValue(st.wait_link, 1), NextValue(st.wait_link_slot, free_slot),
                        NextState("IDLE")
                    ).Else(
                        NextState("REFUSE")
                    )
                ).Else(NextState("IDLE"))
            ).Elif(in_protocol == Protocol.CAPTURE,
                # The analyzer's capture (capture.py): armed or stopped as it is taken.
                If(slots.any_free,
                    If(capture_ok(in_raw),
                        self._take(NextState("CAPTURE-DONE")),
                        engine.capture_arm.eq(in_command == CAPTURE_ARM),
                        engine.capture_stop.eq(in_command != CAPTURE_ARM),
                    ).Else(self._take(NextState("REFUSE")))
                ).Else(NextState("IDLE"))
            ).Elif(st.wait_link,
                # Behind a LINK descriptor still waiting for the link: it goes once that ends.
                NextState("IDLE")
            ).Elif(~st.link_up,
                # Nothing to send it to: it ends at once, nothing waits on a dead link.
                If(slots.any_free, self._take(NextState("LOST"))).Else(NextState("IDLE"))
            ).Elif(st.is_fpdma_in & st.can_queue | ~st.is_fpdma_in & st.can_nonqueued,
                self._take([NextValue(st.h2d_slot, free_slot), self._send_h2d(TXK_H2D)]),
                If(st.is_fpdma_in,
                    NextValue(st.accept_pending, 1), NextValue(st.accept_slot, free_slot),
                ).Else(
                    NextValue(st.nq_active, 1), NextValue(st.nq_slot, free_slot),
                    NextValue(st.pio, 0),
                ),
            ).Else(
                NextState("IDLE")
            )
        )
        fsm.act("REFUSE", self._finish(st.cur, RESULT_REFUSED), NextState("IDLE"))
        fsm.act("CAPTURE-DONE", self._finish(st.cur, RESULT_OK), NextState("IDLE"))
        fsm.act("LOST", self._finish(st.cur, RESULT_LINK_LOST), NextState("IDLE"))
        # POWER ON ends when the link is up again and the signature came (or its timeout).
        cur, cur_desc = st.cur, st.cur_desc
        cur_command = desc_field(cur_desc, "command")
        fsm.act("POWER-DONE",
            If(st.d_protocol == Protocol.POWER,
                If(cur_command == POWER_ON,
                    NextValue(st.sig_seen, 0),
                    NextValue(st.wait_link, 1), NextValue(st.wait_link_slot, cur),
                ).Elif((cur_command == POWER_OFF) | (cur_command == POWER_OFF_AT_EVENT),
                    self._finish(cur, RESULT_OK),
                ).Elif(stage_ok(cur_desc) | sample_ok(cur_desc),
                    self._finish(cur, RESULT_OK),
                ).Else(
                    self._finish(cur, RESULT_REFUSED),
                )
            ),
            NextState("IDLE")
        )

    # ---- H2D: sending a Register H2D (ours, or READ LOG EXT 10h after an NCQ error) ----
    def _send_h2d_states(self, fsm):
        st, tx, data, frames = self.st, self.tx, self.data, self.frames
        h2d_idx, h2d_kind, h2d_slot = st.h2d_idx, st.h2d_kind, st.h2d_slot
        fsm.act("H2D",
            tx.valid.eq(1),
            h2d_dword(tx.data, h2d_idx, h2d_kind == TXK_RECOVERY, st.cur_desc, h2d_slot),
            tx.last.eq(h2d_idx == H2D_DWORDS - 1),
            If(tx.ready,
                If(h2d_idx == 0, frames.queue(h2d_kind, h2d_slot)),
                NextValue(h2d_idx, h2d_idx + 1),
                If(h2d_idx == H2D_DWORDS - 1,
                    If((h2d_kind == TXK_H2D) & (st.d_protocol == Protocol.DMA_OUT),
                        data.set_remaining.eq(1), data.remaining_value.eq(Cat(st.d_count, st.d_count == 0) << 7),
                    ),
                    NextState("IDLE")
                )
            )
        )
        fsm.act("FRAMES", If(frames.done, NextState("IDLE")))

    # ---- RX-FIS: a non-data FIS from the device ----
    def _device_fis(self, fsm):
        st, slots, writer, data = self.st, self.slots, self.writer, self.data
        rx, tap_rx, h, rx_t = st.rx, st.tap_rx, st.hdr, st.rx_t
        stamp, finish = self.stamps.stamp, self._finish
        queued = slots.queued
        d2h_status, d2h_error, d2h_lba = st.d2h_status, st.d2h_error, st.d2h_lba
        st.sdb_t = sdb_t = Signal(64)  # the SDB's wire tick, for every tag it completes
        st.err_sdb_t = Signal(64)  # the error SDB's: the failing command's result came there
        fsm.act("RX-FIS",
            self.rx_ack.eq(1),
            self.tap_rx_pop.eq(1),
            self.rx_tap_bad.eq(~tap_rx.valid | (tap_rx.type != rx.type)),
            NextState("IDLE"),
            If(rx.hdr_crc_error,
                self.hdr_crc_error.eq(1),
            ).Elif(rx.type == fis.REG_D2H,
                If(st.accept_pending,
                    NextValue(st.accept_pending, 0),
                    If(d2h_status & fis.STATUS_ERR,
                        finish(st.accept_slot, RESULT_ATA_ERROR, d2h_status, d2h_error, d2h_lba, t=rx_t),
                    ).Else(
                        stamp(st.accept_slot, PH_ACCEPT, t=rx_t),
                        slots.queued_set.eq(1 << st.accept_slot),
                    )
                ).Elif(st.recov,
                    # READ LOG EXT itself failed: every queued command ends aborted, and, as
                    # libata does, a COMRESET clears the queue the device may still hold halted.
                    NextValue(st.recov, 0), NextValue(st.ncq_error, 0), NextValue(st.nq_active, 0),
                    NextValue(st.data_phase, 0), NextValue(st.sig_seen, 0),
                    self._sweep(queued, RESULT_NCQ_ABORTED, then_comreset=True)
                ).Elif(st.nq_active & ~(d2h_status & fis.STATUS_BSY),
                    NextValue(st.nq_active, 0), NextValue(st.data_phase, 0),
                    finish(st.nq_slot, Mux(d2h_status & fis.STATUS_ERR, RESULT_ATA_ERROR, RESULT_OK),
                           d2h_status, d2h_error, d2h_lba, t=rx_t),
                ).Elif(~st.nq_active & (queued == 0) & ~st.accept_pending,
                    # Unsolicited: the signature after power-on or COMRESET.
                    NextValue(st.sig_seen, 1),
                    writer.push.eq(1), writer.push_code.eq(EV_LINK_UP), writer.push_result.eq(RESULT_OK),
                    writer.push_time.eq(rx_t),
                )
            ).Elif(rx.type == fis.DMA_ACTIVATE,
                If(st.data_phase & ~st.data_in,
                    NextState("DATA-OUT")
                ).Elif(st.nq_active & ~st.data_phase,
                    NextValue(st.data_phase, 1), NextValue(st.data_in, 0), NextValue(st.data_slot, st.nq_slot),
                    NextState("DATA-OUT")
                ),
                stamp(Mux(st.data_phase, st.data_slot, st.nq_slot), PH_SETUP, first=True, t=rx_t),
            ).Elif(rx.type == fis.DMA_SETUP,
                NextValue(st.data_phase, 1),
                NextValue(st.data_in, fis.field(h, fis.DIR_D)),
                NextValue(st.data_slot, fis.field(h, fis.DMA_SETUP_TAG)),
                data.set_remaining.eq(1), data.remaining_value.eq(fis.field(h, fis.DMA_SETUP_COUNT)[2:26]),
                stamp(fis.field(h, fis.DMA_SETUP_TAG), PH_SETUP, first=True, t=rx_t),
                If(~fis.field(h, fis.DIR_D) & fis.field(h, fis.AUTO_ACTIVATE),
                    NextState("DATA-OUT")
                )
            ).Elif(rx.type == fis.PIO_SETUP,
                NextValue(st.pio, 1),
                NextValue(st.pio_e_status, fis.field(h, fis.PIO_E_STATUS)),
                NextValue(st.data_phase, 1),
                NextValue(st.data_in, fis.field(h, fis.DIR_D)),
                NextValue(st.data_slot, st.pio_slot),
                data.set_remaining.eq(1), data.remaining_value.eq(fis.field(h, fis.PIO_TRANSFER_COUNT)[2:]),
                If(~st.recov, stamp(st.pio_slot, PH_SETUP, first=True, t=rx_t)),
                # A queued H2D the drive answered as PIO in (its opcode's protocol): no D2H
                # will release it, and its last PIO Setup is its status, so it is the
                # non-queued command from here; left pending, it held every later command
                # back until a COMRESET.
                If(st.accept_pending & fis.field(h, fis.DIR_D),
                    NextValue(st.accept_pending, 0), NextValue(st.nq_active, 1), NextValue(st.nq_slot, st.accept_slot),
                ),
                If(~fis.field(h, fis.DIR_D), NextState("DATA-OUT"))
            ).Elif(rx.type == fis.SET_DEVICE_BITS,
                If(st.sdb_st_now & fis.STATUS_ERR,
                    # The queue halts: a data phase the error cut short (a write Data FIS
                    # the device answered R_ERR, with data left) is over too, or the log
                    # read that recovers would wait for it forever.
                    NextValue(st.data_phase, 0),
                    NextValue(st.ncq_error, 1), NextValue(st.sdb_st, st.sdb_st_now),
                    NextValue(st.sdb_er, d2h_error), NextValue(st.err_sdb_t, rx_t),
                    NextValue(self.stat_ncq_errors, self.stat_ncq_errors + 1),
                ),
                NextValue(st.sweep_st, st.sdb_st_now), NextValue(st.sweep_er, d2h_error),
                NextValue(sdb_t, rx_t),
                If(st.sdb_done != 0,
                    NextValue(st.sweep_mask, st.sdb_done), NextValue(st.sweep_res, RESULT_OK),
                    NextValue(st.after_sweep_comreset, 0),
                    NextState("SDB-DONE")
                )
            )
        )

    # ---- SDB-DONE and SWEEP: slots ended one a cycle ----
    def _end_slots(self, fsm):
        st = self.st
        sweep_mask, sweep_slot, sweep_res = st.sweep_mask, st.sweep_slot, st.sweep_res
        # Tags an SDB completed: one record a cycle, status from the SDB (ERR aside).
        fsm.act("SDB-DONE",
            lowest_set(sweep_mask, SLOTS, sweep_slot),
            self._finish(sweep_slot, RESULT_OK, st.sweep_st & ~fis.STATUS_ERR, 0, 0, t=st.sdb_t),
            NextValue(sweep_mask, sweep_mask & ~(1 << sweep_slot)),
            If((sweep_mask & ~(1 << sweep_slot)) == 0, NextState("IDLE"))
        )
        fsm.act("SWEEP",
            lowest_set(sweep_mask, SLOTS, sweep_slot),
            If(sweep_mask == 0,
                If(st.after_sweep_comreset, self.engine.comreset.eq(1), NextValue(st.after_sweep_comreset, 0)),
                NextState("IDLE")
            ).Else(
                self._finish(sweep_slot, sweep_res, Mux(sweep_res == RESULT_NCQ_ABORTED, st.sdb_st, 0),
                             Mux(sweep_res == RESULT_NCQ_ABORTED, st.sdb_er, 0), 0),
                NextValue(sweep_mask, sweep_mask & ~(1 << sweep_slot)),
            )
        )

    # ---- DATA-IN, DATA-OUT, DATA: a Data FIS, either way (the data path moves it) ----
    def _data_phase(self, fsm):
        st, data, frames, slots = self.st, self.data, self.frames, self.slots
        queued = slots.queued
        data_slot_now = Mux(st.data_phase, st.data_slot, st.nq_slot)
        # Only our READ LOG EXT's PIO data is the log: a device that still sends a queued
        # read's data after its error SDB must not overwrite what the log will say.
        fsm.act("DATA-IN",
            data.start_in.eq(1), data.start_slot.eq(data_slot_now), data.start_capture.eq(st.recov & st.pio),
            NextState("DATA"))
        fsm.act("DATA-OUT",
            data.start_out.eq(1), data.start_slot.eq(data_slot_now),
            NextState("DATA"))
        fsm.act("DATA",
            If(data.header_sent, frames.queue(TXK_DATA, data.slot, data.out_dwords)),
            If(data.done, NextState("IDLE")),
            If(data.ended,
                If(data.remaining == 0, NextValue(st.data_phase, 0)),
                # A PIO-in command's last PIO Setup is its status: no D2H follows.
                If(data.inward & st.pio & ~(st.pio_e_status & fis.STATUS_BSY),
                    NextValue(st.pio, 0), NextValue(st.data_phase, 0),
                    If(data.capture, NextState("RECOVERED")).Else(NextState("PIO-END"))
                )
            )
        )
        # (A cycle of its own: the timestamp memory takes one write a cycle.)
        fsm.act("PIO-END",
            NextValue(st.nq_active, 0),
            self._finish(data.slot, Mux(st.pio_e_status & fis.STATUS_ERR, RESULT_ATA_ERROR, RESULT_OK),
                         st.pio_e_status, 0, 0, t=data.last_t),
            NextState("IDLE")
        )
        # Log 10h read: the failing tag ends with the log's status, error and LBA, every
        # other queued command as aborted.
        log = data.log
        log_nq = log[0][7]
        log_tag = log[0][:5]
        fsm.act("RECOVERED",
            NextValue(st.recov, 0), NextValue(st.ncq_error, 0), NextValue(st.nq_active, 0),
            If(~log_nq & (queued >> log_tag)[0],
                self._finish(log_tag, RESULT_ATA_ERROR, log[0][16:24], log[0][24:32],
                             Cat(log[1][:24], log[2][:24])),
                self.writer.recovered.eq(1), self.writer.recovered_slot.eq(log_tag),
                self.writer.recovered_tick.eq(st.err_sdb_t),
                self._sweep(queued & ~(1 << log_tag), RESULT_NCQ_ABORTED)
            ).Else(
                self._sweep(queued, RESULT_NCQ_ABORTED)
            )
        )

    # ---- TIMEOUT: a slot past its timeout ends TIMEOUT, the rest by COMRESET ----
    def _timeout(self, fsm):
        st, slots = self.st, self.slots
        fsm.act("TIMEOUT",
            slots.timeout_clear.eq(1),
            NextValue(self.stat_timeouts, self.stat_timeouts + 1),
            If(st.wait_link & (slots.timeout_slot == st.wait_link_slot),
                NextValue(st.wait_link, 0),
                self._finish(slots.timeout_slot, RESULT_TIMEOUT),
                NextState("IDLE")
            ).Elif((slots.issued >> slots.timeout_slot)[0],
                self._finish(slots.timeout_slot, RESULT_TIMEOUT),
                NextValue(st.sig_seen, 0),
                self._reset_protocol(),
                self._sweep(slots.issued & ~(1 << slots.timeout_slot) & ~st.waiting_link,
                            RESULT_LINK_LOST, then_comreset=True),
            ).Else(
                NextState("IDLE")
            )
        )
