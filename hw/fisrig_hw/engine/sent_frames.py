"""The frames the engine handed the transmitter, in order, and what became of each, on a
machine of its own: when it crossed the pins (the tx wire tap's record stamps an H2D's
ts_h2d and a Data FIS's data stamps, and its dwords count as moved, once the device has
answered it) and whether the device took it. R_ERR on an H2D sends
it again; on a Data FIS the device ends the command with its status, which must not make
the record OK. A frame's R_OK comes before the next frame's SOF, so the frame at the head
of the queue is the one the link is sending.
"""

from migen import *

from litex.soc.interconnect import stream

from fisrig_hw.engine import fis
from fisrig_hw.descriptor import PH_DATA_FIRST, PH_DATA_LAST, PH_H2D, SLOTS
from fisrig_hw.direct_fsm import DirectFSM

# What a frame was.
TXK_H2D, TXK_DATA, TXK_RECOVERY = 0, 1, 2


class SentFrames(Module):
    def __init__(self, slots, stamps, link_up, tx_ok, tx_err, tap_tx):
        # A frame queued (its first dword taken by the transmitter).
        self.push, self.push_kind, self.push_slot, self.push_dwords = Signal(), Signal(2), Signal(5), Signal(12)
        self.level = Signal(3)      # frames not yet answered
        # The sequencer gives the turn while `waiting` (a wire record or an answer to take);
        # `done` on the cycle it ends.
        self.waiting, self.start, self.done = Signal(), Signal(), Signal()
        # H2Ds answered by R_ERR, to send again (our READ LOG EXT apart); the sequencer
        # says when it sent one again (`resent`, `recovery_resent`) or dropped them all.
        self.resend, self.resend_recovery = Signal(SLOTS), Signal()
        self.resent, self.resent_slot, self.recovery_resent, self.forget = Signal(), Signal(5), Signal(), Signal()
        self.tap_bad = Signal()     # a wire record with no frame, or another type's

        # # #

        txq = stream.SyncFIFO([("kind", 2), ("slot", 5), ("dwords", 12)], 4, buffered=False)
        self.submodules.txq = ResetInserter()(txq)
        head = txq.source
        answered, answer_ok, answer_taken = Signal(), Signal(), Signal()
        # The head frame's wire record is in (wire_*): a record behind it (the next frame's
        # EOF) waits until the head's answer has been taken.
        wire_taken = Signal()
        self.comb += [
            txq.reset.eq(~link_up), self.level.eq(txq.level),
            txq.sink.valid.eq(self.push), txq.sink.kind.eq(self.push_kind), txq.sink.slot.eq(self.push_slot),
            txq.sink.dwords.eq(self.push_dwords),
            self.waiting.eq((tap_tx.valid & ~wire_taken) | answered),
        ]
        self.sync += If(tx_ok | tx_err,
            answered.eq(1), answer_ok.eq(tx_ok)
        ).Elif(answer_taken | ~link_up,
            answered.eq(0)
        )

        # Where the head frame crossed the pins (ON-WIRE takes its wire record at its EOF):
        # stamped once the device has answered it (ANSWER), as engine_if.h defines ts_h2d
        # (the transmission the device accepted) and as a cut's record counts what moved: a
        # frame the rig sent after the drive's power went (the transmitter goes on until
        # the link sees the drive gone, 4,000 ticks after a cut) is never answered, so it
        # is neither stamped nor counted. (A write cut 100 ticks into its 3rd Data FIS
        # counted 3 FISes when they counted as handed to the link, 2 now.)
        wire_t, wire_first, wire_last = Signal(64), Signal(64), Signal(64)
        last_slot = Signal(5)
        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(self.forget, NextValue(self.resend, 0), NextValue(self.resend_recovery, 0)),
            If(~link_up, NextValue(wire_taken, 0)),  # the frames went with the link
            If(self.resent, NextValue(self.resend, self.resend & ~(1 << self.resent_slot))),
            If(self.recovery_resent, NextValue(self.resend_recovery, 0)),
            If(self.start,
                If(answered & wire_taken, NextState("ANSWER")
                ).Elif(tap_tx.valid & ~wire_taken, NextState("ON-WIRE")
                ).Else(NextState("ANSWER")))
        )
        fsm.act("ANSWER",
            answer_taken.eq(1),
            head.ready.eq(1),
            NextValue(wire_taken, 0),
            self.done.eq(1), NextState("IDLE"),
            If(head.valid,
                If(head.kind == TXK_H2D,
                    If(answer_ok,
                        stamps.stamp(head.slot, PH_H2D, t=wire_t),
                    ).Else(
                        NextValue(self.resend, self.resend | (1 << head.slot))
                    )
                ).Elif(head.kind == TXK_RECOVERY,
                    If(~answer_ok, NextValue(self.resend_recovery, 1))
                ).Elif(head.kind == TXK_DATA,
                    # R_ERR too: the Data FIS crossed, and failed its CRC (DATA_CRC).
                    slots.bad_tx.eq(~answer_ok), slots.bad_tx_slot.eq(head.slot),
                    slots.tx_dw_add.eq(1), slots.tx_dw_slot.eq(head.slot), slots.tx_dw_n.eq(head.dwords),
                    stamps.stamp(head.slot, PH_DATA_FIRST, first=True, t=wire_first),
                    NextValue(last_slot, head.slot),
                    self.done.eq(0), NextState("DATA-LAST"),
                )
            )
        )
        # The frame reached its EOF on the wire: where its dwords crossed, for ANSWER. An
        # H2D sent again after R_ERR is stamped again: ts_h2d is the transmission the
        # device accepted.
        fsm.act("ON-WIRE",
            tap_tx.ready.eq(1),
            self.tap_bad.eq(~head.valid | (tap_tx.type != Mux(head.kind == TXK_DATA, fis.DATA, fis.REG_H2D))),
            NextValue(wire_t, tap_tx.t_fis),
            NextValue(wire_first, tap_tx.t_fis + tap_tx.d_first),
            NextValue(wire_last, tap_tx.t_fis + tap_tx.d_last),
            NextValue(wire_taken, 1),
            self.done.eq(1), NextState("IDLE"),
        )
        # (A cycle of its own: the timestamp memory takes one write a cycle.)
        fsm.act("DATA-LAST", stamps.stamp(last_slot, PH_DATA_LAST, t=wire_last), self.done.eq(1), NextState("IDLE"))

    def queue(self, kind, slot, dwords=0):
        """Statements queueing a frame (on the cycle its first dword is taken); a Data FIS's
        payload dwords."""
        return [self.push.eq(1), self.push_kind.eq(kind), self.push_slot.eq(slot), self.push_dwords.eq(dwords)]
