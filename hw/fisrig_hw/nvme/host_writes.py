"""The controller's memory writes into the engine's part of the map, taken as they cross its
port (a beat a cycle, nothing stored but a window slot's data) and stamped from the link tap
(link_tap.py: the ticks the write's first and last beats crossed the link):
- each CQE: a controller writes a CQE a TLP; a write carrying more keeps its last, the
  others counted in `cqe_packed` (their commands then end by their timeouts);
- each MSI-X message: its vector is the message's data (as the firmware's enumeration
  writes the table);
- each write of a read's data into a slot's buffer: its dwords, and which of the two
  512-byte blocks it may touch held other than the pattern expected (pattern_pair.py,
  continued from the slot's last write: a controller writes a command's data in order);
  for a slot whose data goes to the data window (window.py), the dwords written there.
A write anywhere else in the map is counted in `stray` and dropped; one the tap has no
entry for (or another address) in `tap_mismatch`, and is stamped where its last beat
reached the port."""
from migen import Cat, If, Mux, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from fisrig_hw.nvme.link_tap import TAP_LAYOUT
from fisrig_hw.nvme.memory_map import Decoded
from fisrig_hw.nvme.pattern_pair import PatternState, SlotPattern

CQE_LAYOUT = [("queue", 5), ("index", 8), ("sqhd", 16), ("cid", 16), ("status", 16), ("dw0", 32), ("stamp", 64)]
MSIX_LAYOUT = [("vector", 11), ("stamp", 64)]
DATA_LAYOUT = [("slot", 8), ("offset", 21), ("dwords", 10), ("t_first", 64), ("t_last", 64), ("bad", 2)]


