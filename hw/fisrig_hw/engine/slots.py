"""The engine's 32 slots: what each holds from the cycle its descriptor is taken to the
cycle its record is written, and how it ended.

Per slot: the descriptor, a deadline, a stamp per phase (the record's ts_* fields, with a
bit each saying whether it was stamped) and the result fields (result, status, error, LBA,
dwords moved, sectors that failed their check). The sequencer and the data phase write
through ports of their own, one write of each kind a cycle; the record writer reads. The
deadline memory is scanned here for a slot past its timeout, one slot a cycle.
"""

from functools import reduce
from operator import or_

from migen import *

from fisrig_hw.descriptor import (DESC_BITS, PH_STATUS, PH_SUBMIT, RESULT_CHECK_FAILED, RESULT_OK,
                                  SLOTS)


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


class StampPort:
    """One client's way into the stamp memory. `first`: only if the phase has no stamp yet
    (a write's first DMA Activate, a read's first Data FIS)."""
    def __init__(self, now):
        self.now = now
        self.we, self.slot, self.phase, self.val, self.first = Signal(), Signal(5), Signal(3), Signal(64), Signal()

    def stamp(self, slot, phase, first=False, t=None):
        return [self.we.eq(1), self.slot.eq(slot), self.phase.eq(phase),
                self.val.eq(self.now if t is None else t), self.first.eq(int(first))]


