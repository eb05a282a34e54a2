"""The record writer: a slot's completion record, or an engine event's, as 20 dwords on
`cpl` (struct fisrig_cpl_record, engine_if.h), on a machine of its own.

The record says what happened, not only what the device said: a transfer whose Data FIS
failed its CRC ends DATA_CRC and one that moved other than its command asked for ends
LENGTH, whatever the status. Events (a cut, the link falling or coming up) come at link
speed or slower and wait in a queue while the record stream is held (a full completion
ring); one that finds no room is counted, never silently dropped. A cut's record carries
the 32 slots' state on the cut's cycle (struct fisrig_cut_record, engine_if.h). The current
sampler's records (current.py) are events too, after those in the queue.
"""

from migen import *

from litex.soc.interconnect import stream

from fisrig_hw.descriptor import (CPL_DWORDS, CURRENT_FIELDS, CURRENT_SAMPLES, CUT_MASKS, CUT_TRIGGER, EV_CURRENT, EV_LINK_DOWN, EV_POWER_CUT, PH_H2D, Protocol,
                                  SLOTS, RESULT_CHECK_FAILED, RESULT_DATA_CRC,
                                  RESULT_LENGTH, RESULT_LINK_LOST, RESULT_OK, USER_TAG_EVENT, desc_field)
from fisrig_hw.direct_fsm import DirectFSM


