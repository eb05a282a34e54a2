// The PCI function's configuration space and MSI-X table: pci_function.h.
#include "fisrig/nvme/pci_function.h"

#include <algorithm>

extern "C" {
#include "fisrig/nvme.h"
}

namespace fisrig::nvme {

PciFunction::PciFunction(uint16_t msix_entries, unsigned mps_supported, unsigned gen, unsigned lanes) {
  msix_entries = std::clamp<uint16_t>(msix_entries, 1, kMsixMaxEntries);
  set(FISRIG_PCI_VENDOR_ID, FISRIG_NVME_SIM_VENDOR_ID | FISRIG_NVME_SIM_DEVICE_ID << 16, 0);
  set(FISRIG_PCI_COMMAND, uint32_t(FISRIG_PCI_STATUS_CAP_LIST) << 16,
      FISRIG_PCI_COMMAND_MEMORY | FISRIG_PCI_COMMAND_MASTER | FISRIG_PCI_COMMAND_INTX_DISABLE);
  set(FISRIG_PCI_CLASS_REVISION, FISRIG_PCI_CLASS_NVME << 8 | 0x01, 0);
  set(0x0C, 0, 0);  // header type 0, a single function
  set(FISRIG_PCI_BAR0, FISRIG_PCI_BAR_MEM_TYPE_64, ~(kBar0Bytes - 1) & FISRIG_PCI_BAR_ADDR_MASK);
  set(FISRIG_PCI_BAR1, 0, 0xFFFFFFFFu);
  set(FISRIG_PCI_SUBSYSTEM_VENDOR_ID, FISRIG_NVME_SIM_VENDOR_ID | FISRIG_NVME_SIM_DEVICE_ID << 16, 0);
  set(FISRIG_PCI_CAP_PTR, kCapPm, 0);
  set(FISRIG_PCI_INTERRUPT_LINE, 0x0100, 0xFF);  // INTA#; the line is the host's to write
  // Power management: version 3; PMCSR's power state the host's.
  set(kCapPm, FISRIG_PCI_CAP_ID_PM | kCapMsix << 8 | 0x0003u << 16, 0);
  set(kCapPm + 4, 0, 0x3);
  // MSI-X: the table and the pending bits in BAR0; enable and function mask the host's.
  set(kCapMsix, FISRIG_PCI_CAP_ID_MSIX | kCapPcie << 8 | uint32_t(msix_entries - 1) << 16,
      uint32_t(FISRIG_PCI_MSIX_CONTROL_ENABLE | FISRIG_PCI_MSIX_CONTROL_MASK_ALL) << 16);
  set(kCapMsix + FISRIG_PCI_MSIX_TABLE, kMsixTable, 0);
  set(kCapMsix + FISRIG_PCI_MSIX_PBA, kMsixPba, 0);
  // PCI Express: version 2, an endpoint; Max_Payload_Size supported; Device Control's
  // payload and read request sizes the host's (after reset 128 and 512 bytes, as the
  // specification has them), with the other enables it may set; the link's speed and width.
  set(kCapPcie, FISRIG_PCI_CAP_ID_PCIE | 0u << 8 | 0x0002u << 16, 0);
  set(kCapPcie + FISRIG_PCIE_CAP_DEVCAP, mps_supported & FISRIG_PCIE_DEVCAP_MPS_MASK, 0);
  set(kCapPcie + FISRIG_PCIE_CAP_DEVCTL, 2u << FISRIG_PCIE_DEVCTL_MRRS_SHIFT, 0x7FFF);
  set(kCapPcie + 0x0C, gen | lanes << 4, 0);                   // Link Capabilities
  set(kCapPcie + 0x10, (gen | lanes << 4) << 16, 0);           // Link Control, Link Status
  reset_ = space_;
  table_.assign(4u * msix_entries, 0);
  reset(0);
}

void PciFunction::reset(drive::SimTime ready_at) {
  space_ = reset_;
  for (size_t k = 0; k < table_.size(); k += 4) {
    table_[k] = table_[k + 1] = table_[k + 2] = 0;
    table_[k + 3] = FISRIG_PCI_MSIX_VECTOR_MASKED;
  }
  ready_at_ = ready_at;
}

unsigned PciFunction::config_read(uint16_t offset, uint32_t& value, drive::SimTime t) const {
  if (t < ready_at_)
    return FISRIG_PCIE_CPL_CRS;
  value = offset < FISRIG_PCI_CONFIG_BYTES ? space_[offset / 4] : 0;
  return FISRIG_PCIE_CPL_SC;
}

unsigned PciFunction::config_write(uint16_t offset, uint32_t value, uint8_t first_be, drive::SimTime t) {
  if (t < ready_at_)
    return FISRIG_PCIE_CPL_CRS;
  if (offset >= FISRIG_PCI_CONFIG_BYTES)
    return FISRIG_PCIE_CPL_SC;  // past the space: taken, nothing there
  uint32_t lanes = 0;
  for (int b = 0; b < 4; ++b)
    if (first_be >> b & 1)
      lanes |= 0xFFu << (8 * b);
  uint32_t& d = space_[offset / 4];
  const uint32_t w = writable_[offset / 4] & lanes;
  d = (d & ~w) | (value & w);
  return FISRIG_PCIE_CPL_SC;
}

uint64_t PciFunction::bar0() const {
  return (uint64_t(space_[FISRIG_PCI_BAR1 / 4]) << 32) | (space_[FISRIG_PCI_BAR0 / 4] & FISRIG_PCI_BAR_ADDR_MASK);
}

bool PciFunction::bar0_hit(uint64_t address, uint32_t bytes) const {
  return memory_enabled() && address >= bar0() && address + bytes <= bar0() + kBar0Bytes;
}

bool PciFunction::msix_read(uint32_t offset, uint32_t& value) const {
  if (offset >= kMsixTable && offset < kMsixTable + 4 * table_.size()) {
    value = table_[(offset - kMsixTable) / 4];
    return true;
  }
  if (offset >= kMsixPba && offset < kMsixPba + (msix_entries() + 63u) / 64 * 8) {
    value = 0;  // a message is sent when due or held by the mask: none is ever pending here
    return true;
  }
  return false;
}

bool PciFunction::msix_write(uint32_t offset, uint32_t value) {
  if (offset >= kMsixTable && offset < kMsixTable + 4 * table_.size()) {
    const size_t k = (offset - kMsixTable) / 4;
    table_[k] = k % 4 == 3 ? value & FISRIG_PCI_MSIX_VECTOR_MASKED : k % 4 == 0 ? value & ~3u : value;
    return true;
  }
  return offset >= kMsixPba && offset < kMsixPba + (msix_entries() + 63u) / 64 * 8;  // read-only
}

bool PciFunction::msix_enabled() const {
  return (space_[kCapMsix / 4] >> 16) & FISRIG_PCI_MSIX_CONTROL_ENABLE;
}

PciFunction::MsixMessage PciFunction::msix(uint16_t vector) const {
  MsixMessage m;
  if (vector >= msix_entries())
    return m;
  const uint32_t* e = &table_[4u * vector];
  m.address = uint64_t(e[1]) << 32 | e[0];
  m.data = e[2];
  m.masked = (e[3] & FISRIG_PCI_MSIX_VECTOR_MASKED) || !msix_enabled() ||
             ((space_[kCapMsix / 4] >> 16) & FISRIG_PCI_MSIX_CONTROL_MASK_ALL);
  return m;
}

}  // namespace fisrig::nvme
