"""The rig's root port gateware (fisrig_hw/pcie, in Migen) against the simulated NVMe controller
at its TLP interface (sim/nvme, through its C API: nvme_device.py), end to end at the PHY's
beats: config requests set the function up (BAR0, memory space and bus mastering, 256-byte
payloads and reads, MSI-X), the CPU's window brings the controller up and rings its
doorbells, the engine's side writes SQEs into the rig's memory and finds the CQEs there, and
a 4 KiB write and its read back move their data across both ways through the rig's memory.
Every TLP either side sent is decoded by cocotbext-pcie's `Tlp.unpack`, and the device
counts nothing malformed, unsupported or bad."""
from __future__ import annotations

import struct

from migen import Module, passive
from migen.sim import run_simulation

from litepcie.frontend.wishbone import LitePCIeWishboneSlave

from cocotbext.pcie.core.tlp import Tlp, TlpType

from fisrig_hw import contract as c
from fisrig_hw.pcie.beats import beats_to_tlp
from fisrig_hw.pcie.nvme_device import NvmeBeatDevice
from fisrig_hw.pcie.rig_memory import RigMemory
from fisrig_hw.pcie.root_port import RootPort
from fisrig_hw.pcie.sim_phy import SimPCIePHY

from pcie_bringup import enable_controller, enumerate_function, reg_write

MEM, MEM_BYTES = 0x0010_0000, 32 * 1024   # the rig's memory, as the device addresses it
ASQ, ACQ, SQ1, CQ1 = 0x0000, 0x1000, 0x2000, 0x3000   # offsets in it: queues are page aligned
MSIX, WRITE_BUF, READ_BUF = 0x4000, 0x5000, 0x6000


class Dut(Module):
    def __init__(self):
        self.submodules.phy = SimPCIePHY()
        self.submodules.rp = RootPort(self.phy, cfg_timeout_cycles=2000)
        self.submodules.mmio = LitePCIeWishboneSlave(self.rp)
        self.submodules.mem = RigMemory(self.rp, MEM, MEM_BYTES, max_read_dwords=64)


