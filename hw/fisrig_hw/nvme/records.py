"""The record writer: one struct fisrig_nvme_cpl_record (engine_if.h) a command, 20 dwords on
`cpl`, its fields placed from the header's own offsets (contract.py). A slot's record reads
the slot's fields; a record for a descriptor that took no slot (refused, the controller
down, a LINK or POWER descriptor) comes with its fields given."""
from migen import Array, FSM, If, NextState, NextValue, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from fisrig_hw import contract as _c

FIELDS = {name: (off, n) for name, (off, n, _) in _c.FIELDS["fisrig_nvme_cpl_record"].items()}
CUT_FIELDS = {name: (off, n) for name, (off, n, _) in _c.FIELDS["fisrig_nvme_cut_record"].items()}
RECORD_BYTES = _c.SIZES["fisrig_nvme_cpl_record"]
RECORD_DWORDS = RECORD_BYTES // 4


def place(values: dict, fields=FIELDS):
    """The record's 640 bits from {field: value} (a missing field is 0), fields a record's
    layout (FIELDS, CUT_FIELDS): (signal, comb statements)."""
    rec = Signal(8 * RECORD_BYTES)
    stmts = []
    for name, (off, n) in fields.items():
        if name in values:
            stmts.append(rec[8 * off:8 * (off + n)].eq(values[name]))
    return rec, stmts


class RecordWriter(LiteXModule):
    def __init__(self):
        self.record = Signal(8 * RECORD_BYTES)   # the record to send, held from `start` to `done`
        self.cpl = stream.Endpoint([("data", 32)])
        self.start = Signal()
        self.busy = Signal()
        self.done = Signal()   # the cycle its last dword went

        # # #

        k = Signal(max=RECORD_DWORDS)
        words = Array(self.record[32 * i:32 * (i + 1)] for i in range(RECORD_DWORDS))
        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(self.start, NextValue(k, 0), NextState("SEND")),
        )
        fsm.act("SEND",
            self.busy.eq(1),
            self.cpl.valid.eq(1), self.cpl.data.eq(words[k]), self.cpl.last.eq(k == RECORD_DWORDS - 1),
            If(self.cpl.ready,
                NextValue(k, k + 1),
                If(k == RECORD_DWORDS - 1, self.done.eq(1), NextState("IDLE")),
            ),
        )
