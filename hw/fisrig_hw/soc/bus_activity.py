"""Counters on the CPU's instruction and data buses, for profiling the firmware on the rig
itself: words moved (cache line fills on the instruction bus; line fills, uncached loads and
stores on the data bus) and cycles with a transaction open. The firmware reads them around
a run and prints the difference; 32 bits wrap every 28 s at 150 MHz, so differences over a
shorter span are exact."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStatus


class BusActivity(LiteXModule):
    def __init__(self, ibus, dbus):
        for name, bus, what in [("ibus", ibus, "instruction"), ("dbus", dbus, "data")]:
            words = CSRStatus(32, name=name + "_words",
                              description="Words the CPU's {} bus has moved.".format(what))
            busy = CSRStatus(32, name=name + "_busy",
                             description="Cycles with a transaction open on the CPU's {} bus "
                             "(waiting for the bus and the memory).".format(what))
            setattr(self, name + "_words", words)
            setattr(self, name + "_busy", busy)
            self.sync += [
                If(bus.cyc & bus.stb & bus.ack, words.status.eq(words.status + 1)),
                If(bus.cyc, busy.status.eq(busy.status + 1)),
            ]