class SlotTable(Module):
    def __init__(self, now, default_timeout):
        self.now = now
        self.desc_mem = Memory(DESC_BITS, SLOTS)
        ts_mem = Memory(64, SLOTS * 8)
        deadline_mem = Memory(64, SLOTS)
        desc_w = self.desc_mem.get_port(write_capable=True)
        self._desc_r = self.desc_mem.get_port(async_read=True)
        self.specials += self._desc_r
        self.ts_mem, self.ts_w = ts_mem, ts_mem.get_port(write_capable=True)
        dl_w = deadline_mem.get_port(write_capable=True)
        dl_r = deadline_mem.get_port(async_read=True)
        self.specials += self.desc_mem, ts_mem, deadline_mem, desc_w, self.ts_w, dl_w, dl_r

        self.res = Array(Signal(4) for _ in range(SLOTS))
        self.status = Array(Signal(8) for _ in range(SLOTS))
        self.error = Array(Signal(8) for _ in range(SLOTS))
        self.lba = Array(Signal(48) for _ in range(SLOTS))
        # Data dwords moved, either way: whole sectors are dwords >> 7; a transfer that moved
        # other than its command asked for is told from the exact count (RESULT_LENGTH).
        self.dwords = Array(Signal(24) for _ in range(SLOTS))
        self.check_errors = Array(Signal(16) for _ in range(SLOTS))
        self.stamped = Array(Signal(7) for _ in range(SLOTS))  # which phases have a stamp

        self.busy = busy = Signal(SLOTS)          # holds a descriptor whose record is not written yet
        self.crc_bad = crc_bad = Signal(SLOTS)    # a Data FIS of the slot failed its CRC (either way)
        self.queued = queued = Signal(SLOTS)      # NCQ commands the device holds
        self.cpl_pend = cpl_pend = Signal(SLOTS)  # ended, record to write
        self.issued = Signal(SLOTS)
        self.any_free = Signal()
        self.comb += [self.issued.eq(busy & ~cpl_pend), self.any_free.eq(~busy != 0)]

        # Taking a descriptor into a free slot (the sequencer's ISSUE state finds it).
        self.free_slot = Signal(5)
        self.take, self.take_desc, self.take_timeout = Signal(), Signal(DESC_BITS), Signal(32)
        # Ending a slot (the sequencer): result and D2H fields; `keep` keeps those stored.
        self.fin, self.fin_slot, self.fin_res = Signal(), Signal(5), Signal(4)
        self.fin_st, self.fin_er, self.fin_lba, self.fin_keep = Signal(8), Signal(8), Signal(48), Signal()
        # The data phase's counts, and the Data FISes that failed their CRC (either side's).
        self.dw_add, self.dw_slot, self.dw_n = Signal(), Signal(5), Signal(12)
        # Sent Data FISes count when they have crossed the pins (sent_frames): a port of their own.
        self.tx_dw_add, self.tx_dw_slot, self.tx_dw_n = Signal(), Signal(5), Signal(12)
        self.chk_inc, self.chk_slot = Signal(), Signal(5)
        self.bad_tx, self.bad_tx_slot, self.bad_rx, self.bad_rx_slot = Signal(), Signal(5), Signal(), Signal(5)
        self.queued_set = Signal(SLOTS)
        # The record writer: the slot's record is out.
        self.cpl_clear, self.cpl_slot = Signal(), Signal(5)
        self._stamp_ports = []
        self._desc_readers = []

        # # #

        deadline = Signal(64)
        self.comb += [
            deadline.eq(now + Mux(self.take_timeout == 0, default_timeout, self.take_timeout)),
            desc_w.adr.eq(self.free_slot), desc_w.dat_w.eq(self.take_desc), desc_w.we.eq(self.take),
            dl_w.adr.eq(self.free_slot), dl_w.dat_w.eq(deadline), dl_w.we.eq(self.take),
        ]
        fin_result = Signal(4)
        self.comb += fin_result.eq(Mux((self.fin_res == RESULT_OK) & (self.check_errors[self.fin_slot] != 0),
                                       RESULT_CHECK_FAILED, self.fin_res))
        new = self.free_slot
        self.sync += [
            If(self.ts_w.we, self.stamped[self._ts_slot()].eq(self.stamped[self._ts_slot()] | (1 << self._ts_phase()))),
            If(self.take,
                self.stamped[new].eq(1 << PH_SUBMIT), self.res[new].eq(RESULT_OK),
                self.status[new].eq(0), self.error[new].eq(0), self.lba[new].eq(0),
                self.dwords[new].eq(0), self.check_errors[new].eq(0),
            ),
            If(self.fin,
                self.res[self.fin_slot].eq(fin_result),
                If(~self.fin_keep, self.status[self.fin_slot].eq(self.fin_st),
                   self.error[self.fin_slot].eq(self.fin_er), self.lba[self.fin_slot].eq(self.fin_lba)),
            ),
            If(self.dw_add, self.dwords[self.dw_slot].eq(self.dwords[self.dw_slot] + self.dw_n)),
            # (Never the same slot as dw_add: a command's data goes one way.)
            If(self.tx_dw_add, self.dwords[self.tx_dw_slot].eq(self.dwords[self.tx_dw_slot] + self.tx_dw_n)),
            If(self.chk_inc, self.check_errors[self.chk_slot].eq(self.check_errors[self.chk_slot] + 1)),
        ]
        fin_mask = Signal(SLOTS)
        out = Signal(SLOTS)
        self.comb += [fin_mask.eq(Mux(self.fin, 1 << self.fin_slot, 0)),
                      out.eq(Mux(self.cpl_clear, 1 << self.cpl_slot, 0))]
        self.sync += [
            busy.eq((busy | Mux(self.take, 1 << new, 0)) & ~out),
            cpl_pend.eq((cpl_pend | fin_mask) & ~out),
            queued.eq((queued | self.queued_set) & ~fin_mask),
            crc_bad.eq((crc_bad | Mux(self.bad_tx, 1 << self.bad_tx_slot, 0) | Mux(self.bad_rx, 1 << self.bad_rx_slot, 0))
                       & ~Mux(self.take, 1 << new, 0)),
        ]

        # A slot past its deadline: one slot looked at per cycle.
        scan = Signal(5)
        self.timeout_hit, self.timeout_slot, self.timeout_clear = Signal(), Signal(5), Signal()
        self.comb += dl_r.adr.eq(scan)
        self.sync += [
            scan.eq(scan + 1),
            If(self.timeout_clear,
                self.timeout_hit.eq(0)
            ).Elif(~self.timeout_hit & (self.issued >> scan)[0] & (now > dl_r.dat_r),
                self.timeout_hit.eq(1), self.timeout_slot.eq(scan)
            )
        ]

    def _ts_slot(self):
        return self.ts_w.adr[3:]

    def _ts_phase(self):
        return self.ts_w.adr[:3]

    def find_free(self):
        """Statements that put the lowest free slot on free_slot (for the state that takes one,
        so the encoder is evaluated there only)."""
        return lowest_set(~self.busy, SLOTS, self.free_slot)

    def stamp_port(self):
        """A write port into the stamp memory for one client. The ports are ORed: the engine's
        machines take turns, so only one writes in a cycle."""
        port = StampPort(self.now)
        self._stamp_ports.append(port)
        return port

    def finish(self, port, slot, result, status=0, error=0, lba=0, keep=False, stamp=True, t=None):
        """Statements that end a slot: result and status, the status stamp, its record due."""
        s = [self.fin.eq(1), self.fin_slot.eq(slot), self.fin_res.eq(result), self.fin_st.eq(status),
             self.fin_er.eq(error), self.fin_lba.eq(lba), self.fin_keep.eq(int(keep))]
        if stamp:
            s += port.stamp(slot, PH_STATUS, t=t)[:4]  # not `first`: a status is stamped once
        return s

    def desc_reader(self, slot, reading=None):
        """The descriptor of `slot`, for a client that reads while `reading` is high (None:
        whenever no other client reads). One read port serves them all, as the clients take
        turns: a port per client cost the simulation 3 descriptor copies a cycle."""
        self._desc_readers.append((slot, reading))
        return self._desc_r.dat_r

    def stamp_reader(self, address):
        port = self.ts_mem.get_port(async_read=True)
        self.specials += port
        self.comb += port.adr.eq(address)
        return port.dat_r

    def do_finalize(self):
        adr = [r[0] for r in self._desc_readers if r[1] is None][0]
        for s, reading in self._desc_readers:
            if reading is not None:
                adr = Mux(reading, s, adr)
        self.comb += self._desc_r.adr.eq(adr)
        # The ports' signals are 0 but on a client's write: OR them (one client writes a
        # cycle; a priority mux cost the simulation more a cycle than the OR).
        joined = {n: reduce(or_, [getattr(p, n) for p in self._stamp_ports])
                  for n in ("we", "slot", "phase", "val", "first")}
        we, slot, phase, val, first = (Signal(len(getattr(self._stamp_ports[0], n)), name="stamp_" + n)
                                       for n in joined)
        self.comb += [
            we.eq(joined["we"]), slot.eq(joined["slot"]), phase.eq(joined["phase"]),
            val.eq(joined["val"]), first.eq(joined["first"]),
            self.ts_w.adr.eq(Cat(phase, slot)),
            self.ts_w.dat_w.eq(val),
            self.ts_w.we.eq(we & ~(first & (self.stamped[slot] >> phase)[0])),
        ]
