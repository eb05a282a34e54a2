"""The raw command engine: LiteSATA's command layer replaced by one that issues any ATA
command as a raw Register H2D FIS and sequences every protocol, NCQ included.

Descriptors (engine_if.h) come in on `desc`, one completion record per descriptor goes out
on `cpl` as 20 dwords. 32 slots; an FPDMA command's slot is its NCQ tag. Per slot the
engine stamps, on the free-running counter `now`, every phase the record carries. Data
moves from/to main RAM (`ram_*` streams to LiteX's Wishbone DMA) or from the pattern
generator and to the checker, which never touch RAM.

The link is half duplex, so one state machine handles both directions: it takes each FIS
the device sends (FisReceiver) and answers it, and queues Register H2Ds through a FIFO
(FisTransmitter) so that it never waits on a link the device holds. Rules a real host
follows and this one does too: one non-queued command at a time and never beside queued
ones; a queued H2D waits for the D2H that releases the previous one; no new command while
a data phase is open; after an NCQ error, READ LOG EXT 10h before anything else; a slot
past its timeout ends as TIMEOUT and the others by COMRESET; a link that goes down ends
every slot in flight as LINK_LOST. Every slot ends with a record.
"""

from migen import *

from litex.soc.interconnect import stream

from fisrig_hw import fis
from fisrig_hw.direct_fsm import DirectFSM
from fisrig_hw.descriptor import *
from fisrig_hw.pattern import PatternGenerator
from fisrig_hw.transport import FisReceiver, FisTransmitter, link_layout
from fisrig_hw.wire_tap import tap_layout

SLOTS = 32
# DEFAULT_TIMEOUT_TICKS (30 s, engine_if.h says why) comes with fisrig_hw.descriptor's names.
LOG_NCQ_ERROR = 0x10
READ_LOG_EXT = 0x2F

# What the transmitter's frames were, to attribute the link's R_OK / R_ERR.
TXK_H2D, TXK_DATA, TXK_RECOVERY = 0, 1, 2


def lowest_set(mask, width, out):
    """out = index of the lowest set bit of mask (0 when none): a priority encoder. The bit
    is isolated arithmetically (mask & -mask) and its one-hot position encoded by masks,
    not by a 32-deep if-chain, which Verilator evaluated branch by branch every cycle."""
    low = Signal(width)
    stmts = [low.eq(mask & (~mask + 1))]
    for k in range(len(out)):
        positions = sum(1 << i for i in range(width) if (i >> k) & 1)
        stmts.append(out[k].eq((low & positions) != 0))
    return stmts


