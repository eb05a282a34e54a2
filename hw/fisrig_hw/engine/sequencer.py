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

from migen import *

from fisrig_hw.engine import fis
from litex.soc.interconnect import stream

from fisrig_hw.descriptor import *
from fisrig_hw.direct_fsm import DirectFSM
from fisrig_hw.engine.h2d import H2D_DWORDS, h2d_dword
from fisrig_hw.engine.sent_frames import TXK_DATA, TXK_H2D, TXK_RECOVERY
from fisrig_hw.engine.slots import lowest_set
from fisrig_hw.engine.transport import link_layout
from fisrig_hw.engine.descriptor_checks import outside_window, sample_ok, stage_ok


class Sequencer(Module):
    def __init__(self, engine, slots, stamps, writer, data, frames):
        now = engine.now
        rx = engine.receiver
        # What this machine sends and acknowledges; the engine ORs it with the data phase's.
        self.tx = tx = stream.Endpoint(link_layout)
        self.rx_ack, self.tap_rx_pop = Signal(), Signal()
        tap_rx = engine.tap_rx
        link_up, link_fell = engine.link_up, engine.link_fell
        self.hdr_crc_error = Signal()         # strobes for the engine's counters
        self.rx_tap_bad = Signal()
        self.stat_timeouts = Signal(32)
        self.stat_ncq_errors = Signal(32)

        # # #

        def finish(slot, result, status=0, error=0, lba=0, keep=False, t=None):
            return slots.finish(stamps, slot, result, status, error, lba, keep, t=t)
        stamp = stamps.stamp

        # The received frame the machine is looking at, on the wire.
        rx_t = Signal(64)
        self.comb += rx_t.eq(Mux(tap_rx.valid, tap_rx.t_fis, now))

        # ---- protocol state ----
        nq_active, nq_slot = Signal(), Signal(5)           # the non-queued command
        accept_pending, accept_slot = Signal(), Signal(5)  # NCQ H2D awaiting its D2H
        data_phase, data_slot, data_in = Signal(), Signal(5), Signal()  # data_in: device to host
        pio, pio_e_status = Signal(), Signal(8)
        ncq_error, sdb_st, sdb_er = Signal(), Signal(8), Signal(8)
        recov = Signal()             # our READ LOG EXT 10h is the non-queued command
        wait_link, wait_link_slot = Signal(), Signal(5)
        sig_seen = Signal()          # the signature D2H after the link came up
        link_lost, link_lost_clear = Signal(), Signal()
        self.sync += If(link_fell, link_lost.eq(1)).Elif(link_lost_clear, link_lost.eq(0))

        # The slot whose descriptor the machine looks at.
        cur = Signal(5)
        cur_desc = slots.desc_reader(cur)
        d_protocol = desc_field(cur_desc, "protocol")
        d_count = desc_field(cur_desc, "count")
        # The incoming descriptor.
        in_raw = engine.desc.raw
        in_protocol = desc_field(in_raw, "protocol")
        in_command = desc_field(in_raw, "command")
        self.comb += [slots.take_desc.eq(in_raw), slots.take_timeout.eq(desc_field(in_raw, "timeout_ticks"))]
        free_slot = slots.free_slot

        h2d_slot, h2d_kind, h2d_idx = Signal(5), Signal(2), Signal(3)
        sweep_mask, sweep_res, sweep_slot = Signal(SLOTS), Signal(4), Signal(5)
        sweep_st, sweep_er = Signal(8), Signal(8)
        after_sweep_comreset = Signal()
        is_fpdma_in = (in_protocol == PROTO_FPDMA_IN) | (in_protocol == PROTO_FPDMA_OUT)
        # A descriptor whose data in RAM would run past the data window: refused, whatever
        # the firmware (the VM checks its own; another could DMA over its own memory).
        outside, window_logic = outside_window(in_raw, data.data_bytes)
        self.comb += window_logic
        no_data_phase = ~data_phase & ~accept_pending
        can_queue = no_data_phase & ~nq_active & ~ncq_error & ~wait_link & slots.any_free
        can_nonqueued = can_queue & (slots.queued == 0)
        queued, issued = slots.queued, slots.issued
        waiting_link = Mux(wait_link, 1 << wait_link_slot, 0)

        h = rx.hdr
        d2h_status = fis.field(h, fis.STATUS)
        d2h_error = fis.field(h, fis.ERROR)
        d2h_lba = Cat(fis.field(h, fis.LBA_LO), fis.field(h, fis.LBA_HI))
        sdb_st_now = fis.sdb_status(h)
        # A PIO Setup's command: the non-queued one, or a queued H2D the drive answers as PIO in.
        pio_slot = Mux(accept_pending & fis.field(h, fis.DIR_D), accept_slot, nq_slot)
        sdb_done = Signal(SLOTS)
        self.comb += sdb_done.eq(fis.field(h, fis.SDB_ACTIVE) & queued)

        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")

        def sweep(mask, result, then_comreset=False):
            return [NextValue(sweep_mask, mask), NextValue(sweep_res, result),
                    NextValue(after_sweep_comreset, int(then_comreset)), NextState("SWEEP")]

        def reset_protocol():
            return [NextValue(nq_active, 0), NextValue(accept_pending, 0),
                    NextValue(data_phase, 0), NextValue(ncq_error, 0), NextValue(recov, 0),
                    frames.forget.eq(1), NextValue(pio, 0)]

        def send_h2d(kind):
            return [NextValue(h2d_kind, kind), NextValue(h2d_idx, 0), NextState("H2D")]

        fsm.act("IDLE",
            If(link_lost | (~link_up & ((issued & ~waiting_link) != 0)),
                link_lost_clear.eq(1),
                NextValue(sig_seen, 0),
                reset_protocol(),
                sweep(issued & ~waiting_link, RESULT_LINK_LOST)
            ).Elif(frames.waiting,
                frames.start.eq(1), NextState("FRAMES")
            ).Elif(rx.hdr_valid,
                NextState("RX-FIS")
            ).Elif(rx.data_start,
                NextState("DATA-IN")
            ).Elif(writer.event_waiting,
                writer.start.eq(1), writer.start_event.eq(1),
                NextState("RECORD")
            ).Elif(slots.cpl_pend != 0,
                writer.start.eq(1), lowest_set(slots.cpl_pend, SLOTS, writer.start_slot),
                NextState("RECORD")
            ).Elif(slots.timeout_hit,
                NextState("TIMEOUT")
            ).Elif(wait_link & link_up & sig_seen,
                finish(wait_link_slot, RESULT_OK),
                NextValue(wait_link, 0)
            ).Elif(frames.resend_recovery & ~data_phase,
                frames.recovery_resent.eq(1),
                send_h2d(TXK_RECOVERY)
            ).Elif((frames.resend != 0) & ~data_phase,
                NextState("RESEND")
            ).Elif(ncq_error & ~recov & ~accept_pending & ~data_phase & (frames.level == 0),
                NextValue(recov, 1),
                send_h2d(TXK_RECOVERY)
            ).Elif(engine.desc.valid,
                NextState("ISSUE")
            )
        )
        # One H2D answered by R_ERR goes again (the lowest slot first).
        resend_slot = Signal(5)
        fsm.act("RESEND",
            lowest_set(frames.resend, SLOTS, resend_slot),
            NextValue(cur, resend_slot), NextValue(h2d_slot, resend_slot),
            frames.resent.eq(1), frames.resent_slot.eq(resend_slot),
            send_h2d(TXK_H2D)
        )

        # ---- taking a descriptor ----
        def take(then):
            """The descriptor into the free slot: its submit stamp, and the state it goes to."""
            return [slots.take.eq(1), engine.desc.ready.eq(1), stamp(free_slot, PH_SUBMIT),
                    NextValue(cur, free_slot), then]
        fsm.act("ISSUE",
            slots.find_free(),
            If((in_protocol > PROTO_LINK) | outside,
                # Stamped when taken: unstamped, its record carried the slot's last ts_submit.
                If(slots.any_free, take(NextState("REFUSE"))).Else(NextState("IDLE"))
            ).Elif(in_protocol == PROTO_POWER,
                If(slots.any_free & ~wait_link,
                    take(NextState("POWER-DONE")),
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
            ).Elif(in_protocol == PROTO_LINK,
                If(slots.any_free & ~wait_link,
                    take([]),
                    If(in_command == LINK_COMRESET,
                        engine.comreset.eq(1),
                        NextValue(sig_seen, 0),
                        NextValue(wait_link, 1), NextValue(wait_link_slot, free_slot),
                        reset_protocol(),
                        sweep(issued, RESULT_LINK_LOST),
                    ).Elif(in_command == LINK_WAIT_UP,
                        NextValue(wait_link, 1), NextValue(wait_link_slot, free_slot),
                        NextState("IDLE")
                    ).Else(
                        NextState("REFUSE")
                    )
                ).Else(NextState("IDLE"))
            ).Elif(wait_link,
                # Behind a LINK descriptor still waiting for the link: it goes once that ends.
                NextState("IDLE")
            ).Elif(~link_up,
                # Nothing to send it to: it ends at once, nothing waits on a dead link.
                If(slots.any_free, take(NextState("LOST"))).Else(NextState("IDLE"))
            ).Elif(is_fpdma_in & can_queue | ~is_fpdma_in & can_nonqueued,
                take([NextValue(h2d_slot, free_slot), send_h2d(TXK_H2D)]),
                If(is_fpdma_in,
                    NextValue(accept_pending, 1), NextValue(accept_slot, free_slot),
                ).Else(
                    NextValue(nq_active, 1), NextValue(nq_slot, free_slot),
                    NextValue(pio, 0),
                ),
            ).Else(
                NextState("IDLE")
            )
        )
        fsm.act("REFUSE", finish(cur, RESULT_REFUSED), NextState("IDLE"))
        fsm.act("LOST", finish(cur, RESULT_LINK_LOST), NextState("IDLE"))
        # POWER ON ends when the link is up again and the signature came (or its timeout).
        cur_command = desc_field(cur_desc, "command")
        fsm.act("POWER-DONE",
            If(d_protocol == PROTO_POWER,
                If(cur_command == POWER_ON,
                    NextValue(sig_seen, 0),
                    NextValue(wait_link, 1), NextValue(wait_link_slot, cur),
                ).Elif((cur_command == POWER_OFF) | (cur_command == POWER_OFF_AT_EVENT),
                    finish(cur, RESULT_OK),
                ).Elif(stage_ok(cur_desc) | sample_ok(cur_desc),
                    finish(cur, RESULT_OK),
                ).Else(
                    finish(cur, RESULT_REFUSED),
                )
            ),
            NextState("IDLE")
        )

        # ---- sending a Register H2D (ours, or READ LOG EXT 10h after an NCQ error) ----
        fsm.act("H2D",
            tx.valid.eq(1),
            h2d_dword(tx.data, h2d_idx, h2d_kind == TXK_RECOVERY, cur_desc, h2d_slot),
            tx.last.eq(h2d_idx == H2D_DWORDS - 1),
            If(tx.ready,
                If(h2d_idx == 0, frames.queue(h2d_kind, h2d_slot)),
                NextValue(h2d_idx, h2d_idx + 1),
                If(h2d_idx == H2D_DWORDS - 1,
                    If((h2d_kind == TXK_H2D) & (d_protocol == PROTO_DMA_OUT),
                        data.set_remaining.eq(1), data.remaining_value.eq(Cat(d_count, d_count == 0) << 7),
                    ),
                    NextState("IDLE")
                )
            )
        )

        fsm.act("FRAMES", If(frames.done, NextState("IDLE")))

        # ---- a non-data FIS from the device ----
        sdb_t = Signal(64)  # the SDB's wire tick, for every tag it completes
        fsm.act("RX-FIS",
            self.rx_ack.eq(1),
            self.tap_rx_pop.eq(1),
            self.rx_tap_bad.eq(~tap_rx.valid | (tap_rx.type != rx.type)),
            NextState("IDLE"),
            If(rx.hdr_crc_error,
                self.hdr_crc_error.eq(1),
            ).Elif(rx.type == fis.REG_D2H,
                If(accept_pending,
                    NextValue(accept_pending, 0),
                    If(d2h_status & fis.STATUS_ERR,
                        finish(accept_slot, RESULT_ATA_ERROR, d2h_status, d2h_error, d2h_lba, t=rx_t),
                    ).Else(
                        stamp(accept_slot, PH_ACCEPT, t=rx_t),
                        slots.queued_set.eq(1 << accept_slot),
                    )
                ).Elif(recov,
                    # READ LOG EXT itself failed: every queued command ends aborted, and, as
                    # libata does, a COMRESET clears the queue the device may still hold halted.
                    NextValue(recov, 0), NextValue(ncq_error, 0), NextValue(nq_active, 0),
                    NextValue(data_phase, 0), NextValue(sig_seen, 0),
                    sweep(queued, RESULT_NCQ_ABORTED, then_comreset=True)
                ).Elif(nq_active & ~(d2h_status & fis.STATUS_BSY),
                    NextValue(nq_active, 0), NextValue(data_phase, 0),
                    finish(nq_slot, Mux(d2h_status & fis.STATUS_ERR, RESULT_ATA_ERROR, RESULT_OK),
                           d2h_status, d2h_error, d2h_lba, t=rx_t),
                ).Elif(~nq_active & (queued == 0) & ~accept_pending,
                    # Unsolicited: the signature after power-on or COMRESET.
                    NextValue(sig_seen, 1),
                    writer.push.eq(1), writer.push_code.eq(EV_LINK_UP), writer.push_result.eq(RESULT_OK),
                    writer.push_time.eq(rx_t),
                )
            ).Elif(rx.type == fis.DMA_ACTIVATE,
                If(data_phase & ~data_in,
                    NextState("DATA-OUT")
                ).Elif(nq_active & ~data_phase,
                    NextValue(data_phase, 1), NextValue(data_in, 0), NextValue(data_slot, nq_slot),
                    NextState("DATA-OUT")
                ),
                stamp(Mux(data_phase, data_slot, nq_slot), PH_SETUP, first=True, t=rx_t),
            ).Elif(rx.type == fis.DMA_SETUP,
                NextValue(data_phase, 1),
                NextValue(data_in, fis.field(h, fis.DIR_D)),
                NextValue(data_slot, fis.field(h, fis.DMA_SETUP_TAG)),
                data.set_remaining.eq(1), data.remaining_value.eq(fis.field(h, fis.DMA_SETUP_COUNT)[2:26]),
                stamp(fis.field(h, fis.DMA_SETUP_TAG), PH_SETUP, first=True, t=rx_t),
                If(~fis.field(h, fis.DIR_D) & fis.field(h, fis.AUTO_ACTIVATE),
                    NextState("DATA-OUT")
                )
            ).Elif(rx.type == fis.PIO_SETUP,
                NextValue(pio, 1),
                NextValue(pio_e_status, fis.field(h, fis.PIO_E_STATUS)),
                NextValue(data_phase, 1),
                NextValue(data_in, fis.field(h, fis.DIR_D)),
                NextValue(data_slot, pio_slot),
                data.set_remaining.eq(1), data.remaining_value.eq(fis.field(h, fis.PIO_TRANSFER_COUNT)[2:]),
                If(~recov, stamp(pio_slot, PH_SETUP, first=True, t=rx_t)),
                # A queued H2D the drive answered as PIO in (its opcode's protocol): no D2H
                # will release it, and its last PIO Setup is its status, so it is the
                # non-queued command from here; left pending, it held every later command
                # back until a COMRESET.
                If(accept_pending & fis.field(h, fis.DIR_D),
                    NextValue(accept_pending, 0), NextValue(nq_active, 1), NextValue(nq_slot, accept_slot),
                ),
                If(~fis.field(h, fis.DIR_D), NextState("DATA-OUT"))
            ).Elif(rx.type == fis.SET_DEVICE_BITS,
                If(sdb_st_now & fis.STATUS_ERR,
                    # The queue halts: a data phase the error cut short (a write Data FIS
                    # the device answered R_ERR, with data left) is over too, or the log
                    # read that recovers would wait for it forever.
                    NextValue(data_phase, 0),
                    NextValue(ncq_error, 1), NextValue(sdb_st, sdb_st_now),
                    NextValue(sdb_er, d2h_error),
                    NextValue(self.stat_ncq_errors, self.stat_ncq_errors + 1),
                ),
                NextValue(sweep_st, sdb_st_now), NextValue(sweep_er, d2h_error),
                NextValue(sdb_t, rx_t),
                If(sdb_done != 0,
                    NextValue(sweep_mask, sdb_done), NextValue(sweep_res, RESULT_OK),
                    NextValue(after_sweep_comreset, 0),
                    NextState("SDB-DONE")
                )
            )
        )
        # Tags an SDB completed: one record a cycle, status from the SDB (ERR aside).
        fsm.act("SDB-DONE",
            lowest_set(sweep_mask, SLOTS, sweep_slot),
            finish(sweep_slot, RESULT_OK, sweep_st & ~fis.STATUS_ERR, 0, 0, t=sdb_t),
            NextValue(sweep_mask, sweep_mask & ~(1 << sweep_slot)),
            If((sweep_mask & ~(1 << sweep_slot)) == 0, NextState("IDLE"))
        )
        fsm.act("SWEEP",
            lowest_set(sweep_mask, SLOTS, sweep_slot),
            If(sweep_mask == 0,
                If(after_sweep_comreset, engine.comreset.eq(1), NextValue(after_sweep_comreset, 0)),
                NextState("IDLE")
            ).Else(
                finish(sweep_slot, sweep_res, Mux(sweep_res == RESULT_NCQ_ABORTED, sdb_st, 0),
                       Mux(sweep_res == RESULT_NCQ_ABORTED, sdb_er, 0), 0),
                NextValue(sweep_mask, sweep_mask & ~(1 << sweep_slot)),
            )
        )

        # ---- a Data FIS, either way: the data path moves it ----
        data_slot_now = Mux(data_phase, data_slot, nq_slot)
        # Only our READ LOG EXT's PIO data is the log: a device that still sends a queued
        # read's data after its error SDB must not overwrite what the log will say.
        fsm.act("DATA-IN",
            data.start_in.eq(1), data.start_slot.eq(data_slot_now), data.start_capture.eq(recov & pio),
            NextState("DATA"))
        fsm.act("DATA-OUT",
            data.start_out.eq(1), data.start_slot.eq(data_slot_now),
            NextState("DATA"))
        fsm.act("DATA",
            If(data.header_sent, frames.queue(TXK_DATA, data.slot, data.out_dwords)),
            If(data.done, NextState("IDLE")),
            If(data.ended,
                If(data.remaining == 0, NextValue(data_phase, 0)),
                # A PIO-in command's last PIO Setup is its status: no D2H follows.
                If(data.inward & pio & ~(pio_e_status & fis.STATUS_BSY),
                    NextValue(pio, 0), NextValue(data_phase, 0),
                    If(data.capture, NextState("RECOVERED")).Else(NextState("PIO-END"))
                )
            )
        )
        # (A cycle of its own: the timestamp memory takes one write a cycle.)
        fsm.act("PIO-END",
            NextValue(nq_active, 0),
            finish(data.slot, Mux(pio_e_status & fis.STATUS_ERR, RESULT_ATA_ERROR, RESULT_OK),
                   pio_e_status, 0, 0, t=data.last_t),
            NextState("IDLE")
        )
        # Log 10h read: the failing tag ends with the log's status, error and LBA, every
        # other queued command as aborted.
        log = data.log
        log_nq = log[0][7]
        log_tag = log[0][:5]
        fsm.act("RECOVERED",
            NextValue(recov, 0), NextValue(ncq_error, 0), NextValue(nq_active, 0),
            If(~log_nq & (queued >> log_tag)[0],
                finish(log_tag, RESULT_ATA_ERROR, log[0][16:24], log[0][24:32],
                       Cat(log[1][:24], log[2][:24])),
                sweep(queued & ~(1 << log_tag), RESULT_NCQ_ABORTED)
            ).Else(
                sweep(queued, RESULT_NCQ_ABORTED)
            )
        )

        # ---- a slot past its timeout: it ends TIMEOUT, the rest by COMRESET ----
        fsm.act("TIMEOUT",
            slots.timeout_clear.eq(1),
            NextValue(self.stat_timeouts, self.stat_timeouts + 1),
            If(wait_link & (slots.timeout_slot == wait_link_slot),
                NextValue(wait_link, 0),
                finish(slots.timeout_slot, RESULT_TIMEOUT),
                NextState("IDLE")
            ).Elif((issued >> slots.timeout_slot)[0],
                finish(slots.timeout_slot, RESULT_TIMEOUT),
                NextValue(sig_seen, 0),
                reset_protocol(),
                sweep(issued & ~(1 << slots.timeout_slot) & ~waiting_link,
                      RESULT_LINK_LOST, then_comreset=True),
            ).Else(
                NextState("IDLE")
            )
        )

        fsm.act("RECORD", If(writer.done, NextState("IDLE")))
