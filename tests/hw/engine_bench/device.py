"""A SATA device at FIS level in Python: enough of ATA for the engine's benches, with the
faults they need. It talks through interfaces.LinkPort."""

import cocotb
from cocotb.queue import Queue
from cocotb.triggers import RisingEdge, Timer

import pattern_ref

from fisrig_hw.engine.fis import DATA, DMA_ACTIVATE as DMA_ACT, DMA_SETUP, PIO_SETUP, REG_D2H, REG_H2D, SET_DEVICE_BITS as SDB


def d2h(status, error=0, lba=0, count=0):
    return [REG_D2H | 1 << 14 | status << 16 | error << 24, lba & 0xFFFFFF | 0x40 << 24,
            (lba >> 24) & 0xFFFFFF, count, 0]


def pio_setup(e_status, nbytes, to_host=True, status=0x58):
    return [PIO_SETUP | int(to_host) << 13 | 1 << 14 | status << 16, 0x40 << 24, 0,
            e_status << 24, nbytes]


def dma_setup(tag, nbytes, to_host):
    return [DMA_SETUP | int(to_host) << 13 | 1 << 14, tag, 0, 0, 0, nbytes, 0]


def sdb(tags, status=0x40, error=0):
    bits = 0
    for t in tags:
        bits |= 1 << t
    return [SDB | 1 << 14 | (status & 7) << 16 | ((status >> 4) & 7) << 20 | error << 24, bits]


def parse_h2d(f):
    return {"command": (f[0] >> 16) & 0xFF, "features": (f[0] >> 24) | ((f[2] >> 24) << 8),
            "lba": (f[1] & 0xFFFFFF) | (f[2] & 0xFFFFFF) << 24, "device": f[1] >> 24,
            "count": f[3] & 0xFFFF, "aux": f[4] & 0xFFFF}


class Device:
    def __init__(self, link, clock, sectors=1 << 20):
        self.link, self.clock = link, clock
        self.sectors = sectors
        self.media = {}         # lba -> 128 dwords
        self.data_frames = Queue()
        self.commands = []      # every H2D, parsed, in arrival order
        self.ncq = {}           # tag -> command
        self.ncq_batch = 1      # serve NCQ commands once this many are queued
        self.ncq_order = "fifo"  # or "reverse"
        self.fail_tag_lba = None  # an NCQ command covering this LBA fails (UNC)
        self.ncq_error_log = None
        self.hang = False
        self.crc_error_next_data = False
        self.next_read_dwords = None  # the next read sends this many data dwords, then success
        self.fis_sent = []
        cocotb.start_soon(self._dispatch())

    def identify(self):
        words = [0] * 256
        words[0] = 0x0040
        model = b"FISRIG BENCH DEVICE".ljust(40)
        for i in range(20):
            words[27 + i] = model[2 * i] << 8 | model[2 * i + 1]
        words[75] = 31
        words[76] = 1 << 8
        words[100] = self.sectors & 0xFFFF
        words[101] = self.sectors >> 16
        return [words[2 * i] | words[2 * i + 1] << 16 for i in range(128)]

    async def send(self, dwords, crc_error=False):
        self.fis_sent.append(dwords[0] & 0xFF)
        await self.link.send(dwords, crc_error)

    async def _dispatch(self):
        while True:
            f = await self.link.frames.get()
            if f[0] & 0xFF == DATA:
                await self.data_frames.put(f[1:])
            elif f[0] & 0xFF == REG_H2D:
                c = parse_h2d(f)
                self.commands.append(c)
                if not self.hang:
                    cocotb.start_soon(self._command(c))

    async def _command(self, c):
        cmd = c["command"]
        if cmd in (0x60, 0x61):
            tag = (c["count"] >> 3) & 31
            if self.ncq_error_log is not None:
                await self.send(d2h(0x41, 0x04))  # halted until log 10h is read
                return
            self.ncq[tag] = c
            await self.send(d2h(0x40))
            if len(self.ncq) >= self.ncq_batch:
                await self._serve_ncq()
        elif cmd == 0xEC:
            await self.send(pio_setup(0x50, 512))
            await self.send([DATA] + self.identify())
        elif cmd == 0x2F and c["lba"] & 0xFF == 0x10:
            log = [0] * 128
            if self.ncq_error_log:
                tag, lba = self.ncq_error_log
                log[0] = tag | 0x41 << 16 | 0x40 << 24
                log[1] = lba & 0xFFFFFF
                log[2] = lba >> 24
            self.ncq_error_log = None
            self.ncq.clear()
            await self.send(pio_setup(0x50, 512))
            await self.send([DATA] + log)
        elif cmd == 0x25:
            await self._read_data(c["lba"], c["count"] or 65536)
            await self.send(d2h(0x50))
        elif cmd == 0x35:
            n = c["count"] or 65536
            done = 0
            while done < n:
                await self.send([DMA_ACT])
                data = await self.data_frames.get()
                self._store(c["lba"] + done, data)
                done += len(data) // 128
            await self.send(d2h(0x50))
        elif cmd in (0xE7, 0xEA):
            await self.send(d2h(0x50))
        else:
            await self.send(d2h(0x51, 0x04))

    def _store(self, lba, data):
        for i in range(len(data) // 128):
            self.media[lba + i] = data[128 * i:128 * (i + 1)]

    def sector(self, lba):
        return self.media.get(lba, [0] * 128)

    async def _read_data(self, lba, n):
        words = []
        for i in range(n):
            words += self.sector(lba + i)
        if self.next_read_dwords is not None:  # a short or long transfer
            words = (words + [0x5A5A5A5A] * self.next_read_dwords)[:self.next_read_dwords]
            self.next_read_dwords = None
        for off in range(0, len(words), 2048):
            bad = self.crc_error_next_data
            self.crc_error_next_data = False
            await self.send([DATA] + words[off:off + 2048], crc_error=bad)

    async def _serve_ncq(self):
        tags = sorted(self.ncq)
        if self.ncq_order == "reverse":
            tags.reverse()
        done = []
        for tag in tags:
            c = self.ncq.pop(tag)
            n = c["features"] or 65536
            if self.fail_tag_lba is not None and c["lba"] <= self.fail_tag_lba < c["lba"] + n:
                if done:
                    await self.send(sdb(done))
                self.ncq_error_log = (tag, self.fail_tag_lba)
                await self.send(sdb([], status=0x41, error=0x40))
                return  # every other queued command is aborted by the error
            if c["command"] == 0x60:
                await self.send(dma_setup(tag, n * 512, True))
                await self._read_data(c["lba"], n)
            else:
                await self.send(dma_setup(tag, n * 512, False))
                got = 0
                while got < n:
                    await self.send([DMA_ACT])
                    data = await self.data_frames.get()
                    self._store(c["lba"] + got, data)
                    got += len(data) // 128
            done.append(tag)
            if len(done) == 4:  # one SDB for several tags
                await self.send(sdb(done))
                done = []
        if done:
            await self.send(sdb(done))
