"""The controller's reads of the rig's memory, answered: each memory read the engine's part of
the map takes is queued (its header alone) and answered, in order, by one completion the
engine builds itself (as rig_memory.py does: LitePCIe 2024.12's packetizer gets a
completion's byte count and short lengths wrong), from
- an SQ: the block RAM the engine writes each command's SQE into;
- a slot's PRP list: computed, entry i the buffer's page i + 1 (nothing is stored);
- a slot's data buffer (a write's data): the data window's words (FISRIG_DATA_RAM), or
  the generated data (pattern.h's STAMP and LFSR: pattern_pair.py, a word a cycle,
  continued from where the slot's last read left it, or stepped from its sector's start
  when a read comes out of order; ZEROS), computed as it goes;
and anything else Unsupported Request, counted in `refused`. A request waiting when the
drive's rails fall is dropped (its link is down; one under way is finished).

Stamps (engine_if.h): the cycle a completion's last beat goes to the link is the ts_sqe of
each SQE whose last dword it carries (`sqe_taken`, one a cycle after it, through `sqe_*`),
and of a data buffer's completion its first beat's cycle and its last's are the data's
(`data_done` with `data_slot`, `data_first`, `data_last`, `data_dwords`)."""
from migen import Array, Cat, FSM, If, Mux, NextState, NextValue, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from litepcie.common import phy_layout

from fisrig_hw import contract as _c
from fisrig_hw.nvme.memory_map import ADMIN_ENTRIES, DATA, PAGE, SLOT_SHIFT, Decoded
from fisrig_hw.nvme.pattern_pair import STATE, PatternState, SlotPattern
from fisrig_hw.pcie.config_requester import bswap32

READ_LAYOUT = [("adr", 32), ("len", 10), ("tag", 8), ("req_id", 16)]


