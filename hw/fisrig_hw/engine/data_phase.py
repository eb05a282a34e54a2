"""The data path: one Data FIS either way, on a machine of its own.

In: the payload goes to main RAM (`ram_wr`, LiteX's Wishbone DMA) or is compared with the
pattern generator's dwords a sector at a time (the checker); our READ LOG EXT 10h keeps
its first dwords instead (`log`). Out: the header, then the payload from RAM (`ram_rd_*`)
or the generator. Where a FIS starts is the slot's first LBA and RAM address plus what
moved before it. The sequencer decides which slot a FIS belongs to and what its end means
for the protocol; this stamps the FIS's first and last payload dwords, off the wire taps,
and counts what moved.
"""

from migen import *

from litex.soc.interconnect import stream

from fisrig_hw.engine import fis
from fisrig_hw.descriptor import DATA_RAM, DATA_ZEROS, FLAG_CHECK, PH_DATA_FIRST, PH_DATA_LAST, desc_field
from fisrig_hw.direct_fsm import DirectFSM
from fisrig_hw.engine.pattern import PatternGenerator
from fisrig_hw.engine.transport import link_layout


class DataPhase(Module):
    def __init__(self, slots, stamps, now, link_up, din, tap_rx):
        # din: the receiver's payload stream (FisReceiver.data), read here only.
        self.hdr_ack = Signal()                    # takes the Data FIS's first dword
        self.dout = stream.Endpoint(link_layout)   # a Data FIS to the transmitter (0 when idle)
        self.data_base = Signal(32)                # byte address of data_word 0
        # Bytes of the window from data_base (0: not set, nothing checked): a descriptor
        # whose RAM data would run past it is refused (engine/descriptor_checks.py).
        self.data_bytes = Signal(32)
        self.ram_wr = stream.Endpoint([("address", 30), ("data", 32)])
        self.ram_rd_addr = stream.Endpoint([("address", 30)])
        self.ram_rd_data = stream.Endpoint([("data", 32)])
        # The sequencer starts a FIS for a slot (`capture`: our READ LOG EXT's data, kept in
        # `log`), and sets `remaining`, the dwords left in the open data phase, from the FIS
        # or command that opened it.
        self.start_in, self.start_out, self.start_slot, self.start_capture = Signal(), Signal(), Signal(5), Signal()
        self.set_remaining, self.remaining_value = Signal(), Signal(24)
        self.remaining = remaining = Signal(24)
        # Back to the sequencer: `done` hands the turn back; with `ended` the FIS moved (not
        # cut off by the link going down, not an empty Data FIS).
        self.done, self.ended = Signal(), Signal()
        self.header_sent = Signal()                # a Data FIS went to the transmitter's queue
        self.out_dwords = Signal(12)               # its payload dwords (sent_frames counts them on the wire)
        self.crc_error = Signal()
        # The received frame's wire record (`tap_rx`, read here): taken, and not this FIS's.
        self.tap_pop, self.tap_bad = Signal(), Signal()
        self.slot = ctx_slot = Signal(5)
        self.inward = ctx_in = Signal()
        self.capture = ctx_capture = Signal()
        self.last_t = Signal(64)                   # the last payload dword's wire tick
        self.log = [Signal(32, name="log{}".format(i)) for i in range(3)]

        # # #

        self.submodules.gen = gen = PatternGenerator()
        loading = Signal()
        desc = slots.desc_reader(ctx_slot, loading)
        d_source = desc_field(desc, "data_source")
        ctx_ram = Signal()          # data to/from RAM
        ctx_check = Signal()        # read data checked against the pattern
        ctx_addr = Signal(30)
        n_dwords = self.out_dwords  # this Data FIS, out
        idx = Signal(12)
        in_sector = Signal(7)
        mismatch = Signal()
        dwords_done = Signal(24)
        sectors_done = Signal(17)
        load_addr = Signal(30)
        self.comb += [
            dwords_done.eq(slots.dwords[ctx_slot]), sectors_done.eq(dwords_done[7:]),
            load_addr.eq((self.data_base + desc_field(desc, "data_word"))[2:] + dwords_done),
        ]
        rd_left, rd_addr = Signal(12), Signal(30)
        rd_start, rd_n = Signal(), Signal(12)
        self.comb += [
            self.ram_rd_addr.valid.eq(rd_left != 0),
            self.ram_rd_addr.address.eq(rd_addr),
            self.ram_rd_addr.last.eq(rd_left == 1),  # the run's end: a burst ends there
        ]
        self.sync += If(rd_start,
            rd_left.eq(rd_n), rd_addr.eq(load_addr)
        ).Elif(self.ram_rd_addr.valid & self.ram_rd_addr.ready,
            rd_left.eq(rd_left - 1), rd_addr.eq(rd_addr + 1)
        )
        dout, tap = self.dout, tap_rx
        din_take = Signal()
        dout_data, dout_valid = Signal(32), Signal()
        self.comb += [
            self.ram_wr.address.eq(ctx_addr + idx),
            self.ram_wr.data.eq(din.data),
            dout_data.eq(Mux(ctx_ram, self.ram_rd_data.data, gen.data)),
            dout_valid.eq(~ctx_ram | self.ram_rd_data.valid),
        ]

        self.submodules.fsm = fsm = DirectFSM(reset_state="IDLE")
        self.comb += loading.eq(fsm.ongoing("LOAD"))
        fsm.act("IDLE",
            If(self.set_remaining, NextValue(remaining, self.remaining_value)),
            If(self.start_in | self.start_out,
                NextValue(ctx_slot, self.start_slot), NextValue(ctx_in, self.start_in),
                NextValue(ctx_capture, self.start_capture),
                NextState("LOAD")
            )
        )
        # Both ways: the generator at the FIS's first sector, RAM at its first dword.
        fsm.act("LOAD",
            gen.load.eq(1),
            gen.kind.eq(d_source),
            gen.lba.eq(desc_field(desc, "lba") + sectors_done),
            gen.word.eq(desc_field(desc, "data_word")),
            gen.pct.eq(desc_field(desc, "compress_pct")),
            NextValue(ctx_addr, load_addr),
            NextValue(idx, 0),
            If(ctx_in,
                NextValue(ctx_ram, (d_source == DATA_RAM) & ~ctx_capture),
                NextValue(ctx_check, (d_source >= DATA_ZEROS) & ((desc_field(desc, "flags") & FLAG_CHECK) != 0)),
                NextValue(in_sector, 0), NextValue(mismatch, 0),
                self.hdr_ack.eq(1),
                NextState("DIN")
            ).Else(
                NextValue(ctx_ram, d_source == DATA_RAM),
                rd_n.eq(Mux(remaining > fis.MAX_DATA_DWORDS, fis.MAX_DATA_DWORDS, remaining)),
                rd_start.eq(d_source == DATA_RAM),
                NextValue(n_dwords, rd_n),
                NextState("DOUT-HEADER")
            )
        )

        # ---- in ----
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
                        slots.chk_inc.eq(1), slots.chk_slot.eq(ctx_slot),
                    )
                ),
                If(din.last,
                    NextState("DIN-FIRST"),
                    NextValue(remaining, Mux(remaining > idx + 1, remaining - (idx + 1), 0)),
                    If(din.error,
                        self.crc_error.eq(1),
                        slots.bad_rx.eq(~ctx_capture), slots.bad_rx_slot.eq(ctx_slot),
                    ),
                )
            ),
            If(~link_up,  # the receiver was reset: nothing more comes
                self.done.eq(1), NextState("IDLE")
            )
        )
        # The log page's first three dwords: tag and NQ, status and error, LBA.
        self.sync += If(fsm.ongoing("DIN") & din_take & ctx_capture,
            Case(idx, {i: self.log[i].eq(din.data) for i in range(3)}))
        # The Data FIS's wire record: its first payload dword now, its last in DIN-END.
        fsm.act("DIN-FIRST",
            self.tap_pop.eq(1),
            self.tap_bad.eq(~tap.valid | (tap.type != fis.DATA)),
            If(~ctx_capture,
                stamps.stamp(ctx_slot, PH_DATA_FIRST, first=True, t=Mux(tap.valid, tap.t_fis + tap.d_first, now)),
            ),
            NextValue(self.last_t, Mux(tap.valid, tap.t_fis + tap.d_last, now)),
            NextState("DIN-END")
        )
        fsm.act("DIN-END",
            If(~ctx_capture,
                stamps.stamp(ctx_slot, PH_DATA_LAST, t=self.last_t),
                slots.dw_add.eq(1), slots.dw_slot.eq(ctx_slot), slots.dw_n.eq(idx),
            ),
            self.done.eq(1), self.ended.eq(1),
            NextState("IDLE")
        )

        # ---- out (DMA Activate, DMA Setup with auto-activate, PIO Setup out) ----
        fsm.act("DOUT-HEADER",
            dout.valid.eq(1),
            dout.data.eq(fis.DATA),
            dout.last.eq(n_dwords == 0),
            If(dout.ready,
                self.header_sent.eq(1),
                If(n_dwords == 0, self.done.eq(1), NextState("IDLE")).Else(NextState("DOUT"))
            )
        )
        fsm.act("DOUT",
            dout.valid.eq(dout_valid),
            dout.data.eq(dout_data),
            dout.last.eq(idx == n_dwords - 1),
            If(dout.valid & dout.ready,
                self.ram_rd_data.ready.eq(ctx_ram),
                gen.advance.eq(~ctx_ram),
                NextValue(idx, idx + 1),
                If(idx == n_dwords - 1,
                    NextValue(remaining, remaining - n_dwords),
                    NextState("DOUT-END")
                )
            )
        )
        # Its dwords count once the frame has crossed the pins (sent_frames, ON-WIRE), not
        # here: the link layer's buffer takes a whole FIS long before the wire has carried
        # it (a cut 1 us into a write's 3rd Data FIS found 3 counted, 2 crossed).
        fsm.act("DOUT-END",
            self.done.eq(1), self.ended.eq(1),
            NextState("IDLE")
        )
