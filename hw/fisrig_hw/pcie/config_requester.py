"""Configuration requests from the root port: one Type 0 Configuration Read or Write at a time
(CfgRd0, CfgWr0: a 3-dword header, one dword of data), its completion taken by its tag.

LitePCIe 2024.12's packetizer sends memory requests and completions only; the firmware's
enumeration (config reads of IDs and BAR sizes, BAR assignment, bus mastering, MSI-X) needs
these. A request that no completion answers in `timeout_cycles` ends timed out, and a
completion that comes after that is taken and dropped: nothing the device does (or does not
do) leaves the requester waiting."""
from migen import Cat, Constant, FSM, If, Mux, NextState, NextValue, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from litepcie.common import completion_layout, phy_layout

from fisrig_hw import contract as _c

# The tag of every configuration request: the crossbar's TLP controller hands its own
# requests tags from 0 up (as many as it keeps pending), and completions carrying this one
# are the config requester's (root_port.py routes them here).
CFG_TAG = 0xFF

# Completion Status of a completion, and the requester's own result for none at all
# (fisrig/pcie.h, which the firmware's enumeration reads them as).
CPL_SC, CPL_UR, CPL_CRS, CPL_CA = _c.FISRIG_PCIE_CPL_SC, _c.FISRIG_PCIE_CPL_UR, _c.FISRIG_PCIE_CPL_CRS, _c.FISRIG_PCIE_CPL_CA
TIMED_OUT = _c.FISRIG_PCIE_CPL_NONE


def bswap32(v):
    """A register's little-endian value as its dword rides the PHY stream (beats.py)."""
    return Cat(v[24:32], v[16:24], v[8:16], v[0:8])


class ConfigRequester(LiteXModule):
    """start (a cycle, while not busy) sends the request the fields describe; done (a cycle)
    says it ended: rdata (a read's data, the register's value), status (CPL_* or TIMED_OUT).
    source: the request's beats, to the PHY (root_port.py arbitrates them with the
    packetizer's); sink: completions carrying CFG_TAG (the depacketizer's), with
    `cpl_status` the completion's status field as it decoded it."""

    def __init__(self, requester_id: Signal, data_width: int = 64, timeout_cycles: int = 1 << 16):
        self.start = Signal()
        self.we = Signal()
        self.bus, self.device, self.function = Signal(8), Signal(5), Signal(3)
        self.register = Signal(10)
        self.first_be = Signal(4, reset=0xF)
        self.wdata = Signal(32)
        self.busy = Signal()
        self.done = Signal()
        self.rdata = Signal(32)
        self.status = Signal(3)
        self.source = stream.Endpoint(phy_layout(data_width))
        self.sink = stream.Endpoint(completion_layout(data_width))
        self.cpl_status = Signal(3)

        # # #

        we, bus, dev, fn, reg, be, wdata = (Signal.like(s) for s in (self.we, self.bus, self.device, self.function,
                                                                      self.register, self.first_be, self.wdata))
        dw0 = Signal(32)
        dw1 = Signal(32)
        dw2 = Signal(32)
        self.comb += [
            # Fmt/Type, and a length of one dword.
            dw0.eq(Mux(we, Constant(_c.FISRIG_PCIE_TLP_CFGWR0 << 24 | 1, 32), Constant(_c.FISRIG_PCIE_TLP_CFGRD0 << 24 | 1, 32))),
            dw1.eq(Cat(be, Constant(0, 4), Constant(CFG_TAG, 8), requester_id)),
            dw2.eq(Cat(Constant(0, 2), reg[:6], reg[6:10], Constant(0, 4), fn, dev, bus)),
        ]
        timer = Signal(max=timeout_cycles + 1)
        self.fsm = fsm = FSM(reset_state="IDLE")
        self.comb += self.busy.eq(~fsm.ongoing("IDLE"))
        fsm.act("IDLE",
            self.sink.ready.eq(1),  # a late completion (its request timed out) is dropped
            If(self.start,
                NextValue(we, self.we), NextValue(bus, self.bus), NextValue(dev, self.device),
                NextValue(fn, self.function), NextValue(reg, self.register), NextValue(be, self.first_be),
                NextValue(wdata, self.wdata),
                NextState("HEADER")))
        fsm.act("HEADER",
            self.source.valid.eq(1), self.source.first.eq(1),
            self.source.dat.eq(Cat(dw0, dw1)), self.source.be.eq(0xFF),
            If(self.source.ready, NextState("LAST")))
        fsm.act("LAST",
            self.source.valid.eq(1), self.source.last.eq(1),
            self.source.dat.eq(Cat(dw2, bswap32(wdata))),
            self.source.be.eq(Mux(we, 0xFF, 0x0F)),
            If(self.source.ready, NextValue(timer, 0), NextState("WAIT")))
        fsm.act("WAIT",
            self.sink.ready.eq(1),
            NextValue(timer, timer + 1),
            If(self.sink.valid & self.sink.first,
                NextValue(self.rdata, self.sink.dat[:32]),
                NextValue(self.status, self.cpl_status),
                If(self.sink.last, NextState("DONE")).Else(NextState("DRAIN"))
            ).Elif(timer == timeout_cycles,
                NextValue(self.status, TIMED_OUT),
                NextValue(self.rdata, 0xFFFFFFFF),
                NextState("DONE")))
        fsm.act("DRAIN",
            self.sink.ready.eq(1),
            If(self.sink.valid & self.sink.last, NextState("DONE")))
        fsm.act("DONE",
            self.done.eq(1),
            NextState("IDLE"))
