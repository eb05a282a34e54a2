"""The engine's own requests to the controller: one-dword memory writes into its BAR0 (SQ tail
and CQ head doorbells, CC), each a TLP the engine builds itself (a 3-dword header and its
dword: two beats), queued in order. `sent` pulses on the cycle the last beat goes to the
link, with `sent_slot` and `sent_stamp` saying what it was: that cycle is the doorbell's
stamp (engine_if.h's ts_doorbell: the last symbol of the write that made the SQE visible)."""
from migen import Cat, Constant, If, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from litepcie.common import phy_layout

from fisrig_hw import contract as _c
from fisrig_hw.pcie.config_requester import bswap32


class BarWrites(LiteXModule):
    def __init__(self, requester_id, depth: int = 16):
        # Queue a write: offset into BAR0, its value, and for an SQ tail doorbell the slot
        # whose SQE it makes visible (stamp=1).
        self.sink = stream.Endpoint([("offset", 16), ("value", 32), ("stamp", 1), ("slot", 8)])
        self.bar0 = Signal(32)            # where the enumeration placed BAR0
        self.link_up = Signal(reset=1)    # low (the drive's rails off): a write not begun is dropped
        self.source = stream.Endpoint(phy_layout(64))
        self.sent = Signal()
        self.sent_slot = Signal(8)
        self.sent_stamp = Signal()

        # # #

        self.fifo = fifo = stream.SyncFIFO(self.sink.description, depth)
        self.comb += self.sink.connect(fifo.sink)
        req = fifo.source
        second = Signal()  # the header's first beat went
        dw0 = (_c.FISRIG_PCIE_TLP_MWR32 << 24) | 1   # one dword
        dw1 = Cat(Constant(0xF, 4), Constant(0, 12), requester_id)  # first BE 1111b, last 0000b, tag 0
        adr = Signal(32)
        self.comb += [
            adr.eq(self.bar0 + req.offset),
            self.source.valid.eq(req.valid & (second | self.link_up)),
            self.source.first.eq(~second),
            self.source.last.eq(second),
            self.source.be.eq(0xFF),
            If(~second,
                self.source.dat.eq(Cat(Constant(dw0, 32), dw1)),
            ).Else(
                self.source.dat.eq(Cat(Constant(0, 2), adr[2:32], bswap32(req.value))),
            ),
            req.ready.eq((second & self.source.ready) | (~second & ~self.link_up)),
            self.sent.eq(second & req.valid & self.source.ready),
            self.sent_slot.eq(req.slot),
            self.sent_stamp.eq(req.stamp),
        ]
        self.sync += If(self.source.valid & self.source.ready, second.eq(~second))
