"""The firmware's part, played in a Migen simulation against the simulated controller: config
requests through the root port's config requester, the controller's registers through the
CPU's BAR window (LitePCIe's Wishbone slave), and the bring-up
(tests/hw/test_pcie_nvme_device.py; the Verilator runners do the same in C++ with the
firmware's pcie_enum.c: sim/rtl/nvme_rig.h)."""
from __future__ import annotations

from fisrig_hw import contract as c

BAR0 = 0x4000_0000
DEV = (1, 0)   # bus, device


def cfg(config, we, register, wdata=0):
    """One config request: (status, data)."""
    yield config.we.eq(we)
    yield config.bus.eq(DEV[0])
    yield config.device.eq(DEV[1])
    yield config.register.eq(register)
    yield config.wdata.eq(wdata)
    yield config.start.eq(1)
    yield
    yield config.start.eq(0)
    while not (yield config.done):
        yield
    return (yield config.status), (yield config.rdata)


def reg_write(mmio, offset, value):
    yield from mmio.wishbone.write((BAR0 + offset) >> 2, value)


def reg_read(mmio, offset):
    return (yield from mmio.wishbone.read((BAR0 + offset) >> 2))


def enumerate_function(config, mmio, msix_address, vectors: int, out: dict):
    """The function set up as pcie_enum.h does: IDs read, BAR0 sized and placed, memory space
    and bus mastering on, 256-byte payloads and reads, MSI-X entries 0 .. vectors - 1 at
    msix_address + 4 v (data v + 0xA0), unmasked, MSI-X on."""
    out["id"] = yield from cfg(config, 0, 0)
    yield from cfg(config, 1, 4, 0xFFFFFFFF)
    out["bar_size"] = (yield from cfg(config, 0, 4))[1]
    yield from cfg(config, 1, 4, BAR0)
    yield from cfg(config, 1, 5, 0)
    yield from cfg(config, 1, 1, c.FISRIG_PCI_COMMAND_MEMORY | c.FISRIG_PCI_COMMAND_MASTER | c.FISRIG_PCI_COMMAND_INTX_DISABLE)
    # Device Control (the PCI Express capability at 70h): 256-byte payloads and reads.
    yield from cfg(config, 1, (0x70 + c.FISRIG_PCIE_CAP_DEVCTL) // 4,
                   1 << c.FISRIG_PCIE_DEVCTL_MPS_SHIFT | 1 << c.FISRIG_PCIE_DEVCTL_MRRS_SHIFT)
    for v in range(vectors):
        entry = 0x2000 + 16 * v
        yield from reg_write(mmio, entry + c.FISRIG_PCI_MSIX_ENTRY_ADDR_LO, msix_address + 4 * v)
        yield from reg_write(mmio, entry + c.FISRIG_PCI_MSIX_ENTRY_ADDR_HI, 0)
        yield from reg_write(mmio, entry + c.FISRIG_PCI_MSIX_ENTRY_DATA, 0xA0 + v)
        yield from reg_write(mmio, entry + c.FISRIG_PCI_MSIX_ENTRY_VECTOR_CONTROL, 0)
    yield from cfg(config, 1, 0x50 // 4, c.FISRIG_PCI_MSIX_CONTROL_ENABLE << 16)


def enable_controller(mmio, asq, acq, entries: int, out: dict):
    """Admin queues of `entries` at asq and acq, CC.EN, CSTS read until RDY (into out["csts"])."""
    yield from reg_write(mmio, c.FISRIG_NVME_REG_AQA, (entries - 1) << 16 | (entries - 1))
    yield from reg_write(mmio, c.FISRIG_NVME_REG_ASQ, asq)
    yield from reg_write(mmio, c.FISRIG_NVME_REG_ASQ + 4, 0)
    yield from reg_write(mmio, c.FISRIG_NVME_REG_ACQ, acq)
    yield from reg_write(mmio, c.FISRIG_NVME_REG_ACQ + 4, 0)
    yield from reg_write(mmio, c.FISRIG_NVME_REG_CC, 1 | 6 << c.FISRIG_NVME_CC_IOSQES_SHIFT | 4 << c.FISRIG_NVME_CC_IOCQES_SHIFT)
    for _ in range(100):
        if (yield from reg_read(mmio, c.FISRIG_NVME_REG_CSTS)) & c.FISRIG_NVME_CSTS_RDY:
            break
        for _ in range(100):
            yield
    out["csts"] = yield from reg_read(mmio, c.FISRIG_NVME_REG_CSTS)
