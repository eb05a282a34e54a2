"""The rig's memory the device reaches over the link: a block RAM that answers the device's
memory reads (an NVMe controller fetching SQEs, PRP lists and a write's data) with one
completion each, and takes its memory writes (a read's data, CQEs, MSI-X messages), a 64-bit
beat a cycle at any dword alignment; the rig's own side (the CPU, the NVMe engine) reads and
writes it a dword at a time through a Wishbone port when the link side is idle.

The block RAM is two ports of 32 bits (a beat's two dwords at dword i and i + 1 in one
cycle, wherever i falls), each shared by the link side and the rig's side, the link side
first. A request this memory cannot answer as asked is counted in `malformed` and never
leaves the port waiting: a read longer than `max_read_dwords` (one completion may not carry
more than the link's Max_Payload_Size; the rig sets the device's Max_Read_Request_Size no
larger) or running past the memory's end is answered Unsupported Request; a write whose
beats end before its length, or run past it or past the memory's end, writes what falls in
the memory and its length says."""
from migen import Cat, FSM, If, Memory, Mux, NextState, NextValue, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream, wishbone

from litepcie.common import phy_layout

from fisrig_hw import contract as _c
from fisrig_hw.pcie.config_requester import bswap32

FMT_TYPE_CPLD = _c.FISRIG_PCIE_TLP_CPLD
FMT_TYPE_CPL = _c.FISRIG_PCIE_TLP_CPL