class RecordWriter(Module):
    def __init__(self, slots, now, current):
        self.cpl = stream.Endpoint([("data", 32)])
        # The sequencer gives the writer its turn: a slot's record, or the event at the head
        # of the queue (`event_waiting`); `done` on the cycle the last dword goes.
        self.start, self.start_event, self.start_slot = Signal(), Signal(), Signal(5)
        self.done = Signal()
        self.event_waiting = Signal()
        # Events: the cut and the link falling come from outside; the sequencer pushes the rest.
        self.power_cut, self.link_fell = Signal(), Signal()
        self.power_trigger = Signal(64)  # the power controller's trigger tick (a cut's ts_trigger)
        self.push, self.push_code, self.push_result, self.push_time = Signal(), Signal(8), Signal(3), Signal(64)
        self.stat_events_lost = Signal(32)
        # A command's record as it goes, for the capture's result triggers: on the cycle of its
        # last dword, its result and the tick of the status that gave it (its ts_status; for
        # the command an NCQ error failed, the error SDB's, which the sequencer says with
        # `recovered` as it ends the slot).
        self.result_done, self.result, self.result_tick = Signal(), Signal(4), Signal(64)
        self.recovered, self.recovered_slot, self.recovered_tick = Signal(), Signal(5), Signal(64)

        # # #

        evq = stream.SyncFIFO([("code", 8), ("result", 3), ("time", 64)], 16)
        self.submodules.evq = evq
        self.sync += If(evq.sink.valid & ~evq.sink.ready,
                        self.stat_events_lost.eq(self.stat_events_lost + 1))
        self.comb += [
            self.event_waiting.eq(evq.source.valid | current.waiting),
            evq.sink.valid.eq(self.push | self.power_cut | (self.link_fell & ~self.power_cut)),
            If(self.power_cut,
                evq.sink.code.eq(EV_POWER_CUT), evq.sink.result.eq(RESULT_LINK_LOST),
                evq.sink.time.eq(now),  # the cut is this cycle
            ).Elif(self.link_fell,
                evq.sink.code.eq(EV_LINK_DOWN), evq.sink.result.eq(RESULT_LINK_LOST),
                evq.sink.time.eq(now),
            ).Else(
                evq.sink.code.eq(self.push_code), evq.sink.result.eq(self.push_result),
                evq.sink.time.eq(self.push_time),
            )
        ]

        # What the record says: these are statements of the OUT state, not always-on logic,
        # so the simulator evaluates them only while a record is being written.
        idx, slot, event = Signal(5), Signal(5), Signal()
        sampled = Signal()  # the event is the current sampler's record, not the queue's
        ma_at, period_at, first_at = (CURRENT_FIELDS[name][0] for name in ("ma", "period_ticks", "ts_first"))
        assert (CURRENT_FIELDS["samples"][0], CURRENT_FIELDS["dropped"][0]) == (6, 7)  # dword 1, as written
        cut_masks = {name: Signal(SLOTS, name=name) for name in CUT_MASKS}
        cut_trigger = Signal(64)
        cut_issued, cut_queued, cut_data, cut_done = (cut_masks[n] for n in
                                                      ("slots_issued", "slots_queued", "slots_data", "slots_done"))
        writing = Signal()
        desc = slots.desc_reader(slot, writing)
        ts_word = Signal(64)
        ts = slots.stamp_reader(Cat((idx - 6)[1:4], slot))
        ev = evq.source
        cpl = self.cpl
        # The result the record gives: the device's success is not the transfer's.
        rec_res, rec_dw, rec_expect, rec_blocks = Signal(4), Signal(24), Signal(24), Signal(16)
        proto = desc_field(desc, "protocol")
        fpdma = (proto == Protocol.FPDMA_IN) | (proto == Protocol.FPDMA_OUT)
        sized = fpdma | (proto == Protocol.DMA_IN) | (proto == Protocol.DMA_OUT)
        res = slots.res[slot]
        result = [
            rec_dw.eq(slots.dwords[slot]),
            rec_blocks.eq(Mux(fpdma, desc_field(desc, "features"), desc_field(desc, "count"))),
            rec_expect.eq(Cat(C(0, 7), rec_blocks, rec_blocks == 0)),  # 0 asks for 65536
            rec_res.eq(res),
            If((res == RESULT_OK) | (res == RESULT_CHECK_FAILED),
                If((slots.crc_bad >> slot)[0],
                    rec_res.eq(RESULT_DATA_CRC)
                ).Elif(sized & (rec_dw != rec_expect),
                    rec_res.eq(RESULT_LENGTH)
                )
            ),
        ]
        dword = [
            ts_word.eq(Mux((slots.stamped[slot] >> (idx - 6)[1:4])[0], ts, 0)),
            If(sampled,  # struct fisrig_current_record, at the header's offsets
                Case(idx, {
                    0: cpl.data.eq(USER_TAG_EVENT),
                    1: cpl.data.eq(Cat(C(EV_CURRENT, 8), C(0, 8), current.out_count, C(0, 8 - len(current.out_count)),
                                       current.out_dropped)),
                    **{ma_at // 4 + i: cpl.data.eq(current.out_ma[32 * i:32 * (i + 1)])
                       for i in range(CURRENT_SAMPLES // 2)},
                    period_at // 4: cpl.data.eq(current.out_period),
                    first_at // 4: cpl.data.eq(current.out_first[:32]),
                    first_at // 4 + 1: cpl.data.eq(current.out_first[32:]),
                })
            ).Elif(event,
                Case(idx, {
                    0: cpl.data.eq(USER_TAG_EVENT),
                    1: cpl.data.eq(Cat(ev.code, ev.result, C(0, 21))),
                    **{CUT_MASKS[name][0] // 4: cpl.data.eq(Mux(ev.code == EV_POWER_CUT, mask, 0))
                       for name, mask in cut_masks.items()},
                    CUT_TRIGGER // 4: cpl.data.eq(Mux(ev.code == EV_POWER_CUT, cut_trigger[:32], 0)),
                    CUT_TRIGGER // 4 + 1: cpl.data.eq(Mux(ev.code == EV_POWER_CUT, cut_trigger[32:], 0)),
                    6: cpl.data.eq(ev.time[:32]), 7: cpl.data.eq(ev.time[32:]),
                    18: cpl.data.eq(ev.time[:32]), 19: cpl.data.eq(ev.time[32:]),
                })
            ).Else(
                Case(idx, {
                    0: cpl.data.eq(desc_field(desc, "user_tag")),
                    1: cpl.data.eq(Cat(slot, C(0, 3), rec_res, C(0, 4), slots.status[slot], slots.error[slot])),
                    2: cpl.data.eq(slots.lba[slot][:32]),
                    3: cpl.data.eq(Cat(slots.lba[slot][32:], slots.check_errors[slot])),
                    4: cpl.data.eq(rec_dw[7:]),
                    5: cpl.data.eq(rec_dw),
                    "default": cpl.data.eq(Mux(idx[0], ts_word[32:], ts_word[:32])),
                })
            ),
            cpl.last.eq(idx == CPL_DWORDS - 1),
        ]

        rcv_valid, rcv_slot, rcv_tick = Signal(), Signal(5), Signal(64)
        from_error_sdb = rcv_valid & (rcv_slot == slot)
        self.sync += If(self.recovered,
            rcv_valid.eq(1), rcv_slot.eq(self.recovered_slot), rcv_tick.eq(self.recovered_tick)
        ).Elif(self.result_done & from_error_sdb, rcv_valid.eq(0))
        self.comb += [self.result.eq(rec_res), self.result_tick.eq(Mux(from_error_sdb, rcv_tick, ts_word))]

        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")
        self.comb += writing.eq(fsm.ongoing("OUT"))
        # The slots' state on the cut's cycle, latched there (only a POWER descriptor arms the
        # next cut, and the sequencer writes this one's record before it takes another). The
        # masks are evaluated only on that cycle, not every cycle of the simulation.
        # A slot whose record the writer has begun goes out before the cut's: not in them.
        held = slots.busy & ~Mux(~fsm.ongoing("IDLE") & ~event, 1 << slot, 0)
        self.sync += If(self.power_cut,
            cut_trigger.eq(self.power_trigger),
            cut_issued.eq(Cat(*[slots.stamped[i][PH_H2D] for i in range(SLOTS)]) & held),
            cut_queued.eq(slots.queued & held),
            cut_data.eq(Cat(*[slots.dwords[i] != 0 for i in range(SLOTS)]) & held),
            cut_done.eq(slots.cpl_pend & held),
        )

        fsm.act("IDLE",
            If(self.start,
                NextValue(idx, 0), NextValue(event, self.start_event), NextValue(slot, self.start_slot),
                NextValue(sampled, self.start_event & ~evq.source.valid),
                NextState("TAKE")
            )
        )
        # A cycle to take the turn, as when the sequencer wrote records itself: without it
        # every FIS answer after a record moves a cycle earlier (a measured change of its own,
        # not this one: the benchmarks' records stay as they were).
        fsm.act("TAKE", NextState("OUT"))
        fsm.act("OUT",
            cpl.valid.eq(1),
            result, dword,  # the result assigned before the Case reads it
            If(cpl.ready,
                NextValue(idx, idx + 1),
                If(idx == CPL_DWORDS - 1,
                    If(sampled,
                        current.taken.eq(1),
                    ).Elif(event,
                        evq.source.ready.eq(1),
                    ).Else(
                        slots.cpl_clear.eq(1), slots.cpl_slot.eq(slot),
                        self.result_done.eq(1),  # ts_word is ts_status on this last dword
                    ),
                    self.done.eq(1),
                    NextState("IDLE")
                )
            )
        )
