"""Bench classes for the engine's interfaces, one per interface in the cocotbext style:
each owns its signals and exposes coroutines at the level of what crosses it."""

import cocotb
from cocotb.queue import Queue
from cocotb.triggers import Lock, RisingEdge, ReadOnly

from fisrig_hw.descriptor import CPL_DWORDS, unpack_cpl
from litesata.common import primitives
from fisrig_hw.engine.wire_tap import FIRST_SCRAMBLE


class StreamSource:
    """Drives a valid/ready stream: send() queues beats (dicts of field values)."""
    def __init__(self, dut, prefix, clock):
        self.dut, self.prefix, self.clock = dut, prefix, clock
        self.queue = Queue()
        self.sig("valid").value = 0
        cocotb.start_soon(self._run())

    def sig(self, name):
        return getattr(self.dut, self.prefix + "_" + name)

    async def send(self, beats):
        for b in beats:
            await self.queue.put(b)

    def idle(self):
        return self.queue.empty() and not self.sig("valid").value

    async def _run(self):
        while True:
            beat = await self.queue.get()
            for k, v in beat.items():
                self.sig(k).value = v
            self.sig("valid").value = 1
            while True:
                await RisingEdge(self.clock)
                if self.sig("ready").value:
                    break
            if self.queue.empty():
                self.sig("valid").value = 0


class StreamSink:
    """Takes a valid/ready stream; beats() yields dicts; `ready_gap` throttles it."""
    def __init__(self, dut, prefix, clock, fields, ready_gap=0):
        self.dut, self.prefix, self.clock, self.fields = dut, prefix, clock, fields
        self.queue = Queue()
        self.ready_gap = ready_gap
        self.sig("ready").value = 1
        cocotb.start_soon(self._run())

    def sig(self, name):
        return getattr(self.dut, self.prefix + "_" + name)

    async def _run(self):
        n = 0
        while True:
            await RisingEdge(self.clock)
            ready = 1
            if self.ready_gap:
                n += 1
                ready = int(n % self.ready_gap != 0)
            if self.sig("valid").value and self.sig("ready").value:
                await self.queue.put({f: int(self.sig(f).value) for f in self.fields})
            self.sig("ready").value = ready


class DescriptorSource(StreamSource):
    """The submission side: 32-byte descriptors (descriptor.pack_desc)."""
    def __init__(self, dut, clock):
        super().__init__(dut, "desc", clock)

    async def submit(self, raw):
        await self.send([{"raw": int.from_bytes(raw, "little"), "last": 1}])


class CompletionSink(StreamSink):
    """The completion side: 80-byte records, decoded."""
    def __init__(self, dut, clock):
        super().__init__(dut, "cpl", clock, ["data", "last"])
        self.records = Queue()
        cocotb.start_soon(self._assemble())

    async def _assemble(self):
        words = []
        while True:
            beat = await self.queue.get()
            words.append(beat["data"])
            if beat["last"]:
                assert len(words) == CPL_DWORDS, words
                raw = b"".join(w.to_bytes(4, "little") for w in words)
                await self.records.put(unpack_cpl(raw))
                words = []

    async def record(self):
        return await self.records.get()


