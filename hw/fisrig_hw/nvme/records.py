"""The record writer: one struct fisrig_nvme_cpl_record (engine_if.h) a command, 20 dwords on
`cpl`, its fields placed from the header's own offsets (contract.py). A slot's record reads
the slot's fields; a record for a descriptor that took no slot (refused, the controller
down, a LINK or POWER descriptor) comes with its fields given."""
from migen import Array, FSM, If, Mux, NextState, NextValue, Signal

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


R = {k[len("FISRIG_RESULT_"):]: getattr(_c, k) for k in _c.ENUMS["fisrig_result"]}


def slot_record(f: dict, slot, forced, forced_result, when):
    """A slot's record from its fields' values (engine.py's field memories read at `slot`:
    meta, submit, doorbell, sqe, irq, cqe, status, out, in), its result what happened: the
    CQE's status, LENGTH where the data moved was not the buffer's, CHECK_FAILED where a
    checked block differed; or `forced_result` (a timeout, a cut) with its end at `when`.
    (record bits, comb statements)."""
    meta, st, o, n_in = f["meta"], f["status"], f["out"], f["in"]
    m_bytes, m_dir, m_own, m_check = meta[41:63], meta[39:41], meta[38], meta[37]
    dwords = Signal(21)
    status = st[:16]
    length_wrong, checked = Signal(), Signal()
    result = Signal(4)
    stmts = [
        dwords.eq(o[128:148] + n_in[128:148]),
        length_wrong.eq(~m_own & (m_bytes != 0) & (m_dir != 0) & ((dwords << 2) != m_bytes)),
        checked.eq(m_check & (status == 0) & ~length_wrong),
        result.eq(Mux(forced, forced_result,
                      Mux(status != 0, R["ATA_ERROR"],
                          Mux(length_wrong, R["LENGTH"],
                              Mux(checked & (n_in[148:164] != 0), R["CHECK_FAILED"], R["OK"]))))),
    ]
    rec, more = place({
        "user_tag": meta[:32], "slot": slot, "result": result, "status": Mux(forced, 0, status),
        "dw0": Mux(forced, 0, st[16:48]), "qid": meta[32:37], "check_errors": Mux(checked, n_in[148:164], 0),
        "blocks": dwords >> 7, "data_dwords": dwords,
        "ts_submit": f["submit"], "ts_doorbell": f["doorbell"], "ts_sqe": f["sqe"],
        "ts_irq": Mux(forced, 0, f["irq"]),
        "ts_data_first": Mux(o[:64] != 0, o[:64], n_in[:64]),
        "ts_data_last": Mux(o[64:128] != 0, o[64:128], n_in[64:128]),
        "ts_cqe": Mux(forced, when, f["cqe"]),
    })
    return rec, stmts + more


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
