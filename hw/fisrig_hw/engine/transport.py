"""Our transport layer on LiteSATA's link layer, both directions and every FIS type.

LiteSATA's own transport sends only Register H2D and Data FISes and drops DMA Setup (41h)
and Set Device Bits (A1h); an NCQ host needs both, so the engine sits on this instead:

- FisReceiver takes the link's dword stream (data, last, error = bad CRC) and presents each
  non-data FIS whole (up to seven dwords, with its type and CRC verdict) or, for a Data FIS,
  its payload as a stream.
- FisTransmitter queues whole frames (a Register H2D, or a Data FIS header and payload) for
  the link and reports each frame's R_OK / R_ERR from LiteSATA's link TX state machine.
"""

from migen import *

from litex.soc.interconnect import stream

from fisrig_hw.engine import fis

link_layout = [("data", 32), ("error", 1)]


class FisReceiver(Module):
    def __init__(self):
        self.sink = sink = stream.Endpoint(link_layout)      # from the link layer
        # A whole non-data FIS: valid until `ack`.
        self.hdr = [Signal(32, name="hdr{}".format(i)) for i in range(fis.MAX_HEADER_DWORDS)]
        self.hdr_valid = Signal()
        self.hdr_crc_error = Signal()
        self.ack = Signal()
        self.type = Signal(8)
        # A Data FIS: `data_start` is high (until `ack`) when its first dword has come;
        # the payload follows on `data` (last = the FIS's last dword, error = bad CRC).
        self.data_start = Signal()
        self.data = data = stream.Endpoint(link_layout)

        # # #

        count = Signal(3)
        self.submodules.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(sink.valid,
                sink.ready.eq(1),
                NextValue(self.type, sink.data[:8]),
                NextValue(self.hdr[0], sink.data),
                NextValue(count, 1),
                NextValue(self.hdr_crc_error, sink.error),
                If(sink.data[:8] == fis.DATA,
                    If(sink.last, NextState("DATA-EMPTY")).Else(NextState("DATA-START"))
                ).Elif(sink.last,
                    NextState("PRESENT")
                ).Else(
                    NextState("HEADER")
                )
            )
        )
        cases = {i: NextValue(self.hdr[i], sink.data) for i in range(1, fis.MAX_HEADER_DWORDS)}
        fsm.act("HEADER",
            sink.ready.eq(1),
            If(sink.valid,
                If(count < fis.MAX_HEADER_DWORDS, Case(count, cases)),
                NextValue(count, Mux(count == 7, 7, count + 1)),
                If(sink.last,
                    NextValue(self.hdr_crc_error, sink.error),
                    NextState("PRESENT")
                )
            )
        )
        fsm.act("PRESENT",
            self.hdr_valid.eq(1),
            If(self.ack, NextState("IDLE"))
        )
        # A Data FIS with no payload: nothing to deliver, nothing to wait for.
        fsm.act("DATA-EMPTY", NextState("IDLE"))
        fsm.act("DATA-START",
            self.data_start.eq(1),
            If(self.ack, NextState("DATA"))
        )
        fsm.act("DATA",
            sink.connect(data),
            If(sink.valid & sink.ready & sink.last, NextState("IDLE"))
        )


class LinkTxResult(Module):
    """R_OK / R_ERR for each frame LiteSATA's link TX sent, read off its state machine
    (LiteSATA reports neither). `aborted`: the device answered SYNC mid-frame."""
    def __init__(self, link_tx):
        self.ok = Signal()
        self.err = Signal()
        self.aborted = Signal()
        from litesata.common import primitives
        fsm, from_rx = link_tx.fsm, link_tx.from_rx
        in_wtrm = fsm.ongoing("WTRM")
        self.comb += [
            self.ok.eq(in_wtrm & from_rx.primitive_valid & (from_rx.primitive == primitives["R_OK"])),
            self.err.eq(in_wtrm & from_rx.primitive_valid & (from_rx.primitive == primitives["R_ERR"])),
            self.aborted.eq(link_tx.error & ~fsm.ongoing("IDLE") & ~fsm.ongoing("RDY")),
        ]


class FisTransmitter(Module):
    """Frames to the link, through a FIFO so that queueing a Register H2D never waits for
    the link (the device may own it: a host that waited there would deadlock against a
    device holding its own frame in our receive buffer)."""
    def __init__(self, depth=16):
        self.sink = sink = stream.Endpoint(link_layout)     # frames: dwords with last
        self.source = source = stream.Endpoint(link_layout)  # to the link layer
        self.submodules.fifo = fifo = stream.SyncFIFO(link_layout, depth, buffered=False)
        self.comb += [sink.connect(fifo.sink), fifo.source.connect(source)]
        # Frames handed to the link and not yet answered.
        self.level = fifo.level