class HostWrites(LiteXModule):
    def __init__(self, now, window, queues: int, slots: int, io_entries: int, depth: int = 16):
        # The port's write beats (the crossbar's request layout: `adr`, `len` on the first,
        # two payload dwords a beat in `dat`).
        self.valid, self.first, self.last = Signal(), Signal(), Signal()
        self.adr, self.len, self.dat = Signal(32), Signal(10), Signal(64)
        self.ready = Signal()
        self.tap = stream.Endpoint(TAP_LAYOUT)
        self.stray = Signal(16)
        self.cqe_packed = Signal(16)
        self.tap_mismatch = Signal(16)
        self.cqe = stream.Endpoint(CQE_LAYOUT)
        self.msix = stream.Endpoint(MSIX_LAYOUT)
        self.data = stream.Endpoint(DATA_LAYOUT)
        # What the engine says of the slot a buffer write is for (decoded.slot): its data goes
        # into the window (slot_ram) from dword slot_dword on.
        self.slot_ram = Signal()
        self.slot_dword = Signal(17)
        # Or its data checked against the pattern, continued from where its last write left
        # it. A write the check cannot continue (not where the last left off, nor the
        # buffer's start) counts its blocks bad.
        self.pattern = sp = SlotPattern()
        self.submodules.pattern_pair = pp = sp.pair

        # # #

        self.cqe_fifo = cqe_f = stream.SyncFIFO(CQE_LAYOUT, depth)
        self.msix_fifo = msix_f = stream.SyncFIFO(MSIX_LAYOUT, depth)
        self.data_fifo = data_f = stream.SyncFIFO(DATA_LAYOUT, depth)
        self.comb += [cqe_f.source.connect(self.cqe), msix_f.source.connect(self.msix), data_f.source.connect(self.data)]
        # A beat is handled a cycle after it is taken (below): room for two more events each.
        self.comb += self.ready.eq((cqe_f.level < depth - 2) & (msix_f.level < depth - 2) & (data_f.level < depth - 2))

        adr = Signal(32)
        length = Signal(10)
        self.decoded = dec = Decoded(adr, queues, slots, io_entries)
        self.comb += dec.comb
        take = Signal()
        self.comb += take.eq(self.valid & self.ready)
        self.sync += If(take & self.first, adr.eq(self.adr), length.eq(self.len))
        k = Signal(11)          # the payload dword the next beat's lane 0 holds
        self.sync += If(take, k.eq(Mux(self.first, 2, k + 2)))
        # The region is decoded from the registered address, so each beat is handled a cycle
        # after it is taken, in `b_*`.
        b_valid, b_first, b_last, b_dat, b_k = Signal(), Signal(), Signal(), Signal(64), Signal(11)
        b_now = Signal(64)
        self.sync += [
            b_valid.eq(take), b_first.eq(self.first), b_last.eq(self.last), b_dat.eq(self.dat),
            b_k.eq(Mux(self.first, 0, k)), b_now.eq(now),
        ]
        lane = [b_dat[:32], b_dat[32:]]
        lane_ok = [b_k < length, b_k + 1 < length]
        dw_at = [Signal(20), Signal(20)]  # the lanes' dword index in their region
        self.comb += [dw_at[0].eq(dec.offset[2:] + b_k), dw_at[1].eq(dec.offset[2:] + b_k + 1)]
        at = [[Signal(name=f"lane{i}_dw{j}") for j in range(4)] for i in range(2)]  # lane i holds a CQE's dword j
        self.comb += [at[i][j].eq(b_valid & dec.cq & lane_ok[i] & (dw_at[i][:2] == j)) for i in range(2) for j in range(4)]

        # The write's stamps: the tap's entry, taken at its last beat.
        t_first, t_last = Signal(64), Signal(64)
        tap_ok = Signal()
        self.comb += [
            tap_ok.eq(self.tap.valid & (self.tap.adr == adr)),
            self.tap.ready.eq(b_valid & b_last & self.tap.valid),
            t_first.eq(Mux(tap_ok, self.tap.t_first, b_now)),
            t_last.eq(Mux(tap_ok, self.tap.t_last, b_now)),
        ]
        self.sync += If(b_valid & b_last & ~tap_ok, self.tap_mismatch.eq(self.tap_mismatch + 1))

        # CQEs: dwords 0, 2 and 3 of each; the last one the write completes goes at its end.
        dw0, dw2, dw3 = Signal(32), Signal(32), Signal(32)
        index = Signal(16)
        n_cqes = Signal(8)      # CQEs completed in the write so far
        dw0_now, dw2_now, dw3_now, index_now, n_now = Signal(32), Signal(32), Signal(32), Signal(16), Signal(8)
        self.comb += [
            dw0_now.eq(Mux(at[1][0], lane[1], Mux(at[0][0], lane[0], dw0))),
            dw2_now.eq(Mux(at[1][2], lane[1], Mux(at[0][2], lane[0], dw2))),
            dw3_now.eq(Mux(at[1][3], lane[1], Mux(at[0][3], lane[0], dw3))),
            index_now.eq(Mux(at[1][3], dw_at[1][2:], Mux(at[0][3], dw_at[0][2:], index))),
            n_now.eq(Mux(b_first, 0, n_cqes) + at[0][3] + at[1][3]),
        ]
        self.sync += If(b_valid, dw0.eq(dw0_now), dw2.eq(dw2_now), dw3.eq(dw3_now), index.eq(index_now),
                        n_cqes.eq(n_now),
                        If(b_last & (n_now > 1), self.cqe_packed.eq(self.cqe_packed + n_now - 1)))
        self.comb += [
            cqe_f.sink.valid.eq(b_valid & b_last & dec.cq & (n_now != 0)),
            cqe_f.sink.queue.eq(dec.queue), cqe_f.sink.index.eq(index_now),
            cqe_f.sink.sqhd.eq(dw2_now[:16]), cqe_f.sink.cid.eq(dw3_now[:16]), cqe_f.sink.status.eq(dw3_now[16:]),
            cqe_f.sink.dw0.eq(dw0_now), cqe_f.sink.stamp.eq(t_last),
        ]
        # MSI-X messages.
        self.comb += [
            msix_f.sink.valid.eq(b_valid & b_last & dec.msix),
            msix_f.sink.vector.eq(b_dat[:11]), msix_f.sink.stamp.eq(t_last),  # its data: the vector (pcie_enum.h)
        ]
        # A read's data: the blocks it touches against zeros (lane i's dword in the write's
        # first block or the one after).
        bad = Signal(2)
        bad_now = Signal(2)
        in_second = [Signal(), Signal()]
        self.comb += [in_second[i].eq((dw_at[i] >> 7) != (dec.offset[2:] >> 7)) for i in range(2)]
        # The expected dwords: the pattern's, from the write's first dword (a state loaded at
        # its first beat, stepped a beat at a time).
        chk = PatternState("chk")
        loaded, begin = PatternState("loaded"), PatternState("begin")
        lost = Signal()     # this write could not be checked
        lost_r = Signal()
        first_dw = Signal(20)
        self.comb += [
            first_dw.eq(dec.offset[2:]),
            *pp.start(sp.slba, 0, begin),
            If(sp.saved_ok & (sp.saved.d == first_dw),
                *loaded.eq(sp.saved),
            ).Else(
                *loaded.eq(begin),
            ),
            If(b_first,
                *pp.cur.eq(loaded),
                lost.eq(~(sp.saved_ok & (sp.saved.d == first_dw)) & (first_dw != 0)),
            ).Else(
                *pp.cur.eq(chk),
                lost.eq(lost_r),
            ),
        ]
        checking = Signal()
        self.comb += checking.eq(b_valid & dec.data & sp.on)
        self.sync += If(checking, *chk.eq(pp.nxt), lost_r.eq(lost))
        self.comb += [sp.save.eq(checking & b_last), *sp.save_state.eq(pp.nxt)]
        expect = [pp.dw0, pp.dw1]
        lane_bad = [lane_ok[i] & ((lane[i] != expect[i]) | lost) for i in range(2)]
        self.comb += bad_now.eq(Mux(b_first, 0, bad) |
                                Cat(lane_bad[0] & ~in_second[0], lane_bad[0] & in_second[0]) |
                                Cat(lane_bad[1] & ~in_second[1], lane_bad[1] & in_second[1]))
        self.sync += If(b_valid, bad.eq(bad_now))
        to_window = Signal()
        self.comb += [
            to_window.eq(b_valid & dec.data & self.slot_ram),
            window.w_dword.eq(self.slot_dword + dw_at[0]),
            window.w_lane0.eq(lane[0]), window.w_lane1.eq(lane[1]),
            window.w_we0.eq(to_window & lane_ok[0] & (self.slot_dword + dw_at[0] < window.window_bytes // 4)),
            window.w_we1.eq(to_window & lane_ok[1] & (self.slot_dword + dw_at[1] < window.window_bytes // 4)),
        ]
        self.comb += [
            data_f.sink.valid.eq(b_valid & b_last & dec.data),
            data_f.sink.slot.eq(dec.slot), data_f.sink.offset.eq(dec.offset),
            data_f.sink.dwords.eq(length),
            data_f.sink.t_first.eq(t_first), data_f.sink.t_last.eq(t_last),
            data_f.sink.bad.eq(bad_now),
        ]
        self.sync += If(b_valid & b_first & ~(dec.cq | dec.msix | dec.data), self.stray.eq(self.stray + 1))