class RamModel:
    """Main RAM behind the engine's DMA streams (word addresses, little-endian dwords)."""
    def __init__(self, dut, clock):
        self.mem = {}
        self.writes = StreamSink(dut, "ram_wr", clock, ["address", "data"])
        self.read_addr = StreamSink(dut, "ram_rd_addr", clock, ["address"])
        self.read_data = StreamSource(dut, "ram_rd_data", clock)
        cocotb.start_soon(self._write())
        cocotb.start_soon(self._read())

    async def _write(self):
        while True:
            b = await self.writes.queue.get()
            self.mem[b["address"]] = b["data"]

    async def _read(self):
        while True:
            b = await self.read_addr.queue.get()
            await self.read_data.send([{"data": self.mem.get(b["address"], 0), "last": 0}])

    def write_bytes(self, byte_addr, data):
        for i in range(0, len(data), 4):
            self.mem[(byte_addr + i) // 4] = int.from_bytes(data[i:i + 4].ljust(4, b"\0"), "little")

    def read_bytes(self, byte_addr, n):
        return b"".join(self.mem.get((byte_addr + i) // 4, 0).to_bytes(4, "little") for i in range(0, n, 4))


class LinkPort:
    """The link layer as the engine sees it: frames out (answered R_OK or R_ERR), frames in
    (with a CRC verdict). The device model sits on this."""
    def __init__(self, dut, clock):
        self.dut, self.clock = dut, clock
        self.tx = StreamSink(dut, "tx", clock, ["data", "last"])
        self.rx = StreamSource(dut, "rx", clock)
        dut.tx_ok.value = 0
        dut.tx_err.value = 0
        self.frames = Queue()
        self.send_lock = Lock()
        self.wire_ticks = []
        for d in ("tx", "rx"):
            getattr(dut, "wire_{}_valid".format(d)).value = 0
        self.answer_r_err = 0  # the next n frames from the host get R_ERR
        # The next n Data FISes get R_ERR and still reach the device, as a device that
        # rejected the CRC and then reports success anyway (what an exerciser must catch).
        self.r_err_data_kept = 0
        cocotb.start_soon(self._collect())

    async def _collect(self):
        words = []
        while True:
            beat = await self.tx.queue.get()
            words.append(beat["data"])
            if beat["last"]:
                frame, words = words, []
                await self.wire("tx", frame)
                # WTRM / R_OK a few cycles after EOF, as a link layer answers.
                for _ in range(4):
                    await RisingEdge(self.clock)
                bad = self.answer_r_err > 0
                if bad:
                    self.answer_r_err -= 1
                kept = not bad and frame[0] & 0xFF == 0x46 and self.r_err_data_kept > 0
                if kept:
                    self.r_err_data_kept -= 1
                (self.dut.tx_err if bad or kept else self.dut.tx_ok).value = 1
                await RisingEdge(self.clock)
                self.dut.tx_ok.value = 0
                self.dut.tx_err.value = 0
                if not bad:
                    await self.frames.put(frame)

    async def wire(self, direction, dwords):
        """The frame as it crosses the wire, for the engine's wire taps: SOF, the FIS's
        dwords, a CRC, EOF, one a cycle. self.wire_ticks gets [direction, type, tick of the
        FIS's first dword, of its first payload dword, of its last] as they cross (a frame
        cut short keeps what it reached)."""
        sig = {f: getattr(self.dut, "wire_{}_{}".format(direction, f)) for f in ("valid", "data", "charisk")}
        # Its first dword scrambled as on a real wire (the only one the tap reads).
        seq = [(primitives["SOF"], 1), (dwords[0] ^ FIRST_SCRAMBLE, 0)] + [(d, 0) for d in dwords[1:]] + \
            [(0x5EC0DE, 0), (primitives["EOF"], 1)]
        entry = [direction, dwords[0] & 0xFF, None, None, None]
        self.wire_ticks.append(entry)
        for i, (data, k) in enumerate(seq):
            sig["valid"].value, sig["data"].value, sig["charisk"].value = 1, data, k
            await RisingEdge(self.clock)
            tick = int(self.dut.now.value)  # read at the edge: the cycle the tap took it in
            if i == 1:
                entry[2] = tick
            elif i == 2 and len(dwords) > 1:
                entry[3] = tick
            if 2 <= i <= len(dwords):
                entry[4] = tick
        sig["valid"].value = 0

    async def send(self, dwords, crc_error=False):
        beats = [{"data": d, "last": int(i == len(dwords) - 1),
                  "error": int(crc_error and i == len(dwords) - 1)} for i, d in enumerate(dwords)]
        async with self.send_lock:
            await self.wire("rx", dwords)
            await self.rx.send(beats)
            while not self.rx.idle():
                await RisingEdge(self.clock)