class Completer(LiteXModule):
    def __init__(self, sq_port, window, now, completer_id, queues: int, slots: int, io_entries: int,
                 depth: int = 16):
        """sq_port: a synchronous read port of the SQ memory (256-bit rows, half an SQE each,
        queue q's entry e at rows (q * io_entries + e) * 2 and after); window: the data
        window (window.py), whose words a slot of FISRIG_DATA_RAM data reads from."""
        self.sink = stream.Endpoint(READ_LAYOUT)
        self.source = stream.Endpoint(phy_layout(64))
        self.link_up = Signal(reset=1)   # low (the drive's rails off): what is asked is dropped
        # The slot a data buffer's read is for (decoded.slot), and what the engine says of it:
        # its data in the window (slot_ram) from 64-bit word slot_word on.
        self.slot_ram = Signal()
        self.slot_word = Signal(16)
        # Or its data generated, continued from where its last read left it.
        self.pattern = sp = SlotPattern()
        self.submodules.pattern_pair = pp = sp.pair
        self.refused = Signal(16)
        self.max_read_dwords = 64   # the rig sets the device's MRRS no larger (pcie_enum.h)
        # The SQE stamps: one a cycle, after the completion that carried their last dwords.
        self.sqe_taken = Signal()
        self.sqe_queue = Signal(max=queues + 1)
        self.sqe_entry = Signal(max=max(io_entries, 2))
        self.sqe_stamp = Signal(64)
        # A data completion's stamps, the cycle after its last beat.
        self.data_done = Signal()
        self.data_slot = Signal(max=max(slots, 2))
        self.data_first, self.data_last = Signal(64), Signal(64)
        self.data_dwords = Signal(10)

        # # #

        self.fifo = fifo = stream.SyncFIFO(READ_LAYOUT, depth)
        self.comb += self.sink.connect(fifo.sink)
        r = fifo.source
        adr, length, tag, req_id = Signal(32), Signal(10), Signal(8), Signal(16)
        self.decoded = dec = Decoded(adr, queues, slots, io_entries)
        self.comb += dec.comb
        status = Signal(3)
        left = Signal(11)
        w = Signal(18)          # the 64-bit word, from the request's first, the beat under way shows
        w_next = Signal(18)     # the word the next cycle shows
        odd = Signal()          # the request starts on a dword's odd half of a word
        prev_hi = Signal(32)
        word = Signal(64)       # word w_next's value a cycle after w_next is presented

        # The words (a cycle's latency, as the SQ RAM's port).
        first_word = Signal(18)   # the request's first 64-bit word in its region
        self.comb += first_word.eq(dec.offset[3:])
        row_word = Signal(32)
        sel = Signal(2)
        self.comb += [
            row_word.eq(((dec.queue * io_entries) << 3) + first_word + w_next),
            sq_port.adr.eq(row_word[2:]),
        ]
        list_value = Signal(32)
        kind_list, kind_sq = Signal(), Signal()
        self.comb += list_value.eq(DATA + (dec.slot << SLOT_SHIFT) + ((first_word + w_next + 1) << 12))
        list_word = Signal(64)
        kind_ram = Signal()
        self.sync += [
            sel.eq(row_word[:2]), kind_sq.eq(dec.sq), kind_list.eq(dec.list), kind_ram.eq(dec.data & self.slot_ram),
            list_word.eq(list_value),
        ]
        self.comb += window.r_adr.eq(self.slot_word + first_word + w_next)
        rows = Array([sq_port.dat_r[64 * k:64 * (k + 1)] for k in range(4)])
        kind_gen = Signal()
        self.sync += kind_gen.eq(dec.data & sp.on)
        gen = PatternState("gen")   # the generated word g's state (g: from the request's first word)
        g = Signal(18)
        clamp = Signal(18)          # the word holding the dword after the request's last
        self.comb += [
            *pp.cur.eq(gen),
            word.eq(Mux(kind_sq, rows[sel], Mux(kind_list, list_word, Mux(kind_ram, window.r_dat,
                                                                              Mux(kind_gen, Cat(pp.dw0, pp.dw1), 0))))),
            clamp.eq((odd + length) >> 1),
        ]
        advance = Signal()
        self.sync += If(advance & (w_next == g + 1) & (g < clamp), *gen.eq(pp.nxt), g.eq(g + 1))
        target = Signal(20)   # the request's first word's first dword
        sector_start = PatternState("sector_start")
        self.comb += [target.eq(dec.offset[3:] << 1), *pp.start(sp.slba, target, sector_start)]
        end_gen = Signal()
        self.comb += [*sp.save_state.eq(gen), sp.save.eq(end_gen)]

        lo, hi = word[:32], word[32:]
        dw0 = Signal(32)
        dw1 = Signal(32)
        dw2 = Signal(32)
        self.comb += [
            dw0.eq(Mux(status == 0, (_c.FISRIG_PCIE_TLP_CPLD << 24) | length, _c.FISRIG_PCIE_TLP_CPL << 24)),
            dw1.eq((completer_id << 16) | (status << 13) | Mux(status == 0, length << 2, 0)),
            dw2.eq((req_id << 16) | (tag << 8) | adr[:7]),
        ]
        tx = self.source
        t_first = Signal(64)
        sqe_left = Signal(11)
        sqe_entry = Signal(max=max(io_entries, 2) + 1)
        self.comb += [self.sqe_queue.eq(dec.queue), self.sqe_entry.eq(sqe_entry)]

        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            r.ready.eq(1),
            If(r.valid & self.link_up,
                NextValue(adr, r.adr), NextValue(length, r.len), NextValue(tag, r.tag), NextValue(req_id, r.req_id),
                NextValue(left, r.len), NextValue(odd, r.adr[2]),
                NextState("DECODE"),
            ),
        )
        past_end = Signal()  # the read runs past its SQ, list page, buffer or window
        self.comb += past_end.eq(Mux(dec.sq, dec.offset[2:] + length > Mux(dec.queue == 0, ADMIN_ENTRIES, io_entries) * 16,
                                     Mux(dec.list, dec.offset[2:] + length > PAGE // 4,
                                         Mux(self.slot_ram,
                                             (self.slot_word << 1) + dec.offset[2:] + length > window.window_bytes // 4,
                                             dec.offset[2:] + length > (1 << (SLOT_SHIFT - 2))))))
        fsm.act("DECODE",  # the request's region known: its first word on its way
            w_next.eq(0),
            NextValue(w, 0), NextValue(status, 0), NextValue(g, 0),
            If(~(dec.sq | dec.list | dec.data) | (length > self.max_read_dwords) | (length == 0) | past_end,
                NextValue(self.refused, self.refused + 1),
                NextValue(status, _c.FISRIG_PCIE_CPL_UR),
                NextState("HEADER"),
            ).Elif(dec.data & sp.on & sp.saved_ok & (sp.saved.d == target),
                *[NextValue(getattr(gen, f), getattr(sp.saved, f)) for f, _ in STATE],  # where the last read left it
                NextState("HEADER"),
            ).Elif(dec.data & sp.on,
                *[NextValue(getattr(gen, f), getattr(sector_start, f)) for f, _ in STATE],
                NextState("POSITION"),
            ).Else(
                NextState("HEADER"),
            ),
        )
        fsm.act("POSITION",  # from the sector's start to the request's first word, a word a cycle
            w_next.eq(0),
            If(gen.d == target,
                NextState("HEADER"),
            ).Else(
                *[NextValue(getattr(gen, f), getattr(pp.nxt, f)) for f, _ in STATE],
            ),
        )
        fsm.act("HEADER",
            w_next.eq(0),
            tx.valid.eq(1), tx.first.eq(1), tx.be.eq(0xFF), tx.dat.eq(Cat(dw0, dw1)),
            If(tx.ready,
                NextValue(t_first, now),
                If(status != 0, NextState("NO_DATA")).Else(NextState("FIRST")),
            ),
        )
        fsm.act("NO_DATA",
            tx.valid.eq(1), tx.last.eq(1), tx.be.eq(0x0F), tx.dat.eq(dw2),
            If(tx.ready, NextState("IDLE")),
        )
        fsm.act("FIRST",  # the header's third dword and the payload's first
            advance.eq(1),
            tx.valid.eq(1), tx.last.eq(left <= 1), tx.be.eq(0xFF),
            tx.dat.eq(Cat(dw2, bswap32(Mux(odd, hi, lo)))),
            w_next.eq(w),
            If(tx.ready,
                NextValue(prev_hi, hi),
                NextValue(left, left - 1),
                w_next.eq(w + 1), NextValue(w, w + 1),  # beat m >= 2 shows word m - 1
                If(left <= 1, NextState("END")).Else(NextState("PAYLOAD")),
            ),
        )
        fsm.act("PAYLOAD",  # two payload dwords a beat: an odd start's are a word's halves
            advance.eq(1),
            tx.valid.eq(1), tx.last.eq(left <= 2), tx.be.eq(Mux(left >= 2, 0xFF, 0x0F)),
            tx.dat.eq(Mux(odd, Cat(bswap32(lo), bswap32(hi)), Cat(bswap32(prev_hi), bswap32(lo)))),
            w_next.eq(w),
            If(tx.ready,
                NextValue(prev_hi, hi),
                NextValue(left, left - 2),
                w_next.eq(w + 1), NextValue(w, w + 1),
                If(left <= 2, NextState("END")),
            ),
        )
        # After the last beat: its stamps.
        take_next = Signal()   # the next request latched at once (a data completion's end)
        fsm.act("END",
            self.data_done.eq(dec.data & (status == 0)),
            If(~dec.sq & r.valid & self.link_up,
                take_next.eq(1), r.ready.eq(1),
                NextValue(adr, r.adr), NextValue(length, r.len), NextValue(tag, r.tag), NextValue(req_id, r.req_id),
                NextValue(left, r.len), NextValue(odd, r.adr[2]),
            ),
            end_gen.eq(dec.data & (status == 0) & kind_gen),
            NextValue(sqe_entry, dec.offset[6:]),
            NextValue(sqe_left, ((dec.offset[2:] + length) >> 4) - (dec.offset[2:] >> 4)),
            If(dec.sq, NextState("SQE_STAMPS")).Elif(take_next, NextState("DECODE")).Else(NextState("IDLE")),
        )
        fsm.act("SQE_STAMPS",
            If(sqe_left == 0,
                NextState("IDLE"),
            ).Else(
                self.sqe_taken.eq(1),
                NextValue(sqe_entry, sqe_entry + 1),
                NextValue(sqe_left, sqe_left - 1),
            ),
        )
        last_beat_tick = Signal(64)
        self.sync += If(tx.valid & tx.ready & tx.last, last_beat_tick.eq(now))
        self.comb += [
            self.sqe_stamp.eq(last_beat_tick),
            self.data_last.eq(last_beat_tick),
            self.data_slot.eq(dec.slot),
            self.data_first.eq(t_first),
            self.data_dwords.eq(length),
        ]
