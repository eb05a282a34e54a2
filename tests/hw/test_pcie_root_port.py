"""The rig's PCIe root port (fisrig_hw/pcie) in Migen simulation, against a device played at the
PHY's streams, every TLP read and written through an independent codec: cocotbext-pcie's
`Tlp.unpack` decodes each TLP the rig sends (format, type, length, byte enables, tag,
requester and completer IDs, address, byte count, data) and `Tlp.pack` makes each the device
sends. Config reads and writes (the enumeration's), a UR completion, a config request no
one answers and the completion that comes too late, the CPU's reads and writes of the
device's BAR, the device's writes and reads of the rig's memory, and a completion for no
request of the rig's: the port goes on after each."""
from __future__ import annotations

from migen import Module, passive
from migen.sim import run_simulation

from litex.soc.interconnect import wishbone

from litepcie.frontend.wishbone import LitePCIeWishboneMaster, LitePCIeWishboneSlave

from cocotbext.pcie.core.tlp import CplStatus, PcieId, Tlp, TlpType

from fisrig_hw.pcie.beats import beats_to_tlp, tlp_to_beats
from fisrig_hw.pcie.config_requester import CFG_TAG, CPL_SC, CPL_UR, TIMED_OUT
from fisrig_hw.pcie.root_port import RootPort
from fisrig_hw.pcie.sim_phy import SimPCIePHY

RIG_ID = PcieId(0, 0, 0)    # the root port: bus 0, device 0, function 0
DEV_ID = PcieId(1, 0, 0)    # the SSD below it
CFG_TIMEOUT = 300
BAR0 = 0x1000_0000


class Dut(Module):
    def __init__(self):
        self.submodules.phy = SimPCIePHY(requester_id=0x0000)
        self.submodules.rp = RootPort(self.phy, cfg_timeout_cycles=CFG_TIMEOUT)
        # The CPU's window onto the device's memory space (its BAR), one dword an access.
        self.submodules.mmio = LitePCIeWishboneSlave(self.rp)
        # The rig's memory the device reads and writes (1 KiB at 0).
        self.submodules.dma = LitePCIeWishboneMaster(self.rp, address_decoder=lambda a: 1)
        self.submodules.ram = wishbone.SRAM(1024, bus=self.dma.wishbone)


class Device:
    """The device at the far end of the link: answers config requests to 1:0.0 from its space
    (UR for any other), memory requests to its BAR from its registers, except those it is
    told to leave unanswered; sends what `send` holds."""

    def __init__(self, dut: Dut):
        self.dut = dut
        self.config = {0: 0x0010_1B36, 1: 0x0010_0000, 2: 0x0108_0200, 4: 0, 5: 0}  # IDs, command/status, class NVMe
        self.regs: dict[int, int] = {0x08: 0x0001_0400}  # BAR0 offset -> value (VS 1.4)
        self.from_rig: list[Tlp] = []
        self.send: list[bytes] = []
        self.unanswered_cfg = 0  # config requests to take and leave unanswered
        self.late: list[bytes] = []  # completions held back, sent when the test says

    @passive
    def receive(self):
        sink = self.dut.phy.sink
        yield sink.ready.eq(1)
        beats = []
        while True:
            yield
            if (yield sink.valid) and (yield sink.ready):
                if (yield sink.first):
                    beats = []
                beats.append(((yield sink.dat), (yield sink.be)))
                if (yield sink.last):
                    self.answer(Tlp.unpack(beats_to_tlp(beats)))

    def answer(self, tlp: Tlp):
        self.from_rig.append(tlp)
        if tlp.fmt_type in (TlpType.CFG_READ_0, TlpType.CFG_WRITE_0):
            if self.unanswered_cfg:
                self.unanswered_cfg -= 1
                cpl = Tlp.create_completion_data_for_tlp(tlp, DEV_ID)
                cpl.byte_count, cpl.length, cpl.data = 4, 1, bytearray((0xDEADBEEF).to_bytes(4, "little"))
                self.late.append(cpl.pack())
                return
            if tlp.completer_id != DEV_ID:
                self.send.append(Tlp.create_ur_completion_for_tlp(tlp, DEV_ID).pack())
                return
            reg = tlp.address >> 2
            if tlp.fmt_type == TlpType.CFG_WRITE_0:
                self.config[reg] = int.from_bytes(tlp.get_data(), "little")
                self.send.append(Tlp.create_completion_for_tlp(tlp, DEV_ID).pack())
            else:
                cpl = Tlp.create_completion_data_for_tlp(tlp, DEV_ID)
                cpl.byte_count, cpl.length = 4, 1
                cpl.data = bytearray(self.config.get(reg, 0).to_bytes(4, "little"))
                self.send.append(cpl.pack())
        elif tlp.fmt_type == TlpType.MEM_WRITE:
            self.regs[tlp.address - BAR0] = int.from_bytes(tlp.get_data(), "little")
        elif tlp.fmt_type == TlpType.MEM_READ:
            cpl = Tlp.create_completion_data_for_tlp(tlp, DEV_ID)
            cpl.byte_count, cpl.length, cpl.lower_address = 4, 1, tlp.address & 0x7F
            cpl.data = bytearray(self.regs.get(tlp.address - BAR0, 0).to_bytes(4, "little"))
            self.send.append(cpl.pack())

    @passive
    def transmit(self):
        src = self.dut.phy.source
        while True:
            if not self.send:
                yield
                continue
            beats = tlp_to_beats(self.send.pop(0))
            for k, (dat, be) in enumerate(beats):
                yield src.valid.eq(1)
                yield src.first.eq(k == 0)
                yield src.last.eq(k == len(beats) - 1)
                yield src.dat.eq(dat)
                yield src.be.eq(be)
                yield
                while not (yield src.ready):
                    yield
            yield src.valid.eq(0)


