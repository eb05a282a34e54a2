"""A beat appended to a TLP whose 3-dword header and payload end on a full 64-bit beat, before
LitePCIe 2024.12's depacketizer: its 64-bit header extracter takes every header as 4 dwords
and emits the payload one dword behind, so such a TLP's last payload dword (the third of a
3-dword write, the fifth of a 5-dword completion) was never emitted (tests/hw/
test_pcie_root_port.py sends them). With the empty beat after it, the extracter emits that
dword with the empty one as the last beat."""
from migen import If, Mux, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from litepcie.common import phy_layout

from fisrig_hw import contract as _c

FMT_3DW_DATA = _c.FISRIG_PCIE_TLP_MWR32 >> 5  # DW0 bits 31..29: a 3-dword header with data (MWr32, CfgWr0, CplD)


class OddPayloadPad(LiteXModule):
    def __init__(self, data_width: int = 64):
        assert data_width == 64
        self.sink = sink = stream.Endpoint(phy_layout(64))
        self.source = source = stream.Endpoint(phy_layout(64))

        three_dw_data = Signal()  # the TLP under way's header, from its first beat
        is_3dw_data = Signal()
        pad = Signal()  # the empty beat is due
        self.comb += is_3dw_data.eq(Mux(sink.first, sink.dat[29:32] == FMT_3DW_DATA, three_dw_data))
        needs_pad = Signal()
        self.comb += needs_pad.eq(sink.valid & sink.last & ~sink.first & (sink.be == 0xFF) & is_3dw_data)
        self.sync += If(sink.valid & sink.ready & sink.first, three_dw_data.eq(sink.dat[29:32] == FMT_3DW_DATA))
        self.comb += If(pad,
            source.valid.eq(1), source.last.eq(1), source.dat.eq(0), source.be.eq(0),
        ).Else(
            sink.connect(source),
            If(needs_pad, source.last.eq(0)),
        )
        self.sync += If(pad,
            If(source.ready, pad.eq(0)),
        ).Elif(needs_pad & source.ready,
            pad.eq(1),
        )
