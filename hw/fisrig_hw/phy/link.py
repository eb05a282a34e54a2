"""LiteSATA's link layer (its TX and RX state machines, CRC, scrambler, CONT and ALIGN
handling), composed for the rig with one register fewer on the receive side, and its CRC
and scrambler steps computed by tables (lfsr_tables.py: the same function, cheaper in
Verilator).

LiteSATALink registers the RX state machine's input (BufferizeEndpoints on its sink), which
cuts the path from its clock-crossing FIFO's output. On the same-clock datapath
(phy_datapath.py) that input comes from the transceiver's own output register, and the extra
stage is one more cycle in every answer the link gives the device (R_RDY, R_OK, SYNC).
The TX side keeps its register: it is the last stage before the transceiver.
"""

from migen import *

from litex.soc.interconnect import stream
from litex.soc.interconnect.stream import BufferizeEndpoints, DIR_SOURCE, Pipeline

from litesata.common import link_description, phy_description
from litesata.core.link import (LiteSATAALIGNInserter, LiteSATAALIGNRemover,
                                LiteSATACONTRemover, LiteSATALinkRX, LiteSATALinkTX)

from fisrig_hw.lfsr_tables import tabulate_link

RX_BUFFER_DEPTH = 256  # as LiteSATALink: HOLD asked for above half of it


class RigSATALink(Module):
    """The same interface as LiteSATALink: sink (FISes to send), source (FISes received),
    tx (its TX, whose from_rx and FSM LinkTxResult watches)."""
    def __init__(self, phy):
        self.submodules.tx = BufferizeEndpoints({"source": DIR_SOURCE})(LiteSATALinkTX())
        self.submodules.tx_align = LiteSATAALIGNInserter(phy_description(32))
        self.submodules.tx_pipeline = Pipeline(self.tx, self.tx_align, phy)

        self.submodules.rx_align = LiteSATAALIGNRemover(phy_description(32))
        self.submodules.rx_cont = LiteSATACONTRemover(phy_description(32))
        self.submodules.rx = LiteSATALinkRX()
        self.submodules.rx_buffer = stream.SyncFIFO(link_description(32), RX_BUFFER_DEPTH)
        self.submodules.rx_pipeline = Pipeline(phy, self.rx_align, self.rx_cont, self.rx,
                                               self.rx_buffer)

        self.comb += [
            self.rx.to_tx.connect(self.tx.from_rx),
            self.rx.hold.eq(self.rx_buffer.level > RX_BUFFER_DEPTH // 2),
        ]
        self.sink, self.source = self.tx_pipeline.sink, self.rx_pipeline.source
        tabulate_link(self)