def cfg(dut: Dut, we: int, bus: int, device: int, register: int, wdata: int = 0):
    """One config request through the root port's requester: (status, rdata)."""
    c = dut.rp.config
    yield c.we.eq(we)
    yield c.bus.eq(bus)
    yield c.device.eq(device)
    yield c.function.eq(0)
    yield c.register.eq(register)
    yield c.wdata.eq(wdata)
    yield c.start.eq(1)
    yield
    yield c.start.eq(0)
    for _ in range(CFG_TIMEOUT + 100):
        yield
        if (yield c.done):
            return (yield c.status), (yield c.rdata)
    raise AssertionError("the config requester never ended")


def run(test):
    dut = Dut()
    dev = Device(dut)
    out = {}
    run_simulation(dut, [dev.receive(), dev.transmit(), test(dut, dev, out)])
    return dev, out


def test_config_reads_and_writes_are_type_0_requests_with_the_answers_taken():
    def test(dut, dev, out):
        out["id"] = yield from cfg(dut, 0, 1, 0, 0)
        out["bar0"] = yield from cfg(dut, 1, 1, 0, 4, BAR0 | 0x4)
        out["bar0_back"] = yield from cfg(dut, 0, 1, 0, 4)
        out["absent"] = yield from cfg(dut, 0, 2, 0, 0)
        out["ext"] = yield from cfg(dut, 0, 1, 0, 0x100 >> 2)  # the first extended capability's dword
    dev, out = run(test)
    assert out["id"] == (CPL_SC, 0x0010_1B36)
    assert out["bar0"][0] == CPL_SC and dev.config[4] == BAR0 | 0x4
    assert out["bar0_back"] == (CPL_SC, BAR0 | 0x4)
    assert out["absent"][0] == CPL_UR
    assert out["ext"] == (CPL_SC, 0)
    sent = dev.from_rig
    assert [t.fmt_type for t in sent] == [TlpType.CFG_READ_0, TlpType.CFG_WRITE_0, TlpType.CFG_READ_0,
                                          TlpType.CFG_READ_0, TlpType.CFG_READ_0]
    for t in sent:
        assert (t.length, t.first_be, t.last_be, t.tag, t.requester_id) == (1, 0xF, 0, CFG_TAG, RIG_ID)
        assert not t.ep and not t.td and t.tc == 0
    assert [t.completer_id for t in sent] == [DEV_ID, DEV_ID, DEV_ID, PcieId(2, 0, 0), DEV_ID]
    assert [t.address for t in sent] == [0, 0x10, 0x10, 0, 0x100]
    assert sent[1].get_data() == (BAR0 | 0x4).to_bytes(4, "little")  # a register's value, little-endian on the wire


