"""The analyzer's capture ring in a board's DDR (issue 62: "main RAM where there is DDR"):
CaptureWindow (engine/capture.py, built with external_store) hands each entry it keeps to a
block-RAM FIFO, and LiteDRAM's DMA writer puts it, one 512-bit word an entry, in the DDR past
the CPU's main RAM; the host bridge reads the entries back through a DRAM port of its own
(LiteDRAM's Wishbone2Native) at RING_BASE, 16 words an entry as from the block-RAM ring
(rig_capture.RingBus), so the host reads either alike (host/fisrig/capture/ring.py).

The DDR the ring uses is never the CPU's: the SoC maps only the DDR below DRAM_OFFSET as main
RAM (board_soc), so LiteX's L2 cache never holds a line of it, and both DRAM ports here reach
the controller past it. The FIFO takes the bursts the DDR cannot (an entry a cycle from the
compressors at most; the DDR's write port a 512-bit word every few cycles, with refreshes and
the CPU's traffic between); an entry the FIFO cannot take is dropped and counted, and takes
no slot (CaptureWindow.store_dropped). A window is held for the host only once every entry it
kept has left the FIFO and the DMA writer's own (store_busy)."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream, wishbone

from litedram.frontend.dma import LiteDRAMDMAWriter
from litedram.frontend.wishbone import LiteDRAMWishbone2Native

from fisrig_hw.engine.capture import ENTRY_BITS
from fisrig_hw.soc.rig_capture import ENTRY_WORDS, RING_BASE, RingBus

ENTRY_BYTES = 4 * ENTRY_WORDS
# The ring's DDR: from byte DRAM_OFFSET of the DDR (the CPU's main RAM is the 512 MiB below
# it), DRAM_DEPTH entries, 32 MiB: the largest region the bridge's decoder can place at
# RING_BASE (aligned to its size). Some 11 s of a QD4 workload's FISes and primitive runs.
DRAM_OFFSET = 0x2000_0000
DRAM_DEPTH = 1 << 19
# Entries the FIFO holds while the DDR is busy (each with its ring index: 359 bits).
FIFO_DEPTH = 512


class DRAMCaptureStore(LiteXModule):
    """capture: a CaptureWindow with external_store (depth at most DRAM_DEPTH); write_port: a
    LiteDRAM native port of ENTRY_BYTES * 8 bits, mode "write" (crossbar.get_port(mode="write",
    data_width=512)); read_port: one of the controller's width for the bridge's reads;
    `bus`: the bridge's Wishbone slave for RING_BASE (region of RingBus.size(depth));
    dram_offset: the ring's first byte in the DDR."""
    def __init__(self, capture, write_port, read_port, address_width, fifo_depth=FIFO_DEPTH,
                 dram_offset=DRAM_OFFSET):
        assert capture.external_store and capture.depth <= DRAM_DEPTH, capture.depth
        assert write_port.data_width == 8 * ENTRY_BYTES >= ENTRY_BITS, write_port.data_width
        self.depth = capture.depth
        self.fifo = fifo = stream.SyncFIFO([("index", len(capture.wr_index)), ("data", ENTRY_BITS)], fifo_depth,
                                           buffered=True)
        self.writer = writer = LiteDRAMDMAWriter(write_port)
        # Entries written the DMA writer holds (taken from the FIFO, not yet by the port).
        inflight = Signal(max=64)
        taken = writer.sink.valid & writer.sink.ready
        gone = write_port.wdata.valid & write_port.wdata.ready
        self.comb += [
            fifo.sink.valid.eq(capture.wr_valid), capture.wr_ready.eq(fifo.sink.ready),
            fifo.sink.index.eq(capture.wr_index), fifo.sink.data.eq(capture.wr_data),
            writer.sink.valid.eq(fifo.source.valid), fifo.source.ready.eq(writer.sink.ready),
            writer.sink.address.eq(dram_offset // ENTRY_BYTES + fifo.source.index),
            writer.sink.data.eq(fifo.source.data),  # the entry's bits low, zeros above
            capture.store_busy.eq(fifo.source.valid | (inflight != 0) | taken),
        ]
        self.sync += inflight.eq(inflight + taken - gone)
        # The host's reads: RING_BASE's word k is the DDR's 32-bit word dram_offset / 4 + k.
        self.bus = wishbone.Interface(data_width=32, address_width=address_width)
        self.reader = LiteDRAMWishbone2Native(self.bus, read_port, base_address=RING_BASE - dram_offset)

    def region_size(self):
        return RingBus.size(self.depth)
