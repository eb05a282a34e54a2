"""The raw command engine's ring front end: the submission and completion rings of
engine_if.h in RAM (the SoC's ring RAM), reached over the SoC's Wishbone bus, on the engine's streams.

- Descriptor fetch: while sq_head != sq_tail, the 8 dwords of entry sq_head & (sq_entries-1)
  are read from sq_base + 32 * index and offered to the engine as one 256-bit beat (dword 0
  in bits 31:0); sq_head counts the descriptors the engine has taken.
- Completion write: each 20-dword record goes to cq_base + 80 * (cq_tail & (cq_entries-1));
  cq_tail moves once the whole record is in RAM. A full ring holds the engine's record
  stream: no record is dropped or overwritten.
- Data: the engine's ram_* word addresses are Wishbone word addresses already (the engine
  adds data_base, a byte address, itself), so the readers take them as they are; a read
  run's final address carries `last` (BurstReader ends its burst there).

One Wishbone master, `bus` (32-bit, word addressed): the four functions are round-robin
arbitrated inside, so the SoC adds one master. None of them holds the bus while it waits
on another, so they cannot deadlock.

Clearing `enable` re-bases the rings: while it is low sq_head follows sq_tail and cq_tail
follows cq_head, so the rings are empty whatever values the CPU left there. Clear it only
with the engine quiet: a Wishbone cycle is never aborted (LiteX slaves would ack into the
next master's cycle), so a record already being written still lands in the old ring,
uncounted, and a descriptor already offered is still delivered (the engine takes it
without looking at valid again), uncounted too.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.cores.dma import WishboneDMAWriter
from litex.soc.interconnect import stream, wishbone
from litex.soc.interconnect.csr import CSRStatus, CSRStorage

from fisrig_hw.soc.burst_reader import BurstReader
from fisrig_hw.descriptor import CPL_DWORDS, DESC_BITS
from fisrig_hw.direct_fsm import DirectFSM

DESC_BYTES = DESC_BITS // 8
CPL_BYTES = 4 * CPL_DWORDS


def word_bus():
    return wishbone.Interface(data_width=32, address_width=32, addressing="word")


class EngineRings(LiteXModule):
    def __init__(self, engine=None, with_csr=True, read_fifo_depth=64):
        # Engine side.
        self.desc = stream.Endpoint([("raw", DESC_BITS)])
        self.cpl = stream.Endpoint([("data", 32)])
        self.ram_wr = stream.Endpoint([("address", 30), ("data", 32)])
        self.ram_rd_addr = stream.Endpoint([("address", 30)])
        self.ram_rd_data = stream.Endpoint([("data", 32)])
        self.data_base = Signal(32)
        self.data_bytes = Signal(32)
        # CPU side (CSRs, or driven directly when with_csr=False).
        self.enable = Signal()
        self.sq_base, self.sq_entries, self.sq_tail = Signal(32), Signal(32), Signal(32)
        self.cq_base, self.cq_entries, self.cq_head = Signal(32), Signal(32), Signal(32)
        self.sq_head, self.cq_tail = Signal(32), Signal(32)
        self.cq_stalls = Signal(32)
        # SoC side.
        self.bus = word_bus()

        # # #

        desc_bus, cpl_bus, rd_bus, wr_bus = [word_bus() for _ in range(4)]
        self.arbiter = wishbone.Arbiter([desc_bus, cpl_bus, rd_bus, wr_bus], self.bus)

        # Data: the engine's dwords are already the little-endian words the CPU and the drive
        # see, so they go to and from RAM as they are (LiteX's "big" is its identity byte
        # order; its "little" swaps the bytes of each word). Reads are bursts (BurstReader):
        # a word a cycle from the SoC's RAM, which bursts, where single reads took two.
        self.dma_rd = BurstReader(rd_bus, fifo_depth=read_fifo_depth)
        self.dma_wr = WishboneDMAWriter(wr_bus, endianness="big")
        self.comb += [
            self.ram_rd_addr.connect(self.dma_rd.sink),
            self.dma_rd.source.connect(self.ram_rd_data),
            self.ram_wr.connect(self.dma_wr.sink),
        ]

        # Set by a disable, cleared when idle: work begun before it is not counted.
        desc_stale, cpl_stale = Signal(), Signal()

        # ---- descriptor fetch ----
        raw = Signal(DESC_BITS)
        fetch_adr = Signal(30)
        fetch_n = Signal(3)
        sq_slot = Signal(32)
        self.comb += sq_slot.eq(self.sq_head & (self.sq_entries - 1))
        self.fetch_fsm = fetch = DirectFSM(reset_state="IDLE")
        fetch.act("IDLE",
            If(self.enable & (self.sq_head != self.sq_tail),
                NextValue(fetch_adr, (self.sq_base + sq_slot * DESC_BYTES)[2:32]),
                NextValue(fetch_n, 0),
                NextState("READ")
            )
        )
        fetch.act("READ",
            desc_bus.cyc.eq(1), desc_bus.stb.eq(1), desc_bus.we.eq(0),
            desc_bus.sel.eq(0xF), desc_bus.adr.eq(fetch_adr),
            If(desc_bus.ack,
                # Shifted in from the top: after eight, dword 0 sits in bits 31:0.
                NextValue(raw, Cat(raw[32:], desc_bus.dat_r)),
                NextValue(fetch_adr, fetch_adr + 1),
                NextValue(fetch_n, fetch_n + 1),
                If(fetch_n == 7, If(desc_stale, NextState("IDLE")).Else(NextState("OFFER")))
            )
        )
        # Once offered it stays offered: the engine decides to take on valid and then
        # asserts ready a cycle later without checking valid again.
        fetch.act("OFFER",
            self.desc.valid.eq(1),
            If(self.desc.ready, NextState("IDLE"))
        )
        self.comb += self.desc.raw.eq(raw)

        # ---- completion write ----
        cq_slot, cq_used = Signal(32), Signal(32)
        cq_full, waited = Signal(), Signal()
        self.comb += [
            cq_slot.eq(self.cq_tail & (self.cq_entries - 1)),
            cq_used.eq(self.cq_tail - self.cq_head),
            cq_full.eq(cq_used >= self.cq_entries),  # >=: a bad cq_head holds, never overwrites
        ]
        cpl_adr = Signal(30)
        record_done = Signal()
        self.write_fsm = write = DirectFSM(reset_state="IDLE")
        write.act("IDLE",
            If(self.enable & self.cpl.valid,
                If(cq_full,
                    If(~waited, NextValue(waited, 1), NextValue(self.cq_stalls, self.cq_stalls + 1))
                ).Else(
                    NextValue(waited, 0),
                    NextValue(cpl_adr, (self.cq_base + cq_slot * CPL_BYTES)[2:32]),
                    NextState("WRITE")
                )
            )
        )
        write.act("WRITE",
            cpl_bus.cyc.eq(self.cpl.valid), cpl_bus.stb.eq(self.cpl.valid), cpl_bus.we.eq(1),
            cpl_bus.sel.eq(0xF), cpl_bus.adr.eq(cpl_adr), cpl_bus.dat_w.eq(self.cpl.data),
            self.cpl.ready.eq(cpl_bus.ack),
            If(cpl_bus.ack,
                NextValue(cpl_adr, cpl_adr + 1),
                If(self.cpl.last, record_done.eq(1), NextState("IDLE"))
            )
        )

        # ---- the counters ----
        self.sync += [
            If(~self.enable,
                desc_stale.eq(1), self.sq_head.eq(self.sq_tail)
            ).Else(
                If(fetch.ongoing("IDLE"), desc_stale.eq(0)),
                If(self.desc.valid & self.desc.ready & ~desc_stale, self.sq_head.eq(self.sq_head + 1)),
            ),
            If(~self.enable,
                cpl_stale.eq(1), self.cq_tail.eq(self.cq_head)
            ).Else(
                If(write.ongoing("IDLE"), cpl_stale.eq(0)),
                If(record_done & ~cpl_stale, self.cq_tail.eq(self.cq_tail + 1)),
            ),
        ]

        if engine is not None:
            self.comb += [
                self.desc.connect(engine.desc),
                engine.cpl.connect(self.cpl),
                engine.ram_wr.connect(self.ram_wr),
                engine.ram_rd_addr.connect(self.ram_rd_addr),
                self.ram_rd_data.connect(engine.ram_rd_data),
                engine.data_base.eq(self.data_base),
                engine.data_bytes.eq(self.data_bytes),
            ]
        if with_csr:
            self.add_csr()

    def add_csr(self):
        def storage(name, description, size=32):
            csr = CSRStorage(size, name=name, description=description)
            self.comb += getattr(self, name).eq(csr.storage)
            setattr(self, "_" + name, csr)

        def status(name, description):
            csr = CSRStatus(32, name=name, description=description)
            self.comb += csr.status.eq(getattr(self, name))
            setattr(self, "_" + name, csr)

        storage("enable", "Bit 0: rings running. While 0, sq_head follows sq_tail and cq_tail "
                "follows cq_head (both rings empty), so the CPU can re-base them.", size=1)
        storage("sq_base", "Submission ring: byte address in RAM (32-byte aligned).")
        storage("sq_entries", "Submission ring: entries of 32 bytes (a power of two, not 0).")
        storage("cq_base", "Completion ring: byte address in RAM (dword aligned).")
        storage("cq_entries", "Completion ring: records of 80 bytes (a power of two, not 0).")
        storage("sq_tail", "Doorbell: descriptors the CPU has written, free-running.")
        status("sq_head", "Descriptors the engine has taken, free-running.")
        status("cq_tail", "Records completely written, free-running.")
        storage("cq_head", "Records the CPU has consumed, free-running.")
        storage("data_base", "Byte address of the data window (the engine's data_word 0 "
                "for FISRIG_DATA_RAM).")
        storage("data_bytes", "Bytes of the data window: a descriptor whose data in RAM would "
                "run past it ends REFUSED (0: not checked).")
        status("cq_stalls", "Records that found the completion ring full and held the "
               "engine until the CPU advanced cq_head.")