def test_a_config_request_no_one_answers_times_out_and_its_late_completion_is_dropped():
    def test(dut, dev, out):
        dev.unanswered_cfg = 1
        out["lost"] = yield from cfg(dut, 0, 1, 0, 0)
        dev.send.extend(dev.late)  # the completion comes after all
        for _ in range(20):
            yield
        out["next"] = yield from cfg(dut, 0, 1, 0, 0)
    dev, out = run(test)
    assert out["lost"] == (TIMED_OUT, 0xFFFFFFFF)
    assert out["next"] == (CPL_SC, 0x0010_1B36)


def test_the_cpu_reads_and_writes_the_devices_bar_as_memory_requests():
    def test(dut, dev, out):
        bus = dut.mmio.wishbone
        yield from bus.write((BAR0 + 0x14) >> 2, 0x0046_0001)  # CC: EN, IOSQES 6, IOCQES 4
        out["vs"] = yield from bus.read((BAR0 + 0x08) >> 2)
        yield from bus.write((BAR0 + 0x1000) >> 2, 7)  # the admin SQ's tail doorbell
        for _ in range(20):
            yield
    dev, out = run(test)
    assert out["vs"] == 0x0001_0400
    assert dev.regs[0x14] == 0x0046_0001 and dev.regs[0x1000] == 7
    writes = [t for t in dev.from_rig if t.fmt_type == TlpType.MEM_WRITE]
    reads = [t for t in dev.from_rig if t.fmt_type == TlpType.MEM_READ]
    assert [t.address for t in writes] == [BAR0 + 0x14, BAR0 + 0x1000]
    assert [t.get_data() for t in writes] == [(0x0046_0001).to_bytes(4, "little"), (7).to_bytes(4, "little")]
    assert [(t.address, t.length) for t in reads] == [(BAR0 + 0x08, 1)]
    for t in writes + reads:
        assert (t.length, t.first_be, t.last_be, t.requester_id) == (1, 0xF, 0, RIG_ID)
        assert t.tag != CFG_TAG


def test_the_device_writes_and_reads_the_rigs_memory():
    def test(dut, dev, out):
        wr = Tlp()
        wr.fmt_type, wr.requester_id, wr.tag = TlpType.MEM_WRITE, DEV_ID, 3
        wr.set_addr_be_data(0x40, (0xCAFE_F00D).to_bytes(4, "little"))  # a CQE's dword, an MSI-X message
        rd = Tlp()
        rd.fmt_type, rd.requester_id, rd.tag = TlpType.MEM_READ, DEV_ID, 9
        rd.set_addr_be(0x40, 4)
        dev.send += [wr.pack(), rd.pack()]
        for _ in range(60):
            yield
        out["ram"] = yield dut.ram.mem[0x40 >> 2]
    dev, out = run(test)
    assert out["ram"] == 0xCAFE_F00D
    cpls = [t for t in dev.from_rig if t.fmt_type == TlpType.CPL_DATA]
    assert len(cpls) == 1
    c = cpls[0]
    assert (c.requester_id, c.tag, c.completer_id, c.status) == (DEV_ID, 9, RIG_ID, CplStatus.SC)
    assert (c.length, c.byte_count, c.lower_address) == (1, 4, 0x40)
    assert c.get_data() == (0xCAFE_F00D).to_bytes(4, "little")


def test_a_completion_for_no_request_of_the_rigs_leaves_the_port_working():
    def test(dut, dev, out):
        stray = Tlp()
        stray.fmt_type, stray.requester_id, stray.completer_id, stray.tag = TlpType.CPL_DATA, RIG_ID, DEV_ID, 2
        stray.byte_count, stray.length, stray.data = 4, 1, bytearray(4)
        dev.send.append(stray.pack())
        for _ in range(30):
            yield
        out["vs"] = yield from dut.mmio.wishbone.read((BAR0 + 0x08) >> 2)
        out["id"] = yield from cfg(dut, 0, 1, 0, 0)
    dev, out = run(test)
    assert out["vs"] == 0x0001_0400
    assert out["id"] == (CPL_SC, 0x0010_1B36)


# The rig's memory (rig_memory.py) behind the root port, as the NVMe engine has it.

from fisrig_hw.pcie.rig_memory import RigMemory

MEM_BASE, MEM_SIZE = 0x0010_0000, 4096


