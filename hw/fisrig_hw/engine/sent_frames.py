"""The frames the engine handed the transmitter, in order, and what became of each, on a
machine of its own: when it crossed the pins (the tx wire tap's record stamps an H2D's
ts_h2d and a Data FIS's data stamps) and whether the device took it. R_ERR on an H2D sends
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
        self.push, self.push_kind, self.push_slot = Signal(), Signal(2), Signal(5)
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

        txq = stream.SyncFIFO([("kind", 2), ("slot", 5)], 4, buffered=False)
        self.submodules.txq = ResetInserter()(txq)
        head = txq.source
        answered, answer_ok, answer_taken = Signal(), Signal(), Signal()
        self.comb += [
            txq.reset.eq(~link_up), self.level.eq(txq.level),
            txq.sink.valid.eq(self.push), txq.sink.kind.eq(self.push_kind), txq.sink.slot.eq(self.push_slot),
            self.waiting.eq(tap_tx.valid | answered),
        ]
        self.sync += If(tx_ok | tx_err,
            answered.eq(1), answer_ok.eq(tx_ok)
        ).Elif(answer_taken | ~link_up,
            answered.eq(0)
        )

        last_t, last_slot = Signal(64), Signal(5)
        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(self.forget, NextValue(self.resend, 0), NextValue(self.resend_recovery, 0)),
            If(self.resent, NextValue(self.resend, self.resend & ~(1 << self.resent_slot))),
            If(self.recovery_resent, NextValue(self.resend_recovery, 0)),
            If(self.start, If(tap_tx.valid, NextState("ON-WIRE")).Else(NextState("ANSWER")))
        )
        fsm.act("ANSWER",
            answer_taken.eq(1),
            head.ready.eq(1),
            If(head.valid,
                If(head.kind == TXK_H2D,
                    If(~answer_ok, NextValue(self.resend, self.resend | (1 << head.slot)))
                ).Elif(head.kind == TXK_RECOVERY,
                    If(~answer_ok, NextValue(self.resend_recovery, 1))
                ).Elif(head.kind == TXK_DATA,
                    slots.bad_tx.eq(~answer_ok), slots.bad_tx_slot.eq(head.slot),
                )
            ),
            self.done.eq(1), NextState("IDLE")
        )
        # The frame reached its EOF on the wire. An H2D sent again after R_ERR is stamped
        # again: ts_h2d is the transmission the device accepted.
        fsm.act("ON-WIRE",
            tap_tx.ready.eq(1),
            self.tap_bad.eq(~head.valid | (tap_tx.type != Mux(head.kind == TXK_DATA, fis.DATA, fis.REG_H2D))),
            self.done.eq(1), NextState("IDLE"),
            If(head.valid,
                If(head.kind == TXK_H2D,
                    stamps.stamp(head.slot, PH_H2D, t=tap_tx.t_fis),
                ).Elif(head.kind == TXK_DATA,
                    stamps.stamp(head.slot, PH_DATA_FIRST, first=True, t=tap_tx.t_fis + tap_tx.d_first),
                    NextValue(last_t, tap_tx.t_fis + tap_tx.d_last),
                    NextValue(last_slot, head.slot),
                    self.done.eq(0), NextState("DATA-LAST"),
                )
            )
        )
        # (A cycle of its own: the timestamp memory takes one write a cycle.)
        fsm.act("DATA-LAST", stamps.stamp(last_slot, PH_DATA_LAST, t=last_t), self.done.eq(1), NextState("IDLE"))

    def queue(self, kind, slot):
        """Statements queueing a frame (on the cycle its first dword is taken)."""
        return [self.push.eq(1), self.push_kind.eq(kind), self.push_slot.eq(slot)]
