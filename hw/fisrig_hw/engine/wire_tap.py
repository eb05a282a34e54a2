"""The wire tap: where each FIS's dwords crossed the transceiver's pins, as engine_if.h
defines the record's stamps, taken beside the link layer rather than behind its buffers.

The engine used to stamp where its own state machine met a FIS: the H2D at its R_OK (3
ticks after the EOF), write data as it entered the transmit FIFO (8 to 29 ticks before the
wire) and read data as it left the receive FIFO (up to 529 ticks after the wire when the
host's memory was slower than the link). A FrameTap watches one direction of the
transceiver's parallel interface instead, and for every frame (SOF ... EOF) gives:

- t_fis: the tick its first dword (the FIS type) crossed the pins;
- d_first, d_last: how many ticks after t_fis its first and last payload dwords crossed
  (the dword after the type, and the one before the CRC); 0 when it has none;
- type: the FIS type (the first dword descrambled), so that a consumer can tell a tap
  record from another frame's.

Primitives are not FIS dwords: ALIGNs (which may sit inside a CONT run, as LiteSATA's
ALIGN remover before its CONT remover assumes) are skipped, CONT starts a run of scrambled
filler that ends at the next other primitive, and HOLD/HOLDA are primitives like any.
`lag`: the ticks between the pins and what the tap sees (the transceiver's registers), taken
off every stamp. The byte lanes are taken as aligned (K character in byte 0), as the
simulated transceiver delivers them; a board's tap goes after the byte realigner.
"""

from migen import *

from litex.soc.interconnect import stream

from litesata.common import primitives

from fisrig_hw.lfsr_tables import scrambler_step_map

tap_layout = [("type", 8), ("t_fis", 64), ("d_first", 32), ("d_last", 32)]

# A frame's dwords are scrambled from SOF on, the scrambler starting over at each SOF: its
# first dword, the FIS type's, is always XORed with the scrambler's first word.
FIRST_SCRAMBLE = scrambler_step_map(0xF0F6)


class FrameTap(Module):
    def __init__(self, lag=0, depth=8):
        self.now = Signal(64)
        self.valid = Signal()       # a dword crosses this cycle
        self.data = Signal(32)
        self.charisk = Signal(4)
        self.reset = Signal()       # the link is down: frames in flight are gone
        # One record per frame, in wire order; a full queue drops (counted, never stalls).
        self.submodules.fifo = fifo = ResetInserter()(stream.SyncFIFO(tap_layout, depth))
        self.source = fifo.source
        self.dropped = Signal(32)
        # Real-time strobes, the cycle the tap sees them (for the power controller):
        # a FIS's first dword, and a Data FIS's first payload dword; `t` is their tick.
        self.fis_start = Signal()
        self.fis_type = Signal(8)
        self.data_start = Signal()
        self.t = Signal(64)

        # # #

        t = self.t
        self.comb += [t.eq(self.now - lag), fifo.reset.eq(self.reset)]
        is_prim = self.charisk[0]
        in_frame, in_cont = Signal(), Signal()
        n = Signal(2)                       # frame dwords so far, saturating at 3
        t_fis, t_prev, t_prev2, t_first = Signal(64), Signal(64), Signal(64), Signal(64)
        typ = Signal(8)
        sof = is_prim & (self.data == primitives["SOF"])
        eof = is_prim & (self.data == primitives["EOF"])
        align = is_prim & (self.data == primitives["ALIGN"])
        cont = is_prim & (self.data == primitives["CONT"])
        fis_dword = self.valid & ~is_prim & in_frame & ~in_cont
        self.comb += [
            self.fis_start.eq(fis_dword & (n == 0)),
            self.fis_type.eq(self.data[:8] ^ (FIRST_SCRAMBLE & 0xFF)),
            self.data_start.eq(fis_dword & (n == 1) & (typ == 0x46)),
            # At EOF the last dword before it was the CRC: the payload ended one before.
            fifo.sink.type.eq(typ),
            fifo.sink.t_fis.eq(t_fis),
            fifo.sink.d_first.eq(Mux(n == 3, t_first - t_fis, 0)),
            fifo.sink.d_last.eq(Mux(n == 3, t_prev2 - t_fis, 0)),
            fifo.sink.valid.eq(self.valid & eof & in_frame & ~self.reset),
        ]
        self.sync += [
            If(self.reset,
                in_frame.eq(0), in_cont.eq(0)
            ).Elif(self.valid & is_prim & ~align,
                in_cont.eq(cont),
                If(sof, in_frame.eq(1), n.eq(0)
                ).Elif(~cont & ~(self.data == primitives["HOLD"]) & ~(self.data == primitives["HOLDA"]),
                    in_frame.eq(0)  # EOF, or a frame cut short (SYNC, WTRM...)
                )
            ).Elif(fis_dword,
                If(n == 0, t_fis.eq(t), typ.eq(self.fis_type)),
                If(n == 1, t_first.eq(t)),
                If(n != 3, n.eq(n + 1)),
                t_prev2.eq(t_prev), t_prev.eq(t),
            ),
            If(fifo.sink.valid & ~fifo.sink.ready, self.dropped.eq(self.dropped + 1)),
        ]


class TapEvents(Module):
    """The power controller's FIS events (engine_if.h enum fisrig_fis_event) from the two
    taps, on the wire's tick: an H2D's first dword going out; a D2H's, SDB's or DMA Setup's
    coming in; a Data FIS's first payload dword either way (the tick its command's
    ts_data_first holds, so a cut `delay` after it lands at that stamp + delay). FIS dwords
    cross the half-duplex wire one direction at a time, so the two never coincide."""
    def __init__(self, tx, rx):
        self.event = Signal()
        self.kind = Signal(3)
        self.time = Signal(64)

        # # #

        from fisrig_hw.engine import fis
        from fisrig_hw.descriptor import (EVENT_D2H, EVENT_DATA, EVENT_DMA_SETUP, EVENT_H2D,
                                          EVENT_SDB)
        self.comb += If(tx.fis_start & (tx.fis_type == fis.REG_H2D),
            self.event.eq(1), self.kind.eq(EVENT_H2D), self.time.eq(tx.t)
        ).Elif(tx.data_start,
            self.event.eq(1), self.kind.eq(EVENT_DATA), self.time.eq(tx.t)
        ).Elif(rx.data_start,
            self.event.eq(1), self.kind.eq(EVENT_DATA), self.time.eq(rx.t)
        ).Elif(rx.fis_start,
            self.time.eq(rx.t),
            Case(rx.fis_type, {
                fis.REG_D2H: [self.event.eq(1), self.kind.eq(EVENT_D2H)],
                fis.SET_DEVICE_BITS: [self.event.eq(1), self.kind.eq(EVENT_SDB)],
                fis.DMA_SETUP: [self.event.eq(1), self.kind.eq(EVENT_DMA_SETUP)],
                "default": [],
            })
        )