class RawCommandEngine(Module):
    def __init__(self, default_timeout=DEFAULT_TIMEOUT_TICKS):
        self.now = Signal(64)
        self.link_up = Signal()
        self.desc = stream.Endpoint([("raw", DESC_BITS)])
        self.cpl = stream.Endpoint([("data", 32)])
        # Link side (LiteSATA's link layer in the SoC; a Python device in the benches).
        self.submodules.receiver = receiver = ResetInserter()(FisReceiver())
        self.submodules.transmitter = transmitter = ResetInserter()(FisTransmitter())
        self.rx = receiver.sink
        self.tx = transmitter.source
        self.tx_ok = Signal()
        self.tx_err = Signal()
        self.comreset = Signal()
        # RAM data window (byte address of data_word 0).
        self.data_base = Signal(32)
        self.ram_wr = stream.Endpoint([("address", 30), ("data", 32)])
        self.ram_rd_addr = stream.Endpoint([("address", 30)])
        self.ram_rd_data = stream.Endpoint([("data", 32)])
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
        self.power_cut = Signal()
        # Counters for the CSRs.
        self.stat_rx_crc_errors = Signal(32)
        self.stat_tx_r_errs = Signal(32)
        self.stat_timeouts = Signal(32)
        self.stat_ncq_errors = Signal(32)
        self.stat_events_lost = Signal(32)

        # # #

        now = self.now
        self.comb += [receiver.reset.eq(~self.link_up), transmitter.reset.eq(~self.link_up)]
        tx = transmitter.sink

        # ---- per-slot storage ----------------------------------------------------------
        desc_mem = Memory(DESC_BITS, SLOTS)
        ts_mem = Memory(64, SLOTS * 8)
        deadline_mem = Memory(64, SLOTS)
        desc_w = desc_mem.get_port(write_capable=True)
        desc_r = desc_mem.get_port(async_read=True)
        ts_w = ts_mem.get_port(write_capable=True)
        ts_r = ts_mem.get_port(async_read=True)
        dl_w = deadline_mem.get_port(write_capable=True)
        dl_r = deadline_mem.get_port(async_read=True)
        self.specials += desc_mem, ts_mem, deadline_mem, desc_w, desc_r, ts_w, ts_r, dl_w, dl_r

        res_a = Array(Signal(4) for _ in range(SLOTS))
        st_a = Array(Signal(8) for _ in range(SLOTS))
        er_a = Array(Signal(8) for _ in range(SLOTS))
        lba_a = Array(Signal(48) for _ in range(SLOTS))
        # Data dwords moved, either way: whole sectors are dw_a >> 7; a transfer that moved
        # other than its command asked for is told from the exact count (RESULT_LENGTH).
        dw_a = Array(Signal(24) for _ in range(SLOTS))
        chk_a = Array(Signal(16) for _ in range(SLOTS))
        tsv_a = Array(Signal(7) for _ in range(SLOTS))  # which phases have a stamp

        busy = Signal(SLOTS)      # holds a descriptor whose record is not written yet
        crc_bad = Signal(SLOTS)   # a Data FIS of the slot failed its CRC (either way)
        queued = Signal(SLOTS)    # NCQ commands the device holds
        cpl_pend = Signal(SLOTS)  # ended, record to write
        issued = Signal(SLOTS)
        self.comb += issued.eq(busy & ~cpl_pend)

        # Write ports, driven by the state machine, applied here (one write a cycle each).
        ts_we, ts_slot, ts_phase, ts_val = Signal(), Signal(5), Signal(3), Signal(64)
        ts_first = Signal()  # stamp only if the phase has none yet (first DMA Activate...)
        self.comb += [
            ts_w.adr.eq(Cat(ts_phase, ts_slot)),
            ts_w.dat_w.eq(ts_val),
            ts_w.we.eq(ts_we & ~(ts_first & (tsv_a[ts_slot] >> ts_phase)[0])),
        ]
        fin, fin_slot, fin_res, fin_st, fin_er, fin_lba = (Signal(), Signal(5), Signal(4),
                                                           Signal(8), Signal(8), Signal(48))
        fin_keep = Signal()  # keep the D2H fields stored already (an abort)
        new_slot, new_slot_we = Signal(5), Signal()
        dw_add, dw_slot, dw_n = Signal(), Signal(5), Signal(12)
        chk_inc, chk_slot = Signal(), Signal(5)
        bad_set, bad_slot = Signal(), Signal(5)
        fin_result = Signal(4)
        self.comb += fin_result.eq(Mux((fin_res == RESULT_OK) & (chk_a[fin_slot] != 0),
                                       RESULT_CHECK_FAILED, fin_res))
        cpl_clear = Signal()
        cpl_slot, cpl_next = Signal(5), Signal(5)
        self.sync += [
            If(ts_w.we, tsv_a[ts_slot].eq(tsv_a[ts_slot] | (1 << ts_phase))),
            If(new_slot_we,
                tsv_a[new_slot].eq(1 << PH_SUBMIT), res_a[new_slot].eq(RESULT_OK),
                st_a[new_slot].eq(0), er_a[new_slot].eq(0), lba_a[new_slot].eq(0),
                dw_a[new_slot].eq(0), chk_a[new_slot].eq(0),
            ),
            If(fin,
                res_a[fin_slot].eq(fin_result),
                If(~fin_keep, st_a[fin_slot].eq(fin_st), er_a[fin_slot].eq(fin_er),
                   lba_a[fin_slot].eq(fin_lba)),
            ),
            If(dw_add, dw_a[dw_slot].eq(dw_a[dw_slot] + dw_n)),
            If(chk_inc, chk_a[chk_slot].eq(chk_a[chk_slot] + 1)),
        ]
        # Ending a slot: result and status, the status stamp, and its record is due.
        fin_mask = Signal(SLOTS)
        self.comb += fin_mask.eq(Mux(fin, 1 << fin_slot, 0))
        busy_set = Signal(SLOTS)
        queued_set = Signal(SLOTS)
        self.sync += [
            busy.eq((busy | busy_set) & ~Mux(cpl_clear, 1 << cpl_slot, 0)),
            cpl_pend.eq((cpl_pend | fin_mask) & ~Mux(cpl_clear, 1 << cpl_slot, 0)),
            queued.eq((queued | queued_set) & ~fin_mask),
            crc_bad.eq((crc_bad | Mux(bad_set, 1 << bad_slot, 0)) & ~Mux(new_slot_we, 1 << new_slot, 0)),
        ]

        def finish(slot, result, status=0, error=0, lba=0, keep=False, stamp=True, t=None):
            s = [fin.eq(1), fin_slot.eq(slot), fin_res.eq(result), fin_st.eq(status),
                 fin_er.eq(error), fin_lba.eq(lba), fin_keep.eq(int(keep))]
            if stamp:
                s += [ts_we.eq(1), ts_slot.eq(slot), ts_phase.eq(PH_STATUS),
                      ts_val.eq(now if t is None else t)]
            return s

        def stamp(slot, phase, first=False, t=None):
            return [ts_we.eq(1), ts_slot.eq(slot), ts_phase.eq(phase),
                    ts_val.eq(now if t is None else t), ts_first.eq(int(first))]

        # The received frame the state machine is looking at, on the wire.
        tap_rx, tap_tx = self.tap_rx, self.tap_tx
        rx_t = Signal(64)
        self.comb += rx_t.eq(Mux(tap_rx.valid, tap_rx.t_fis, now))
        rx_tap_bad = Signal()  # strobe with a pop: the record was missing or another frame's
        tx_tap_bad = Signal()
        self.sync += If(rx_tap_bad | tx_tap_bad, self.stat_tap_mismatch.eq(self.stat_tap_mismatch + 1))

        # ---- protocol state ----------------------------------------------------------------
        nq_active, nq_slot = Signal(), Signal(5)         # the non-queued command
        accept_pending, accept_slot = Signal(), Signal(5)  # NCQ H2D awaiting its D2H
        data_phase, data_slot, data_in = Signal(), Signal(5), Signal()
        remaining = Signal(24)        # dwords left in the open data phase
        pio, pio_e_status = Signal(), Signal(8)
        ncq_error, sdb_st, sdb_er = Signal(), Signal(8), Signal(8)
        recov = Signal()             # our READ LOG EXT 10h is the non-queued command
        log = [Signal(32, name="log{}".format(i)) for i in range(3)]
        wait_link, wait_link_slot = Signal(), Signal(5)
        sig_seen = Signal()          # the signature D2H after the link came up
        link_up_d = Signal()
        self.sync += link_up_d.eq(self.link_up)
        link_fell = Signal()
        self.comb += link_fell.eq(link_up_d & ~self.link_up)

        # The slot whose descriptor the state machine looks at (the record writer's, when
        # writing one).
        cur = Signal(5)
        cur_desc = desc_r.dat_r
        self.comb += desc_r.adr.eq(cur)
        d_protocol = desc_field(cur_desc, "protocol")
        d_count = desc_field(cur_desc, "count")
        d_features = desc_field(cur_desc, "features")
        d_lba = desc_field(cur_desc, "lba")
        d_source = desc_field(cur_desc, "data_source")
        d_flags = desc_field(cur_desc, "flags")
        d_word = desc_field(cur_desc, "data_word")

        # Incoming descriptor.
        in_raw = self.desc.raw
        in_protocol = desc_field(in_raw, "protocol")
        in_command = desc_field(in_raw, "command")
        in_timeout = desc_field(in_raw, "timeout_ticks")
        free_slot = Signal(5)
        any_free = Signal()
        self.comb += any_free.eq(~busy != 0)

        # Transmit frame kinds, to attribute R_OK / R_ERR.
        txq = stream.SyncFIFO([("kind", 2), ("slot", 5)], 4, buffered=False)
        self.submodules.txq = ResetInserter()(txq)
        self.comb += txq.reset.eq(~self.link_up)
        txr_pending, txr_ok = Signal(), Signal()
        txr_clear = Signal()
        self.sync += [
            If(self.tx_ok | self.tx_err,
                txr_pending.eq(1), txr_ok.eq(self.tx_ok)
            ).Elif(txr_clear | ~self.link_up,
                txr_pending.eq(0)
            ),
            If(self.tx_err, self.stat_tx_r_errs.eq(self.stat_tx_r_errs + 1)),
        ]
        resend = Signal(SLOTS)   # H2Ds answered by R_ERR, to send again
        resend_recov = Signal()

        # ---- engine events (records of their own) ----
        # Events come at link speed or slower (a cut, the link falling, a signature), and
        # wait here while the record stream is held (a full completion ring); one that finds
        # no room is counted, never silently dropped.
        evq = stream.SyncFIFO([("code", 8), ("result", 3), ("time", 64)], 16)
        self.submodules.evq = evq
        self.sync += If(evq.sink.valid & ~evq.sink.ready,
                        self.stat_events_lost.eq(self.stat_events_lost + 1))
        ev_push_code, ev_push_res, ev_push_time, ev_push = Signal(8), Signal(3), Signal(64), Signal()
        self.comb += [
            evq.sink.valid.eq(ev_push | self.power_cut | (link_fell & ~self.power_cut)),
            If(self.power_cut,
                evq.sink.code.eq(EV_POWER_CUT), evq.sink.result.eq(RESULT_LINK_LOST),
                evq.sink.time.eq(now),  # the cut is this cycle
            ).Elif(link_fell,
                evq.sink.code.eq(EV_LINK_DOWN), evq.sink.result.eq(RESULT_LINK_LOST),
                evq.sink.time.eq(now),
            ).Else(
                evq.sink.code.eq(ev_push_code), evq.sink.result.eq(ev_push_res),
                evq.sink.time.eq(ev_push_time),
            )
        ]

        # ---- timeouts: one slot looked at per cycle ----
        scan = Signal(5)
        timeout_hit, timeout_slot = Signal(), Signal(5)
        timeout_clear = Signal()
        self.comb += dl_r.adr.eq(scan)
        self.sync += [
            scan.eq(scan + 1),
            If(timeout_clear,
                timeout_hit.eq(0)
            ).Elif(~timeout_hit & (issued >> scan)[0] & (now > dl_r.dat_r),
                timeout_hit.eq(1), timeout_slot.eq(scan)
            )
        ]

        # ---- data path ----
        self.submodules.gen = gen = PatternGenerator()
        ctx_slot = Signal(5)
        ctx_ram = Signal()          # data to/from RAM
        ctx_check = Signal()        # read data checked against the pattern
        ctx_capture = Signal()      # our READ LOG EXT 10h: keep its first dwords
        ctx_addr = Signal(30)
        n_dwords = Signal(12)       # this Data FIS
        idx = Signal(12)
        in_sector = Signal(7)
        mismatch = Signal()
        # Where this Data FIS starts: the slot's first LBA and RAM address plus what moved.
        dwords_done = Signal(24)
        sectors_done = Signal(17)
        self.comb += [dwords_done.eq(dw_a[ctx_slot]), sectors_done.eq(dwords_done[7:])]
        load_addr = Signal(30)
        self.comb += load_addr.eq((self.data_base + d_word)[2:] + dwords_done)
        rd_left = Signal(12)
        rd_addr = Signal(30)
        self.comb += [
            self.ram_rd_addr.valid.eq(rd_left != 0),
            self.ram_rd_addr.address.eq(rd_addr),
            self.ram_rd_addr.last.eq(rd_left == 1),  # the run's end: a burst ends there
        ]
        rd_start, rd_n = Signal(), Signal(12)
        self.sync += If(rd_start,
            rd_left.eq(rd_n), rd_addr.eq(load_addr)
        ).Elif(self.ram_rd_addr.valid & self.ram_rd_addr.ready,
            rd_left.eq(rd_left - 1), rd_addr.eq(rd_addr + 1)
        )

        # ---- the record writer's view ----
        # These are statements of the RECORD-OUT state (below), not always-on logic: the
        # simulator then evaluates them only while a record is being written.
        cpl_idx = Signal(5)
        cpl_ev = Signal()
        self.comb += ts_r.adr.eq(Cat((cpl_idx - 6)[1:4], cpl_slot))
        ts_word = Signal(64)
        ev = evq.source
        # The result the record gives: the device's success is not the transfer's.
        rec_res, rec_dw, rec_expect = Signal(4), Signal(24), Signal(24)
        rec_proto = desc_field(cur_desc, "protocol")
        rec_fpdma = (rec_proto == PROTO_FPDMA_IN) | (rec_proto == PROTO_FPDMA_OUT)
        rec_sized = rec_fpdma | (rec_proto == PROTO_DMA_IN) | (rec_proto == PROTO_DMA_OUT)
        rec_blocks = Signal(16)
        rec_result = [
            rec_dw.eq(dw_a[cpl_slot]),
            rec_blocks.eq(Mux(rec_fpdma, desc_field(cur_desc, "features"), desc_field(cur_desc, "count"))),
            rec_expect.eq(Cat(C(0, 7), rec_blocks, rec_blocks == 0)),  # 0 asks for 65536
            rec_res.eq(res_a[cpl_slot]),
            If((res_a[cpl_slot] == RESULT_OK) | (res_a[cpl_slot] == RESULT_CHECK_FAILED),
                If((crc_bad >> cpl_slot)[0],
                    rec_res.eq(RESULT_DATA_CRC)
                ).Elif(rec_sized & (rec_dw != rec_expect),
                    rec_res.eq(RESULT_LENGTH)
                )
            ),
        ]
        record_dword = [
            ts_word.eq(Mux((tsv_a[cpl_slot] >> (cpl_idx - 6)[1:4])[0], ts_r.dat_r, 0)),
            If(cpl_ev,
                Case(cpl_idx, {
                    0: self.cpl.data.eq(USER_TAG_EVENT),
                    1: self.cpl.data.eq(Cat(ev.code, ev.result, C(0, 21))),
                    6: self.cpl.data.eq(ev.time[:32]), 7: self.cpl.data.eq(ev.time[32:]),
                    18: self.cpl.data.eq(ev.time[:32]), 19: self.cpl.data.eq(ev.time[32:]),
                })
            ).Else(
                Case(cpl_idx, {
                    0: self.cpl.data.eq(desc_field(cur_desc, "user_tag")),
                    1: self.cpl.data.eq(Cat(cpl_slot, C(0, 3), rec_res, C(0, 4),
                                            st_a[cpl_slot], er_a[cpl_slot])),
                    2: self.cpl.data.eq(lba_a[cpl_slot][:32]),
                    3: self.cpl.data.eq(Cat(lba_a[cpl_slot][32:], chk_a[cpl_slot])),
                    4: self.cpl.data.eq(rec_dw[7:]),
                    5: self.cpl.data.eq(rec_dw),
                    "default": self.cpl.data.eq(Mux(cpl_idx[0], ts_word[32:], ts_word[:32])),
                })
            ),
            self.cpl.last.eq(cpl_idx == CPL_DWORDS - 1),
        ]
        record_dword = rec_result + record_dword  # assigned before the Case reads them

        # ---- the state machine ----
        h2d_slot = Signal(5)
        h2d_kind = Signal(2)
        h2d_idx = Signal(3)
        sweep_mask, sweep_res, sweep_slot = Signal(SLOTS), Signal(4), Signal(5)
        sweep_st, sweep_er = Signal(8), Signal(8)
        sweep_keep = Signal()
        after_sweep_comreset = Signal()

        is_fpdma_in = (in_protocol == PROTO_FPDMA_IN) | (in_protocol == PROTO_FPDMA_OUT)
        no_data_phase = ~data_phase & ~accept_pending
        can_queue = no_data_phase & ~nq_active & ~ncq_error & ~wait_link & any_free
        can_nonqueued = can_queue & (queued == 0)

        rx = receiver
        h = rx.hdr
        d2h_status = fis.field(h, fis.STATUS)
        d2h_error = fis.field(h, fis.ERROR)
        d2h_lba = Cat(fis.field(h, fis.LBA_LO), fis.field(h, fis.LBA_HI))
        sdb_st_now = fis.sdb_status(h)
        sdb_done = Signal(SLOTS)
        self.comb += sdb_done.eq(fis.field(h, fis.SDB_ACTIVE) & queued)

        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")

        def sweep(mask, result, keep=False, then_comreset=False):
            return [NextValue(sweep_mask, mask), NextValue(sweep_res, result),
                    NextValue(sweep_keep, int(keep)),
                    NextValue(after_sweep_comreset, int(then_comreset)), NextState("SWEEP")]

        def reset_protocol():
            return [NextValue(nq_active, 0), NextValue(accept_pending, 0),
                    NextValue(data_phase, 0), NextValue(ncq_error, 0), NextValue(recov, 0),
                    NextValue(resend, 0), NextValue(resend_recov, 0), NextValue(pio, 0)]

        link_lost, link_lost_clear = Signal(), Signal()
        self.sync += If(link_fell, link_lost.eq(1)).Elif(link_lost_clear, link_lost.eq(0))
        fsm.act("IDLE",
            If(link_lost | (~self.link_up & ((issued & ~Mux(wait_link, 1 << wait_link_slot, 0)) != 0)),
                link_lost_clear.eq(1),
                NextValue(sig_seen, 0),
                reset_protocol(),
                sweep(issued & ~Mux(wait_link, 1 << wait_link_slot, 0), RESULT_LINK_LOST)
            ).Elif(tap_tx.valid,
                NextState("TX-TAP")
            ).Elif(txr_pending,
                NextState("TX-RESULT")
            ).Elif(rx.hdr_valid,
                NextState("RX-FIS")
            ).Elif(rx.data_start,
                NextState("DIN-LOAD")
            ).Elif(evq.source.valid,
                NextValue(cpl_idx, 0),
                NextState("EVENT-RECORD")
            ).Elif(cpl_pend != 0,
                lowest_set(cpl_pend, SLOTS, cpl_next),
                NextValue(cpl_idx, 0),
                NextValue(cpl_slot, cpl_next), NextValue(cur, cpl_next),
                NextState("RECORD")
            ).Elif(timeout_hit,
                NextState("TIMEOUT")
            ).Elif(wait_link & self.link_up & sig_seen,
                finish(wait_link_slot, RESULT_OK),
                NextValue(wait_link, 0)
            ).Elif(resend_recov & ~data_phase,
                NextValue(resend_recov, 0),
                NextValue(h2d_kind, TXK_RECOVERY), NextValue(h2d_idx, 0), NextState("H2D")
            ).Elif((resend != 0) & ~data_phase,
                NextState("RESEND")
            ).Elif(ncq_error & ~recov & ~accept_pending & ~data_phase & (self.txq.level == 0),
                NextValue(recov, 1),
                NextValue(h2d_kind, TXK_RECOVERY), NextValue(h2d_idx, 0), NextState("H2D")
            ).Elif(self.desc.valid,
                NextState("ISSUE")
            )
        )
        # One H2D answered by R_ERR goes again (the lowest slot first).
        resend_slot = Signal(5)
        fsm.act("RESEND",
            lowest_set(resend, SLOTS, resend_slot),
            NextValue(cur, resend_slot), NextValue(h2d_slot, resend_slot),
            NextValue(resend, resend & ~(1 << resend_slot)),
            NextValue(h2d_kind, TXK_H2D), NextValue(h2d_idx, 0), NextState("H2D")
        )

        # ---- issuing a descriptor ----
        deadline_now = Signal(64)
        self.comb += deadline_now.eq(now + Mux(in_timeout == 0, default_timeout, in_timeout))
        take = Signal()
        self.comb += [
            desc_w.adr.eq(free_slot), desc_w.dat_w.eq(in_raw), desc_w.we.eq(take),
            dl_w.adr.eq(free_slot), dl_w.we.eq(take),
            dl_w.dat_w.eq(deadline_now),
        ]
        fsm.act("ISSUE",
            lowest_set(~busy, SLOTS, free_slot),
            If(in_protocol > PROTO_LINK,
                If(any_free,
                    take.eq(1), self.desc.ready.eq(1),
                    busy_set.eq(1 << free_slot), new_slot.eq(free_slot), new_slot_we.eq(1),
                    NextValue(cur, free_slot), NextState("REFUSE")
                ).Else(NextState("IDLE"))
            ).Elif(in_protocol == PROTO_POWER,
                If(any_free & ~wait_link,
                    take.eq(1), self.desc.ready.eq(1),
                    busy_set.eq(1 << free_slot), new_slot.eq(free_slot), new_slot_we.eq(1),
                    stamp(free_slot, PH_SUBMIT),
                    If(in_command == POWER_OFF,
                        self.power_off.eq(1),
                    ).Elif(in_command == POWER_ON,
                        self.power_on.eq(1),
                    ).Elif(in_command == POWER_OFF_AT_EVENT,
                        self.power_arm.eq(1),
                    ),
                    NextValue(cur, free_slot),
                    NextState("POWER-DONE")
                ).Else(NextState("IDLE"))
            ).Elif(in_protocol == PROTO_LINK,
                If(any_free & ~wait_link,
                    take.eq(1), self.desc.ready.eq(1),
                    busy_set.eq(1 << free_slot), new_slot.eq(free_slot), new_slot_we.eq(1),
                    stamp(free_slot, PH_SUBMIT),
                    NextValue(cur, free_slot),
                    If(in_command == LINK_COMRESET,
                        self.comreset.eq(1),
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
            ).Elif(~self.link_up,
                # Nothing to send it to: it ends at once, nothing waits on a dead link.
                If(any_free,
                    take.eq(1), self.desc.ready.eq(1),
                    busy_set.eq(1 << free_slot), new_slot.eq(free_slot), new_slot_we.eq(1),
                    stamp(free_slot, PH_SUBMIT),
                    NextValue(cur, free_slot), NextState("LOST")
                ).Else(NextState("IDLE"))
            ).Elif(is_fpdma_in & can_queue | ~is_fpdma_in & can_nonqueued,
                take.eq(1), self.desc.ready.eq(1),
                busy_set.eq(1 << free_slot), new_slot.eq(free_slot), new_slot_we.eq(1),
                stamp(free_slot, PH_SUBMIT),
                NextValue(cur, free_slot), NextValue(h2d_slot, free_slot),
                NextValue(h2d_kind, TXK_H2D), NextValue(h2d_idx, 0),
                If(is_fpdma_in,
                    NextValue(accept_pending, 1), NextValue(accept_slot, free_slot),
                ).Else(
                    NextValue(nq_active, 1), NextValue(nq_slot, free_slot),
                    NextValue(pio, 0),
                ),
                NextState("H2D")
            ).Else(
                NextState("IDLE")
            )
        )
        fsm.act("REFUSE", finish(cur, RESULT_REFUSED), NextState("IDLE"))
        fsm.act("LOST", finish(cur, RESULT_LINK_LOST), NextState("IDLE"))
        # POWER ON ends when the link is up again and the signature came (or its timeout).
        fsm.act("POWER-DONE",
            If(d_protocol == PROTO_POWER,
                If(desc_field(cur_desc, "command") == POWER_ON,
                    NextValue(sig_seen, 0),
                    NextValue(wait_link, 1), NextValue(wait_link_slot, cur),
                ).Elif((desc_field(cur_desc, "command") == POWER_OFF) |
                       (desc_field(cur_desc, "command") == POWER_OFF_AT_EVENT),
                    finish(cur, RESULT_OK),
                ).Else(
                    finish(cur, RESULT_REFUSED),
                )
            ),
            NextState("IDLE")
        )
        self.comb += [
            self.power_arm_event.eq(desc_field(in_raw, "features")[:3]),
            self.power_arm_count.eq(desc_field(in_raw, "count")),
            self.power_arm_delay.eq(in_timeout),
        ]

        # ---- sending a Register H2D (ours, or READ LOG EXT 10h after an NCQ error) ----
        is_fpdma_cur = (d_protocol == PROTO_FPDMA_IN) | (d_protocol == PROTO_FPDMA_OUT)
        count_tagged = Signal(16)
        # The dword being sent, as statements of the H2D state (evaluated only there).
        h2d_dword = If(h2d_kind == TXK_RECOVERY,
            Case(h2d_idx, {
                0: tx.data.eq(fis.REG_H2D | 1 << 15 | READ_LOG_EXT << 16),
                1: tx.data.eq(LOG_NCQ_ERROR | 0x40 << 24),
                3: tx.data.eq(1),
            })
        ).Else(
            count_tagged.eq(Mux(is_fpdma_cur, Cat(d_count[:3], h2d_slot, d_count[8:]), d_count)),
            Case(h2d_idx, {
                0: tx.data.eq(Cat(C(fis.REG_H2D, 8), C(0, 7), C(1, 1),
                                  desc_field(cur_desc, "command"), d_features[:8])),
                1: tx.data.eq(Cat(d_lba[:24], desc_field(cur_desc, "device"))),
                2: tx.data.eq(Cat(d_lba[24:48], d_features[8:])),
                3: tx.data.eq(Cat(count_tagged, desc_field(cur_desc, "icc"),
                                  desc_field(cur_desc, "control"))),
                4: tx.data.eq(desc_field(cur_desc, "aux")),
            })
        )
        fsm.act("H2D",
            tx.valid.eq(1),
            h2d_dword,
            tx.last.eq(h2d_idx == 4),
            If(tx.ready,
                If(h2d_idx == 0,
                    txq.sink.valid.eq(1), txq.sink.kind.eq(h2d_kind), txq.sink.slot.eq(h2d_slot),
                ),
                NextValue(h2d_idx, h2d_idx + 1),
                If(h2d_idx == 4,
                    If((h2d_kind == TXK_H2D) & ((d_protocol == PROTO_DMA_OUT)),
                        NextValue(remaining, Cat(d_count, d_count == 0) << 7),
                    ),
                    NextState("IDLE")
                )
            )
        )

        # ---- what the link said about a frame we sent ----
        fsm.act("TX-RESULT",
            txr_clear.eq(1),
            txq.source.ready.eq(1),
            If(txq.source.valid,
                If(txq.source.kind == TXK_H2D,
                    If(~txr_ok, NextValue(resend, resend | (1 << txq.source.slot)))
                ).Elif(txq.source.kind == TXK_RECOVERY,
                    If(~txr_ok, NextValue(resend_recov, 1))
                ).Elif(txq.source.kind == TXK_DATA,
                    # A Data FIS answered by R_ERR: the device ends the command with its
                    # status, which must not make the record OK.
                    bad_set.eq(~txr_ok), bad_slot.eq(txq.source.slot),
                )
            ),
            NextState("IDLE")
        )
        # A frame we sent reached its EOF on the wire: its record (wire_tap) stamps the
        # frame at the head of txq, the one the link is sending (a frame's R_OK comes before
        # the next frame's SOF). An H2D sent again after R_ERR is stamped again: ts_h2d is
        # the transmission the device accepted.
        tx_last_stamp, tx_slot = Signal(64), Signal(5)
        fsm.act("TX-TAP",
            tap_tx.ready.eq(1),
            tx_tap_bad.eq(~txq.source.valid |
                          (tap_tx.type != Mux(txq.source.kind == TXK_DATA, fis.DATA, fis.REG_H2D))),
            NextState("IDLE"),
            If(txq.source.valid,
                If(txq.source.kind == TXK_H2D,
                    stamp(txq.source.slot, PH_H2D, t=tap_tx.t_fis),
                ).Elif(txq.source.kind == TXK_DATA,
                    stamp(txq.source.slot, PH_DATA_FIRST, first=True, t=tap_tx.t_fis + tap_tx.d_first),
                    NextValue(tx_last_stamp, tap_tx.t_fis + tap_tx.d_last),
                    NextValue(tx_slot, txq.source.slot),
                    NextState("TX-DATA-LAST"),
                )
            )
        )
        fsm.act("TX-DATA-LAST", stamp(tx_slot, PH_DATA_LAST, t=tx_last_stamp), NextState("IDLE"))

        # ---- a non-data FIS from the device ----
        sdb_t = Signal(64)  # the SDB's wire tick, for every tag it completes
        fsm.act("RX-FIS",
            rx.ack.eq(1),
            tap_rx.ready.eq(1),
            rx_tap_bad.eq(~tap_rx.valid | (tap_rx.type != rx.type)),
            NextState("IDLE"),
            If(rx.hdr_crc_error,
                NextValue(self.stat_rx_crc_errors, self.stat_rx_crc_errors + 1),
            ).Elif(rx.type == fis.REG_D2H,
                If(accept_pending,
                    NextValue(accept_pending, 0),
                    If(d2h_status & fis.STATUS_ERR,
                        finish(accept_slot, RESULT_ATA_ERROR, d2h_status, d2h_error, d2h_lba, t=rx_t),
                    ).Else(
                        stamp(accept_slot, PH_ACCEPT, t=rx_t),
                        queued_set.eq(1 << accept_slot),
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
                    ev_push.eq(1), ev_push_code.eq(EV_LINK_UP), ev_push_res.eq(RESULT_OK),
                    ev_push_time.eq(rx_t),
                )
            ).Elif(rx.type == fis.DMA_ACTIVATE,
                If(data_phase & ~data_in,
                    NextState("DOUT-LOAD")
                ).Elif(nq_active & ~data_phase,
                    NextValue(data_phase, 1), NextValue(data_in, 0), NextValue(data_slot, nq_slot),
                    NextState("DOUT-LOAD")
                ),
                stamp(Mux(data_phase, data_slot, nq_slot), PH_SETUP, first=True, t=rx_t),
            ).Elif(rx.type == fis.DMA_SETUP,
                NextValue(data_phase, 1),
                NextValue(data_in, fis.field(h, fis.DIR_D)),
                NextValue(data_slot, fis.field(h, fis.DMA_SETUP_TAG)),
                NextValue(remaining, fis.field(h, fis.DMA_SETUP_COUNT)[2:26]),
                stamp(fis.field(h, fis.DMA_SETUP_TAG), PH_SETUP, first=True, t=rx_t),
                If(~fis.field(h, fis.DIR_D) & fis.field(h, fis.AUTO_ACTIVATE),
                    NextState("DOUT-LOAD")
                )
            ).Elif(rx.type == fis.PIO_SETUP,
                NextValue(pio, 1),
                NextValue(pio_e_status, fis.field(h, fis.PIO_E_STATUS)),
                NextValue(data_phase, 1),
                NextValue(data_in, fis.field(h, fis.DIR_D)),
                NextValue(data_slot, nq_slot),
                NextValue(remaining, fis.field(h, fis.PIO_TRANSFER_COUNT)[2:]),
                If(~recov, stamp(nq_slot, PH_SETUP, first=True, t=rx_t)),
                If(~fis.field(h, fis.DIR_D), NextState("DOUT-LOAD"))
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
                    NextValue(sweep_keep, 0), NextValue(after_sweep_comreset, 0),
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
                If(after_sweep_comreset, self.comreset.eq(1), NextValue(after_sweep_comreset, 0)),
                NextState("IDLE")
            ).Else(
                finish(sweep_slot, sweep_res, Mux(sweep_res == RESULT_NCQ_ABORTED, sdb_st, 0),
                       Mux(sweep_res == RESULT_NCQ_ABORTED, sdb_er, 0), 0, keep=False),
                NextValue(sweep_mask, sweep_mask & ~(1 << sweep_slot)),
            )
        )

        # ---- data from the device ----
        fsm.act("DIN-LOAD",
            NextValue(ctx_slot, Mux(data_phase, data_slot, nq_slot)),
            NextValue(cur, Mux(data_phase, data_slot, nq_slot)),
            # Only our READ LOG EXT's PIO data is the log: a device that still sends a queued
            # read's data after its error SDB must not overwrite what the log will say.
            NextValue(ctx_capture, recov & pio),
            NextState("DIN-LOAD2")
        )
        fsm.act("DIN-LOAD2",
            gen.load.eq(1),
            gen.kind.eq(d_source),
            gen.lba.eq(d_lba + sectors_done),
            gen.word.eq(d_word),
            gen.pct.eq(desc_field(cur_desc, "compress_pct")),
            NextValue(ctx_ram, (d_source == DATA_RAM) & ~ctx_capture),
            NextValue(ctx_check, (d_source >= DATA_ZEROS) & ((d_flags & FLAG_CHECK) != 0)),
            NextValue(ctx_addr, load_addr),
            NextValue(idx, 0), NextValue(in_sector, 0), NextValue(mismatch, 0),
            rx.ack.eq(1),
            NextState("DIN")
        )
        din = rx.data
        din_take = Signal()
        self.comb += [
            self.ram_wr.address.eq(ctx_addr + idx),
            self.ram_wr.data.eq(din.data),
        ]
        fsm.act("DIN",
            If(ctx_ram,
                self.ram_wr.valid.eq(din.valid),
                din.ready.eq(self.ram_wr.ready),
            ).Else(
                din.ready.eq(1)
            ),
            din_take.eq(din.valid & din.ready),
            If(din_take,
                gen.advance.eq(1),
                NextValue(idx, idx + 1),
                NextValue(in_sector, in_sector + 1),
                If(ctx_check & (din.data != gen.data),
                    NextValue(mismatch, 1),
                ),
                If(in_sector == 127,
                    NextValue(mismatch, 0),
                    If(ctx_check & (mismatch | (din.data != gen.data)),
                        chk_inc.eq(1), chk_slot.eq(ctx_slot),
                    )
                ),
                If(din.last,
                    NextState("DIN-FIRST"),
                    NextValue(remaining, Mux(remaining > idx + 1, remaining - (idx + 1), 0)),
                    If(din.error,
                        NextValue(self.stat_rx_crc_errors, self.stat_rx_crc_errors + 1),
                        bad_set.eq(~ctx_capture), bad_slot.eq(ctx_slot),
                    ),
                )
            ),
            If(~self.link_up, NextState("IDLE"))  # the receiver was reset: nothing more comes
        )
        # The log page's first three dwords: tag and NQ, status and error, LBA.
        self.sync += If(fsm.ongoing("DIN") & din_take & ctx_capture,
            Case(idx, {0: log[0].eq(din.data), 1: log[1].eq(din.data), 2: log[2].eq(din.data)}))
        # The Data FIS's wire record: its first payload dword now, its last in DIN-END.
        din_last_t = Signal(64)
        fsm.act("DIN-FIRST",
            tap_rx.ready.eq(1),
            rx_tap_bad.eq(~tap_rx.valid | (tap_rx.type != fis.DATA)),
            If(~ctx_capture,
                stamp(ctx_slot, PH_DATA_FIRST, first=True,
                      t=Mux(tap_rx.valid, tap_rx.t_fis + tap_rx.d_first, now)),
            ),
            NextValue(din_last_t, Mux(tap_rx.valid, tap_rx.t_fis + tap_rx.d_last, now)),
            NextState("DIN-END")
        )
        fsm.act("DIN-END",
            If(~ctx_capture,
                stamp(ctx_slot, PH_DATA_LAST, t=din_last_t),
                dw_add.eq(1), dw_slot.eq(ctx_slot), dw_n.eq(idx),
            ),
            If(remaining == 0, NextValue(data_phase, 0)),
            NextState("IDLE"),
            If(pio & ~(pio_e_status & fis.STATUS_BSY),
                NextValue(pio, 0), NextValue(data_phase, 0),
                If(ctx_capture, NextState("RECOVERED")).Else(NextState("PIO-END"))
            )
        )
        # A PIO-in command's last PIO Setup is its status: no D2H follows. (A cycle of its
        # own: the timestamp memory takes one write a cycle.)
        fsm.act("PIO-END",
            NextValue(nq_active, 0),
            finish(ctx_slot, Mux(pio_e_status & fis.STATUS_ERR, RESULT_ATA_ERROR, RESULT_OK),
                   pio_e_status, 0, 0, t=din_last_t),
            NextState("IDLE")
        )
        # Log 10h read: the failing tag ends with the log's status, error and LBA, every
        # other queued command as aborted.
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

        # ---- data to the device (DMA Activate, DMA Setup with auto-activate, PIO out) ----
        fsm.act("DOUT-LOAD",
            NextValue(ctx_slot, Mux(data_phase, data_slot, nq_slot)),
            NextValue(cur, Mux(data_phase, data_slot, nq_slot)),
            NextState("DOUT-LOAD2")
        )
        fsm.act("DOUT-LOAD2",
            gen.load.eq(1),
            gen.kind.eq(d_source),
            gen.lba.eq(d_lba + sectors_done),
            gen.word.eq(d_word),
            gen.pct.eq(desc_field(cur_desc, "compress_pct")),
            NextValue(ctx_ram, d_source == DATA_RAM),
            NextValue(ctx_addr, load_addr),
            rd_n.eq(Mux(remaining > fis.MAX_DATA_DWORDS, fis.MAX_DATA_DWORDS, remaining)),
            rd_start.eq(d_source == DATA_RAM),
            NextValue(n_dwords, rd_n),
            NextValue(idx, 0),
            NextState("DOUT-HEADER")
        )
        fsm.act("DOUT-HEADER",
            tx.valid.eq(1),
            tx.data.eq(fis.DATA),
            tx.last.eq(n_dwords == 0),
            If(tx.ready,
                txq.sink.valid.eq(1), txq.sink.kind.eq(TXK_DATA), txq.sink.slot.eq(ctx_slot),
                If(n_dwords == 0, NextState("IDLE")).Else(NextState("DOUT"))
            )
        )
        dout_data = Signal(32)
        dout_valid = Signal()
        self.comb += [
            dout_data.eq(Mux(ctx_ram, self.ram_rd_data.data, gen.data)),
            dout_valid.eq(~ctx_ram | self.ram_rd_data.valid),
        ]
        fsm.act("DOUT",
            tx.valid.eq(dout_valid),
            tx.data.eq(dout_data),
            tx.last.eq(idx == n_dwords - 1),
            If(tx.valid & tx.ready,
                self.ram_rd_data.ready.eq(ctx_ram),
                gen.advance.eq(~ctx_ram),
                NextValue(idx, idx + 1),
                If(idx == n_dwords - 1,
                    NextValue(remaining, remaining - n_dwords),
                    NextState("DOUT-END")
                )
            )
        )
        fsm.act("DOUT-END",
            dw_add.eq(1), dw_slot.eq(ctx_slot), dw_n.eq(n_dwords),
            If(remaining == 0, NextValue(data_phase, 0)),
            NextState("IDLE")
        )

        # ---- a slot past its timeout: it ends TIMEOUT, the rest by COMRESET ----
        fsm.act("TIMEOUT",
            timeout_clear.eq(1),
            NextValue(self.stat_timeouts, self.stat_timeouts + 1),
            If(wait_link & (timeout_slot == wait_link_slot),
                NextValue(wait_link, 0),
                finish(timeout_slot, RESULT_TIMEOUT),
                NextState("IDLE")
            ).Elif((issued >> timeout_slot)[0],
                finish(timeout_slot, RESULT_TIMEOUT),
                NextValue(sig_seen, 0),
                reset_protocol(),
                sweep(issued & ~(1 << timeout_slot) & ~Mux(wait_link, 1 << wait_link_slot, 0),
                      RESULT_LINK_LOST, then_comreset=True),
            ).Else(
                NextState("IDLE")
            )
        )

        # ---- records ----
        fsm.act("RECORD",
            NextValue(cpl_ev, 0),
            NextState("RECORD-OUT"),
        )
        fsm.act("RECORD-OUT",
            self.cpl.valid.eq(1),
            record_dword,
            If(self.cpl.ready,
                NextValue(cpl_idx, cpl_idx + 1),
                If(cpl_idx == CPL_DWORDS - 1,
                    If(cpl_ev,
                        evq.source.ready.eq(1),
                    ).Else(
                        cpl_clear.eq(1),
                    ),
                    NextState("IDLE")
                )
            )
        )
        fsm.act("EVENT-RECORD",
            NextValue(cpl_ev, 1),
            NextState("RECORD-OUT")
        )