class RigMemory(LiteXModule):
    def __init__(self, root_port, base: int, size: int, max_read_dwords: int = 64, init=None):
        if base % 4 or size % 8 or base + size > 1 << 32:
            raise ValueError("the rig's memory: dword-aligned, whole 64-bit words, below 4 GB (root_port.py)")
        self.base, self.size = base, size
        words = size // 4
        self.bus = wishbone.Interface(data_width=32, adr_width=30, addressing="word")  # the rig's side, dword index
        self.malformed = Signal(16)
        self.reads = Signal(32)
        self.writes = Signal(32)

        # # #

        self.mem = mem = Memory(32, words, init=init, name="rig_memory")
        a = mem.get_port(write_capable=True)
        b = mem.get_port(write_capable=True)
        self.specials += mem, a, b

        port = root_port.get_slave_port(lambda adr: (adr >= base) & (adr < base + size))
        req = port.sink
        phy_id = root_port.phy.id

        index = Signal(max=words + 2)       # the dword the beat under way starts at
        left = Signal(11)                   # dwords of the request still to move
        tag, req_id, adr, length = Signal(8), Signal(16), Signal(32), Signal(10)
        req_index = Signal(32)
        self.comb += req_index.eq((req.adr[:32] - base)[2:])

        self.fsm = fsm = FSM(reset_state="IDLE")

        def write_beat(at, remaining):
            """The beat's two dwords at dword `at` on, as many as `remaining` and the memory hold."""
            return [
                a.adr.eq(at), a.dat_w.eq(req.dat[:32]), a.we.eq((remaining >= 1) & (at < words)),
                b.adr.eq(at + 1), b.dat_w.eq(req.dat[32:64]), b.we.eq((remaining >= 2) & (at + 1 < words)),
            ]

        fsm.act("IDLE",
            If(req.valid & req.first,
                If(req.we,
                    req.ready.eq(1),
                    *write_beat(req_index, req.len),
                    NextValue(index, req_index + 2),
                    NextValue(left, Mux(req.len >= 2, req.len - 2, 0)),
                    NextValue(self.writes, self.writes + 1),
                    If(req.last,
                        If((req.len > 2) | (req_index + req.len > words), NextValue(self.malformed, self.malformed + 1)),
                    ).Else(
                        If(req_index + req.len > words, NextValue(self.malformed, self.malformed + 1)),
                        NextState("WRITE"),
                    ),
                ).Else(
                    req.ready.eq(1),  # a read is its header alone
                    NextValue(tag, req.tag), NextValue(req_id, req.req_id), NextValue(adr, req.adr),
                    NextValue(length, req.len), NextValue(index, req_index), NextValue(left, req.len),
                    NextValue(self.reads, self.reads + 1),
                    If((req.len > max_read_dwords) | (req.len == 0) | (req_index + req.len > words),
                        NextValue(self.malformed, self.malformed + 1),
                        NextState("REFUSE"),
                    ).Else(
                        NextState("READ"),
                    ),
                ),
            ).Elif(self.bus.cyc & self.bus.stb,
                a.adr.eq(self.bus.adr), a.dat_w.eq(self.bus.dat_w), a.we.eq(self.bus.we & (self.bus.adr < words)),
                NextState("BUS"),
            ),
        )
        fsm.act("BUS",
            a.adr.eq(self.bus.adr),
            self.bus.dat_r.eq(a.dat_r), self.bus.ack.eq(1),
            NextState("IDLE"),
        )
        fsm.act("WRITE",
            req.ready.eq(1),
            If(req.valid,
                *write_beat(index, left),
                NextValue(index, index + 2),
                NextValue(left, Mux(left >= 2, left - 2, 0)),
                If(req.last,
                    If(left > 2, NextValue(self.malformed, self.malformed + 1)),  # its beats ended short
                    NextState("IDLE"),
                ).Elif(left <= 2,
                    NextValue(self.malformed, self.malformed + 1),  # beats past its length: taken, dropped
                    NextState("DRAIN"),
                ),
            ),
        )
        fsm.act("DRAIN",
            req.ready.eq(1),
            If(req.valid & req.last, NextState("IDLE")),
        )
        # Reads: answered by a completion this builds itself (LitePCIe 2024.12's packetizer
        # gives a completion of 2 dwords in one beat 1 dword, and pads one of 3 with a fourth;
        # the crossbar's completion side of this port stays idle). Beat 0 is the header's
        # first two dwords, beat 1 its third and the payload's first, beat m >= 2 payload
        # dwords 2m - 3 and 2m - 2: the memory's two ports read the beat's pair a cycle
        # ahead, at any dword alignment.
        self.tx = tx = stream.Endpoint(phy_layout(64))
        root_port.add_tx_source(tx)
        status = Signal(3)    # the completion's status: FISRIG_PCIE_CPL_SC, or _UR
        beat = Signal(8)
        nxt = Signal(max=words + 4)
        dw0, dw1, dw2 = Signal(32), Signal(32), Signal(32)
        self.comb += [
            dw0.eq(Mux(status == 0, (FMT_TYPE_CPLD << 24) | length, FMT_TYPE_CPL << 24)),
            dw1.eq((phy_id << 16) | (status << 13) | Mux(status == 0, length << 2, 0)),
            dw2.eq((req_id << 16) | (tag << 8) | adr[:7]),
        ]
        fsm.act("READ",  # beat 1's payload dword on its way out of the memory
            b.adr.eq(index),
            NextValue(status, 0), NextValue(beat, 0), NextValue(nxt, index + 1),
            NextState("CPL_HEADER"),
        )
        fsm.act("CPL_HEADER",
            tx.valid.eq(1), tx.first.eq(1), tx.dat.eq(Cat(dw0, dw1)), tx.be.eq(0xFF),
            b.adr.eq(index),  # held for beat 1
            If(tx.ready,
                If(status != 0, NextState("CPL_END")).Else(NextState("CPL_FIRST"))),
        )
        fsm.act("REFUSE",  # Unsupported Request: a completion without data
            NextValue(status, _c.FISRIG_PCIE_CPL_UR), NextValue(length, 0),
            NextState("CPL_HEADER"),
        )
        fsm.act("CPL_END",  # a completion without data: its third header dword alone
            tx.valid.eq(1), tx.last.eq(1), tx.dat.eq(dw2), tx.be.eq(0x0F),
            If(tx.ready, NextState("IDLE")),
        )
        fsm.act("CPL_FIRST",
            tx.valid.eq(1), tx.last.eq(left <= 1), tx.dat.eq(Cat(dw2, bswap32(b.dat_r))), tx.be.eq(0xFF),
            a.adr.eq(nxt), b.adr.eq(nxt + 1),
            If(tx.ready,
                NextValue(left, left - 1),
                If(left <= 1, NextState("IDLE")).Else(NextState("CPL_PAYLOAD")),
            ).Else(
                b.adr.eq(index),
            ),
        )
        fsm.act("CPL_PAYLOAD",
            tx.valid.eq(1), tx.last.eq(left <= 2),
            tx.dat.eq(Cat(bswap32(a.dat_r), bswap32(b.dat_r))), tx.be.eq(Mux(left >= 2, 0xFF, 0x0F)),
            If(tx.ready,
                a.adr.eq(nxt + 2), b.adr.eq(nxt + 3),
                NextValue(nxt, nxt + 2),
                NextValue(left, left - 2),
                If(left <= 2, NextState("IDLE")),
            ).Else(
                a.adr.eq(nxt), b.adr.eq(nxt + 1),
            ),
        )
