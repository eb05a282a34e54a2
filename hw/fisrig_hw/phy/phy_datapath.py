"""The PHY datapath for a rig whose link runs on the transceiver's own clock.

LiteSATA's datapath (litesata.phy.datapath) moves every dword through two asynchronous FIFOs,
sata_rx -> sys and sys -> sata_tx, because its SoCs run the core on a clock of their own. The
rig does not: the SATA clock is the SoC's clock (DESIGN.md decision 4), and a board's
transceiver recovers RX into that same clock through its elastic buffer (which also does
the ALIGN-based clock correction). Between identical clocks those FIFOs are only latency:
three cycles each way, paid at every handshake the link answers (R_RDY, R_OK, SYNC), about
six cycles a turnaround. This datapath keeps what the rest of LiteSATA's does on a 32-bit
transceiver (the OOB/link multiplexing on ctrl.ready, byte realignment on the K character,
the ALIGN timer that says whether the device is there, the misalign flag) and drops the
crossings. RigCore can still build LiteSATA's own (datapath="litesata"), and the tests run
the link both ways.
"""

from migen import *

from litex.soc.interconnect import stream

from litesata.common import phy_description
from litesata.phy.datapath import LiteSATAPHYAlignTimer


class ByteRealigner(Module):
    """32-bit words from a transceiver whose comma may sit in any byte lane, realigned so
    the K character is in byte 0 (the lane of the last K character seen sets the shift)."""
    def __init__(self):
        self.sink = sink = stream.Endpoint(phy_description(32))
        self.source = source = stream.Endpoint(phy_description(32))

        # # #

        lane = Signal(4, reset=0b0001)
        last_data, last_charisk = Signal(32), Signal(4)
        self.sync += If(sink.valid & sink.ready,
            If(sink.charisk != 0, lane.eq(sink.charisk)),
            last_data.eq(sink.data),
            last_charisk.eq(sink.charisk),
        )
        joined_data = Cat(last_data, sink.data)
        joined_charisk = Cat(last_charisk, sink.charisk)
        # A K character in lane i means the dword started i bytes into the previous word.
        cases = {}
        for i in range(4):
            cases[1 << i] = [
                source.data.eq(joined_data[32 - 8 * i:64 - 8 * i]),
                source.charisk.eq(joined_charisk[4 - i:8 - i]),
            ]
        self.comb += [
            source.valid.eq(sink.valid),
            sink.ready.eq(source.ready),
            Case(lane, cases),
        ]


class SameClockSATAPHYDatapath(Module):
    """Drop-in for LiteSATAPHYDatapath (same sink, source, misalign and rx_idle) when the
    transceiver's TX and RX clocks are the core's clock."""
    def __init__(self, trx, ctrl):
        assert trx.data_width == 32
        self.sink = sink = stream.Endpoint(phy_description(32))
        self.source = source = stream.Endpoint(phy_description(32))
        self.misalign = Signal()
        self.rx_idle = Signal()

        # # #

        # TX: the PHY control's OOB/ALIGN stream until it declares the link ready, then the link's.
        mux = stream.Multiplexer(phy_description(32), 2)
        self.submodules += mux
        self.comb += [
            mux.sel.eq(ctrl.ready),
            ctrl.source.connect(mux.sink0),
            sink.connect(mux.sink1),
            mux.source.connect(trx.sink),
        ]

        # RX: realigned, then to the PHY control or the link by the same rule.
        realign = ByteRealigner()
        demux = stream.Demultiplexer(phy_description(32), 2)
        align_timer = LiteSATAPHYAlignTimer()
        self.submodules += realign, demux, align_timer
        self.comb += [
            trx.source.connect(realign.sink),
            realign.source.connect(demux.sink),
            realign.source.connect(align_timer.sink, omit={"ready"}),
            demux.sel.eq(ctrl.ready),
            demux.source0.connect(ctrl.sink),
            demux.source1.connect(source),
            self.misalign.eq(realign.source.valid & ((realign.source.charisk & 0b1110) != 0)),
            self.rx_idle.eq(align_timer.timer.done),
        ]