def mem_write(dut, offset, data: bytes):
    for k in range(0, len(data), 4):
        yield from dut.mem.bus.write((offset + k) // 4, int.from_bytes(data[k:k + 4], "little"))


def mem_read(dut, offset, n) -> bytes:
    out = b""
    for k in range(0, n, 4):
        out += (yield from dut.mem.bus.read((offset + k) // 4)).to_bytes(4, "little")
    return out


def sqe(opcode, cid, nsid=0, prp1=0, cdw10=0, cdw11=0, cdw12=0) -> bytes:
    words = [opcode | cid << 16, nsid, 0, 0, 0, 0, prp1 & 0xFFFFFFFF, prp1 >> 32, 0, 0, cdw10, cdw11, cdw12, 0, 0, 0]
    return struct.pack("<16I", *words)


class Queues:
    def __init__(self):
        self.tail = {0: 0, 1: 0}
        self.head = {0: 0, 1: 0}

    def command(self, dut, qid, entry: bytes, out):
        sq, cq = (ASQ, ACQ) if qid == 0 else (SQ1, CQ1)
        yield from mem_write(dut, sq + 64 * self.tail[qid], entry)
        self.tail[qid] += 1
        yield from reg_write(dut.mmio, 0x1000 + 8 * qid, self.tail[qid])
        for _ in range(200):  # the CQE's phase bit, as the engine polls it
            dw3 = struct.unpack("<I", (yield from mem_read(dut, cq + 16 * self.head[qid] + 12, 4)))[0]
            if dw3 >> 16 & 1:
                break
            for _ in range(50):
                yield
        else:
            raise AssertionError(f"no CQE on queue {qid}")
        self.head[qid] += 1
        yield from reg_write(dut.mmio, 0x1000 + 8 * qid + 4, self.head[qid])
        out.append((qid, dw3 & 0xFFFF, dw3 >> 17))  # its command identifier, its status (phase bit off)


def test_the_root_port_enumerates_brings_up_and_moves_data_through_the_simulated_controller():
    dut = Dut()
    dev = NvmeBeatDevice("tiny-1gb", "enable_us=5")
    from_rig, out = [], {"cqes": []}

    @passive
    def monitor():  # the rig's TLPs at the PHY, as beats
        beats = []
        while True:
            if (yield dut.phy.sink.valid) and (yield dut.phy.sink.ready):
                beats.append(((yield dut.phy.sink.dat), (yield dut.phy.sink.be)))
                if (yield dut.phy.sink.last):
                    from_rig.append(beats)
                    beats = []
            yield

    def firmware():
        yield from enumerate_function(dut.rp.config, dut.mmio, MEM + MSIX, 2, out)
        # The controller: admin queues of 16 in the rig's memory, enabled.
        yield from enable_controller(dut.mmio, MEM + ASQ, MEM + ACQ, 16, out)
        q = Queues()
        yield from q.command(dut, 0, sqe(c.FISRIG_NVME_ADMIN_SET_FEATURES, 1, cdw10=c.FISRIG_NVME_FEAT_NUMBER_OF_QUEUES),
                             out["cqes"])
        yield from q.command(dut, 0, sqe(c.FISRIG_NVME_ADMIN_CREATE_IO_CQ, 2, prp1=MEM + CQ1, cdw10=15 << 16 | 1,
                                         cdw11=1 << 16 | 3), out["cqes"])
        yield from q.command(dut, 0, sqe(c.FISRIG_NVME_ADMIN_CREATE_IO_SQ, 3, prp1=MEM + SQ1, cdw10=15 << 16 | 1,
                                         cdw11=1 << 16 | 1), out["cqes"])
        data = bytes((k * 13 + 7) & 0xFF for k in range(4096))
        yield from mem_write(dut, WRITE_BUF, data)
        yield from q.command(dut, 1, sqe(c.FISRIG_NVME_CMD_WRITE, 4, nsid=1, prp1=MEM + WRITE_BUF, cdw10=64, cdw12=7),
                             out["cqes"])
        yield from q.command(dut, 1, sqe(c.FISRIG_NVME_CMD_READ, 5, nsid=1, prp1=MEM + READ_BUF, cdw10=64, cdw12=7),
                             out["cqes"])
        out["data"], out["read"] = data, (yield from mem_read(dut, READ_BUF, 4096))
        out["msix"] = struct.unpack("<2I", (yield from mem_read(dut, MSIX, 8)))
        out["malformed"] = yield dut.mem.malformed
        out["discarded"] = yield dut.rp.discarded

    run_simulation(dut, [dev.run(dut.phy), monitor(), firmware()])
    stats = dev.stats()
    dev.close()

    assert out["id"] == (c.FISRIG_PCIE_CPL_SC, c.FISRIG_NVME_SIM_VENDOR_ID | c.FISRIG_NVME_SIM_DEVICE_ID << 16)
    assert out["bar_size"] & 0xFFFFFFF0 == (~(16 * 1024 - 1)) & 0xFFFFFFF0
    assert out["csts"] & c.FISRIG_NVME_CSTS_RDY
    assert out["cqes"] == [(0, 1, 0), (0, 2, 0), (0, 3, 0), (1, 4, 0), (1, 5, 0)]  # each its cid, Successful
    assert out["read"] == out["data"]
    assert out["msix"] == (0xA0, 0xA1)  # the admin CQ's vector 0 and queue 1's vector 1 both came
    assert out["malformed"] == 0 and out["discarded"] == 0
    assert stats["malformed"] == 0 and stats["unsupported"] == 0 and stats["bad_completions"] == 0, stats

    # Every TLP both ways through the independent codec.
    rig = [Tlp.unpack(beats_to_tlp(b)) for b in from_rig]
    device = [Tlp.unpack(beats_to_tlp(b)) for b in dev.tlps_to_rig]
    assert stats["tlps_in"] == len(rig) and stats["tlps_out"] >= len(device)
    kinds = {t.fmt_type for t in rig}
    assert {TlpType.CFG_READ_0, TlpType.CFG_WRITE_0, TlpType.MEM_WRITE, TlpType.MEM_READ, TlpType.CPL_DATA} <= kinds
    reads = [t for t in device if t.fmt_type == TlpType.MEM_READ]
    assert len(reads) == 5 + 16  # the 5 SQEs, the write's 4 KiB in 256-byte reads
    for t in rig + device:
        assert t.check()
        if t.fmt_type == TlpType.CPL_DATA:
            assert t.byte_count == 4 * t.length
    data_writes = [t for t in device if t.fmt_type == TlpType.MEM_WRITE and t.length == 64]
    assert b"".join(bytes(t.data) for t in data_writes) == out["data"]  # the read's data, 16 writes of 256 bytes
