// The simulated NVMe controller's PCI function (NVMe, part 2: docs/nvme-rig.md): its Type 0
// configuration space (fisrig/nvme.h's IDs, class 010802h, a 64-bit BAR0 of 16 KiB, the
// power management, MSI-X and PCI Express capabilities), what the host's configuration
// writes set in it (memory space and bus mastering, BAR0's address, Max_Payload_Size and
// Max_Read_Request_Size, MSI-X enabled), and the MSI-X table and pending bits in BAR0 beside
// the controller's registers and doorbells. A function answers Configuration Request Retry
// Status until it is ready after a reset, as a device may for up to a second.
//
// The link's TLP side of the controller answers configuration requests and BAR accesses
// from here; the rig's enumeration (fisrig/pcie_enum.h) runs against it in
// tests/nvme/test_pci_enumeration.cc. Numbers are fisrig/pcie.h's.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fisrig/ssd/config.h"

extern "C" {
#include "fisrig/pcie.h"
}

namespace fisrig::nvme {

class PciFunction {
 public:
  static constexpr uint32_t kBar0Bytes = 16 * 1024;
  static constexpr uint32_t kMsixTable = 0x2000;  // in BAR0: past the doorbells of 65 queues
  static constexpr uint32_t kMsixPba = 0x3000;
  static constexpr uint16_t kCapPm = 0x40, kCapMsix = 0x50, kCapPcie = 0x70;
  static constexpr uint16_t kMsixMaxEntries = (kMsixPba - kMsixTable) / FISRIG_PCI_MSIX_ENTRY_BYTES;  // 256

  // msix_entries: the table's size (one a queue, the admin queue's among them; 1 to
  // kMsixMaxEntries, which BAR0's layout holds);
  // mps_supported: Max_Payload_Size supported, 128 << it bytes; gen, lanes: the link's,
  // as Link Capabilities and Link Status say it.
  PciFunction(uint16_t msix_entries = 65, unsigned mps_supported = 2, unsigned gen = 3, unsigned lanes = 4);

  // A configuration request's answer: FISRIG_PCIE_CPL_CRS before the function is ready,
  // else FISRIG_PCIE_CPL_SC (a read's dword in `value`). first_be: the bytes written.
  unsigned config_read(uint16_t offset, uint32_t& value, drive::SimTime t) const;
  unsigned config_write(uint16_t offset, uint32_t value, uint8_t first_be, drive::SimTime t);
  // A conventional reset: what the host set is undone; CRS until ready_at.
  void reset(drive::SimTime ready_at);

  bool memory_enabled() const { return command() & FISRIG_PCI_COMMAND_MEMORY; }
  bool bus_master() const { return command() & FISRIG_PCI_COMMAND_MASTER; }
  uint64_t bar0() const;
  // Whether a memory request of `bytes` at `address` falls in BAR0 (memory space on).
  bool bar0_hit(uint64_t address, uint32_t bytes) const;
  uint32_t max_payload() const { return 128u << ((devctl() >> FISRIG_PCIE_DEVCTL_MPS_SHIFT) & 7); }
  uint32_t max_read_request() const { return 128u << ((devctl() >> FISRIG_PCIE_DEVCTL_MRRS_SHIFT) & 7); }

  // The MSI-X table and PBA (offsets in BAR0): false for an offset not theirs.
  bool msix_read(uint32_t offset, uint32_t& value) const;
  bool msix_write(uint32_t offset, uint32_t value);
  bool msix_enabled() const;
  struct MsixMessage {
    uint64_t address = 0;
    uint32_t data = 0;
    bool masked = true;  // the entry's or the function's mask
  };
  MsixMessage msix(uint16_t vector) const;
  uint16_t msix_entries() const { return uint16_t(table_.size() / 4); }

  // A configuration dword set as it is, read-only bits too: a broken device, for tests.
  void poke(uint16_t offset, uint32_t value) { space_[offset / 4] = value; }

 private:
  uint32_t command() const { return space_[FISRIG_PCI_COMMAND / 4] & 0xFFFF; }
  uint32_t devctl() const { return space_[(kCapPcie + FISRIG_PCIE_CAP_DEVCTL) / 4] & 0xFFFF; }
  void set(uint16_t offset, uint32_t value, uint32_t writable) {
    space_[offset / 4] = value;
    writable_[offset / 4] = writable;
  }

  std::array<uint32_t, FISRIG_PCI_CONFIG_BYTES / 4> space_{}, writable_{}, reset_{};
  std::vector<uint32_t> table_;  // entries x {address low, address high, data, vector control}
  drive::SimTime ready_at_ = 0;
};

}  // namespace fisrig::nvme