class MemDut(Module):
    def __init__(self):
        self.submodules.phy = SimPCIePHY(requester_id=0x0000)
        self.submodules.rp = RootPort(self.phy, cfg_timeout_cycles=CFG_TIMEOUT)
        self.submodules.mem = RigMemory(self.rp, MEM_BASE, MEM_SIZE, max_read_dwords=64,
                                        init=[0x1000_0000 + k for k in range(MEM_SIZE // 4)])


def mem_request(kind, addr, payload: bytes = b"", dwords: int = 0, tag: int = 0):
    t = Tlp()
    t.fmt_type, t.requester_id, t.tag = kind, DEV_ID, tag
    if kind == TlpType.MEM_WRITE:
        t.set_addr_be_data(addr, payload)
    else:
        t.set_addr_be(addr, dwords * 4)
    return t.pack()


def dwords_bytes(values):
    return b"".join(v.to_bytes(4, "little") for v in values)


def run_mem(sends, wait=400, after=None):
    dut = MemDut()
    dev = Device(dut)
    out = {}

    def test(dut, dev, out):
        dev.send += sends
        for _ in range(wait):
            yield
        out["malformed"] = yield dut.mem.malformed
        if after:
            yield from after(dut, out)
        out["mem"] = []
        for k in range(MEM_SIZE // 4):
            out["mem"].append((yield dut.mem.mem[k]))
    run_simulation(dut, [dev.receive(), dev.transmit(), test(dut, dev, out)])
    return dev, out


def test_the_devices_writes_land_whole_at_any_dword_alignment_and_length():
    cases = [(0x00, 16), (0x44, 3), (0x100, 1), (0x204, 4), (0x300, 64), (0x404, 5), (0x500, 2)]
    sends = [mem_request(TlpType.MEM_WRITE, MEM_BASE + off, dwords_bytes([0xA000_0000 + (off << 8) + k for k in range(n)]))
             for off, n in cases]
    dev, out = run_mem(sends)
    assert out["malformed"] == 0
    want = [0x1000_0000 + k for k in range(MEM_SIZE // 4)]
    for off, n in cases:
        for k in range(n):
            want[off // 4 + k] = 0xA000_0000 + (off << 8) + k
    assert out["mem"] == want  # each write's dwords, nothing before or after them touched


def test_the_devices_reads_are_answered_by_one_well_formed_completion_each():
    cases = [(0x00, 16, 1), (0x44, 3, 2), (0x100, 1, 3), (0x204, 4, 4), (0x300, 64, 5), (0x404, 5, 6)]
    sends = [mem_request(TlpType.MEM_READ, MEM_BASE + off, dwords=n, tag=tag) for off, n, tag in cases]
    dev, out = run_mem(sends, wait=600)
    cpls = [t for t in dev.from_rig if t.fmt_type == TlpType.CPL_DATA]
    assert [c.tag for c in cpls] == [tag for _, _, tag in cases]
    for c, (off, n, _) in zip(cpls, cases):
        assert (c.requester_id, c.completer_id, c.status) == (DEV_ID, RIG_ID, CplStatus.SC)
        assert (c.length, c.byte_count, c.lower_address) == (n, 4 * n, (MEM_BASE + off) & 0x7F)
        assert c.get_data() == dwords_bytes([0x1000_0000 + off // 4 + k for k in range(n)])
        assert c.check()
    assert out["malformed"] == 0


def test_requests_the_memory_cannot_answer_are_refused_or_counted_and_the_port_goes_on():
    sends = [
        mem_request(TlpType.MEM_READ, MEM_BASE + 0x100, dwords=128, tag=1),      # past one completion's most
        mem_request(TlpType.MEM_READ, MEM_BASE + MEM_SIZE - 8, dwords=4, tag=2),  # past the memory's end
        mem_request(TlpType.MEM_WRITE, MEM_BASE + MEM_SIZE - 8, dwords_bytes([7, 8, 9, 10])),  # two fall outside
        mem_request(TlpType.MEM_READ, MEM_BASE + 0x10, dwords=2, tag=3),          # and a good one after
    ]
    dev, out = run_mem(sends, wait=500)
    cpls = [t for t in dev.from_rig if t.fmt_type in (TlpType.CPL, TlpType.CPL_DATA)]
    assert [(c.tag, c.fmt_type, c.status) for c in cpls] == [
        (1, TlpType.CPL, CplStatus.UR), (2, TlpType.CPL, CplStatus.UR), (3, TlpType.CPL_DATA, CplStatus.SC)]
    assert cpls[2].get_data() == dwords_bytes([0x1000_0004, 0x1000_0005])
    assert out["malformed"] == 3
    assert out["mem"][-2:] == [7, 8]


def test_the_rigs_side_reads_and_writes_the_memory_between_the_devices_requests():
    def after(dut, out):
        bus = dut.mem.bus
        yield from bus.write(0x10, 0x5151_5151)  # an SQE's dword (at byte 0x40), as the engine writes it
        out["cqe"] = yield from bus.read(0x80 // 4)  # a CQE's first dword, as the device wrote it
    sends = [mem_request(TlpType.MEM_WRITE, MEM_BASE + 0x80, dwords_bytes([0xC0E0_0001, 2, 3, 4])),
             mem_request(TlpType.MEM_READ, MEM_BASE + 0x80, dwords=1, tag=7)]
    dev, out = run_mem(sends, wait=200, after=after)
    assert out["cqe"] == 0xC0E0_0001 and out["mem"][0x10] == 0x5151_5151
    cpl = [t for t in dev.from_rig if t.fmt_type == TlpType.CPL_DATA]
    assert [c.get_data() for c in cpl] == [dwords_bytes([0xC0E0_0001])]


def test_a_request_with_a_64_bit_address_is_dropped_counted_and_the_port_goes_on():
    wr64 = Tlp()
    wr64.fmt_type, wr64.requester_id = TlpType.MEM_WRITE_64, DEV_ID
    wr64.set_addr_be_data((1 << 32) + MEM_BASE, dwords_bytes([0xBAD0_0001, 0xBAD0_0002]))

    def after(dut, out):
        out["discarded"] = yield dut.rp.discarded
    sends = [wr64.pack(), mem_request(TlpType.MEM_WRITE, MEM_BASE, dwords_bytes([0x600D])),
             mem_request(TlpType.MEM_READ, MEM_BASE, dwords=1, tag=4)]
    dev, out = run_mem(sends, wait=200, after=after)
    assert out["discarded"] == 1 and out["malformed"] == 0
    assert out["mem"][0] == 0x600D and 0xBAD0_0001 not in out["mem"]
    assert [(t.tag, t.get_data()) for t in dev.from_rig if t.fmt_type == TlpType.CPL_DATA] == [(4, dwords_bytes([0x600D]))]


def test_litepcies_tlp_codes_are_fisrig_pcie_hs():
    """The packetizer and depacketizer use LitePCIe's table; the rig's own TLPs (config
    requests, completions) and the firmware use fisrig/pcie.h's: one and the same."""
    from litepcie.tlp.common import cpl_dict, fmt_type_dict
    from fisrig_hw import contract as c
    assert {k: fmt_type_dict[k] for k in ("mem_rd32", "mem_rd64", "mem_wr32", "mem_wr64", "cfg_rd0", "cfg_wr0",
                                          "cpl", "cpld")} == {
        "mem_rd32": c.FISRIG_PCIE_TLP_MRD32, "mem_rd64": c.FISRIG_PCIE_TLP_MRD64,
        "mem_wr32": c.FISRIG_PCIE_TLP_MWR32, "mem_wr64": c.FISRIG_PCIE_TLP_MWR64,
        "cfg_rd0": c.FISRIG_PCIE_TLP_CFGRD0, "cfg_wr0": c.FISRIG_PCIE_TLP_CFGWR0,
        "cpl": c.FISRIG_PCIE_TLP_CPL, "cpld": c.FISRIG_PCIE_TLP_CPLD}
    assert (cpl_dict["sc"], cpl_dict["ur"], cpl_dict["crs"]) == (c.FISRIG_PCIE_CPL_SC, c.FISRIG_PCIE_CPL_UR,
                                                                 c.FISRIG_PCIE_CPL_CRS)
    # LitePCIe 2024.12 says Completer Abort is 3 (a reserved code); the specification, 4.
    assert cpl_dict["ca"] == 3 and c.FISRIG_PCIE_CPL_CA == 4
    assert CplStatus.CA == c.FISRIG_PCIE_CPL_CA and CplStatus.CRS == c.FISRIG_PCIE_CPL_CRS
