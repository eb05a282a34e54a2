"""When the controller's memory writes crossed the rig's link: a tap on the PHY's receive
stream (the TLPs as they leave the link, before the root port's depacketizer and crossbar
add their cycles) that keeps, for each 32-bit memory write into the engine's map, its
address and the ticks of its first and last beats. The engine's write side takes one entry
a write, in order (the same writes reach its port, in the same order: `covers` is its port's
decoder), and stamps from it: engine_if.h's stamps are where a TLP crossed the link."""
from migen import If, Mux, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from fisrig_hw import contract as _c
from fisrig_hw.nvme.memory_map import covers

TAP_LAYOUT = [("adr", 32), ("t_first", 64), ("t_last", 64)]


class LinkWriteTap(LiteXModule):
    def __init__(self, phy_source, now, queues: int, slots: int, depth: int = 32):
        self.source = stream.Endpoint(TAP_LAYOUT)
        self.overflow = Signal(16)   # writes the tap had no room for (their stamps are lost)

        # # #

        self.fifo = fifo = stream.SyncFIFO(TAP_LAYOUT, depth)
        self.comb += fifo.source.connect(self.source)
        beat = phy_source.valid & phy_source.ready
        k = Signal(2)            # the TLP's beat: 0, 1, 2 for any after
        is_mwr = Signal()
        t_first = Signal(64)
        adr = Signal(32)
        self.sync += If(beat,
            If(phy_source.first,
                k.eq(1), t_first.eq(now),
                is_mwr.eq(phy_source.dat[24:32] == _c.FISRIG_PCIE_TLP_MWR32),
            ).Elif(k == 1,
                k.eq(2), adr.eq(phy_source.dat[:32]),
            ),
        )
        # The address is in the second beat (the header's third dword): the last for a
        # one-dword write.
        here_adr = Signal()
        self.comb += here_adr.eq((k == 1) & ~phy_source.first)
        cur_adr = Signal(32)
        self.comb += cur_adr.eq(Mux(here_adr, phy_source.dat[:32] & 0xFFFFFFFC, adr & 0xFFFFFFFC))
        first_tick = Signal(64)
        self.comb += first_tick.eq(Mux(phy_source.first, now, t_first))
        mwr = Signal()
        self.comb += mwr.eq(Mux(phy_source.first, phy_source.dat[24:32] == _c.FISRIG_PCIE_TLP_MWR32, is_mwr))
        push = Signal()
        self.comb += [
            push.eq(beat & phy_source.last & ~phy_source.first & mwr & covers(cur_adr, queues, slots)),
            fifo.sink.valid.eq(push),
            fifo.sink.adr.eq(cur_adr), fifo.sink.t_first.eq(first_tick), fifo.sink.t_last.eq(now),
        ]
        self.sync += If(push & ~fifo.sink.ready, self.overflow.eq(self.overflow + 1))

