"""The engine's reads of the rig's RAM as Wishbone incrementing bursts: a word a cycle from a
slave that bursts (LiteX's SRAM on a bus built with bursting), where single reads took two.

Why: a data-out command whose data comes from RAM (a TRIM's range list, a raw command's
block) sent its Data FIS at half the link's rate on the rig SoC, the link holding the drive
while the engine waited for each word: the TRIMs' range list of 128 dwords took 1.7 us
against 0.85 at Gen3 (tests/rtl/test_targets_agree.py).

The sink is LiteX's WishboneDMAReader's: one address a word, `last` on the final word of a
run of consecutive addresses (the engine reads each Data FIS's words in order); the source
gives the words in order through a FIFO. Wishbone registered-feedback bursts: the word being
presented says whether another follows (CTI incrementing) or not (CTI end). LiteX's SRAM
acks an incrementing burst every cycle and has already scheduled the next word's ack when
the master moves on, so the master never drops STB in a burst (that ack would land in
whatever cycle came next): it ends a burst with CTI end while the FIFO still has room for
the word in flight, and only then waits for room. A slave that does not burst acks every
other cycle, as before.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream, wishbone

# Words the FIFO must still have room for to go on bursting: the word acked this cycle
# (written into the FIFO after the room was read) and the one the slave acks next.
BURST_ROOM = 3


class BurstReader(LiteXModule):
    def __init__(self, bus, fifo_depth=64):
        assert isinstance(bus, wishbone.Interface)
        self.bus = bus
        self.sink = sink = stream.Endpoint([("address", bus.adr_width)])
        self.source = source = stream.Endpoint([("data", bus.data_width)])

        # # #

        self.fifo = fifo = stream.SyncFIFO([("data", bus.data_width)], depth=fifo_depth)
        room = Signal(max=fifo_depth + 1)
        self.comb += room.eq(fifo_depth - fifo.level)
        # CTI incrementing only with BURST_ROOM to spare, so `room` never reaches 0 with an ack
        # scheduled: GO only falls after a word with CTI end.
        go = Signal()
        # A burst starts only on a cycle without an ack: LiteX's SRAM, asked for incrementing
        # on the cycle it acks a single word, starts its burst from the address on the bus,
        # which is still that word's (the word came twice, tests/hw/test_burst_reader.py).
        idle_slave = Signal(reset=1)  # the last cycle did not ask for more
        incr = Signal()
        self.comb += [
            go.eq(sink.valid & (room > 0)),
            incr.eq(~sink.last & (room >= BURST_ROOM) & ~(bus.ack & idle_slave)),
            bus.cyc.eq(go), bus.stb.eq(go),
            bus.we.eq(0),
            bus.sel.eq(2 ** (bus.data_width // 8) - 1),
            bus.adr.eq(sink.address),
            bus.cti.eq(Mux(incr, wishbone.CTI_BURST_INCREMENTING, wishbone.CTI_BURST_END)),
            bus.bte.eq(0),  # linear
            fifo.sink.data.eq(bus.dat_r),
            If(go & bus.ack,
                sink.ready.eq(1),
                fifo.sink.valid.eq(1),
            ),
            fifo.source.connect(source),
        ]
        self.sync += idle_slave.eq(~(go & incr))
