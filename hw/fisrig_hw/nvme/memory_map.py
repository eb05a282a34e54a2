"""The engine's part of the rig's memory as the controller addresses it: engine_if.h's
FISRIG_NVME_RIG_* map (the model target's engine lays its memory out the same). Only the SQs
are memory (block RAM, written from the descriptors); PRP lists and a write's data are
computed when the controller reads them, and what it writes (CQEs, MSI-X messages, a read's
data) is taken as it crosses, never stored."""
from migen import If, Signal

from fisrig_hw import contract as _c

ASQ, ACQ, MSIX = _c.FISRIG_NVME_RIG_ASQ, _c.FISRIG_NVME_RIG_ACQ, _c.FISRIG_NVME_RIG_MSIX
IO_QUEUES, LISTS, DATA = _c.FISRIG_NVME_RIG_IO_QUEUES, _c.FISRIG_NVME_RIG_LISTS, _c.FISRIG_NVME_RIG_DATA
ADMIN_ENTRIES = _c.FISRIG_NVME_RIG_ADMIN_ENTRIES
SLOT_BYTES = _c.FISRIG_NVME_DATA_MAX
SLOT_SHIFT = SLOT_BYTES.bit_length() - 1
QUEUE_SPAN = 1 << 20          # I/O queue pair q: its CQ at IO_QUEUES + q * QUEUE_SPAN
SQ_AFTER_CQ = QUEUE_SPAN // 2  # and its SQ this far after
SQE_BYTES, CQE_BYTES = _c.FISRIG_NVME_SQE_BYTES, _c.FISRIG_NVME_CQE_BYTES
PAGE = 4096
assert SLOT_BYTES == 1 << SLOT_SHIFT and IO_QUEUES == QUEUE_SPAN


def cq_address(q: int) -> int:
    return ACQ if q == 0 else IO_QUEUES + q * QUEUE_SPAN


def sq_address(q: int) -> int:
    return ASQ if q == 0 else IO_QUEUES + q * QUEUE_SPAN + SQ_AFTER_CQ


def buffer_address(slot: int) -> int:
    return DATA + slot * SLOT_BYTES


def list_address(slot: int) -> int:
    return LISTS + slot * PAGE


class Decoded:
    """What an address is in the map, as logic (comb statements in `.comb`): queue q's SQ or CQ
    (q 0 the admin queue's), the MSI-X messages' dword, a slot's PRP list or data buffer, each with the
    byte offset in it. Queues past `queues`, slots past `slots` and the admin queue past
    ADMIN_ENTRIES decode to nothing."""

    def __init__(self, adr, queues: int, slots: int, io_entries: int):
        self.sq, self.cq, self.msix, self.list, self.data = (Signal() for _ in range(5))
        self.queue = Signal(max=queues + 1)
        self.slot = Signal(max=max(slots, 2))
        self.offset = Signal(SLOT_SHIFT)  # bytes into the SQ, CQ, list or buffer
        mib = adr[20:28]  # I/O queue pair q's CQ at IO_QUEUES + q MiB: bits 27..20 are q + 1
        io_q = Signal(8)
        in_io = (adr[28:32] == 0) & (mib >= 2) & (mib <= queues + 1)
        slot_d = (adr - DATA)[SLOT_SHIFT:32]
        slot_l = (adr - LISTS)[12:27]
        self.comb = [
            io_q.eq(mib - 1),
            self.sq.eq(((adr >= ASQ) & (adr < ASQ + ADMIN_ENTRIES * SQE_BYTES)) |
                       (in_io & adr[19] & (adr[:19] < io_entries * SQE_BYTES))),
            self.cq.eq(((adr >= ACQ) & (adr < ACQ + ADMIN_ENTRIES * CQE_BYTES)) |
                       (in_io & ~adr[19] & (adr[:19] < io_entries * CQE_BYTES))),
            self.queue.eq(0),
            self.offset.eq(adr[:16]),  # the admin queues' (ASQ and ACQ are 64 KiB aligned)
            If(in_io, self.queue.eq(io_q), self.offset.eq(adr[:19])),
            self.msix.eq((adr >= MSIX) & (adr < MSIX + 4)),
            self.list.eq((adr >= LISTS) & (adr < LISTS + slots * PAGE)),
            self.data.eq((adr >= DATA) & (adr < DATA + slots * SLOT_BYTES)),
            self.slot.eq(0),
            If(self.list, self.slot.eq(slot_l), self.offset.eq(adr[:12])),
            If(self.data, self.slot.eq(slot_d), self.offset.eq(adr[:SLOT_SHIFT])),
        ]


def covers(adr, queues: int, slots: int):
    """Whether an address is in the engine's map (an expression: the root port's slave port
    decoder); what in it is nothing (between the admin queues) the completer refuses and the
    writes count stray."""
    return (((adr >= ASQ) & (adr < ACQ + ADMIN_ENTRIES * CQE_BYTES)) |
            ((adr >= MSIX) & (adr < MSIX + 4)) |
            ((adr >= IO_QUEUES) & (adr < IO_QUEUES + (queues + 1) * QUEUE_SPAN)) |
            ((adr >= LISTS) & (adr < LISTS + slots * PAGE)) |
            ((adr >= DATA) & (adr < DATA + slots * SLOT_BYTES)))
