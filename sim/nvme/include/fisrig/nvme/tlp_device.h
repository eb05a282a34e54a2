// The simulated NVMe controller at its link's TLP interface (NVMe, part 2: docs/nvme-rig.md),
// as sim/device is the SATA drive at the pins: what the rig's root port sends goes in, a TLP
// at a time with the time its last byte crossed; what the device sends comes out, each TLP
// no sooner than it is due and one after another at the link's rate (its bytes and 8 of
// framing a TLP, at the generation's and width's rate after encoding: pcie_link.h's).
//
// What it answers so far: configuration requests (PciFunction: IDs, BAR0, the capabilities,
// CRS until ready after a reset), memory reads and writes of BAR0 (the controller's
// registers and doorbells, the MSI-X table and pending bits), and, as a function must, a
// request it does not take (memory space off, an address outside BAR0, a configuration
// request to another function) with Unsupported Request (a posted write: dropped and
// counted). A TLP that is not one (fisrig/nvme/tlp.h refuses it) or that asks for what a
// register access cannot be (more than 2 dwords, byte enables not whole) is counted and
// dropped. The command path (a doorbell's SQE fetched by a read request, the data moved,
// the CQE and MSI-X written) is the next piece: docs/nvme-rig.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "fisrig/nvme/controller.h"
#include "fisrig/nvme/host_memory.h"
#include "fisrig/nvme/pci_function.h"
#include "fisrig/nvme/tlp.h"

namespace fisrig::nvme {

struct TlpDeviceConfig {
  uint32_t gen = 2, lanes = 4;  // the link's: the 7-series hard block's Gen2 x4
  uint16_t id = 0x0100;         // the function's ID below the root port: bus 1, device 0, function 0
  SimTime config_ns = 250;      // a configuration request in to its completion due
  SimTime register_ns = 250;    // a BAR read in to its completion due
};

class TlpDevice {
 public:
  explicit TlpDevice(drive::DriveConfig drive, TlpDeviceConfig cfg = {}, NvmeConfig nvme = {});

  // A TLP from the rig, its last byte in at t (times never go back).
  void receive(const std::vector<uint8_t>& tlp, SimTime t);
  // The next TLP out whose first byte may go by `until`: true with its bytes and that time.
  bool transmit(SimTime until, std::vector<uint8_t>& tlp, SimTime& start);
  // When the next TLP out may start (drive::kNever: none is queued).
  SimTime next_out() const;

  PciFunction& function() { return fn_; }
  Controller& controller() { return *ctrl_; }
  uint64_t malformed() const { return malformed_; }
  uint64_t unsupported() const { return unsupported_; }

 private:
  void config(const Tlp& t, SimTime in);
  void memory(const Tlp& t, SimTime in);
  void complete(const Tlp& request, uint8_t status, const std::vector<uint8_t>& data, SimTime due);
  uint32_t bar_read(uint32_t offset);
  void bar_write(uint32_t offset, uint32_t value, SimTime t);

  TlpDeviceConfig cfg_;
  SparseMemory mirror_;  // the rig's memory as the controller sees it (the command path's)
  std::unique_ptr<Controller> ctrl_;
  PciFunction fn_;
  uint32_t per_byte_;    // a byte's time on the link, PcieLink's 1/4096 ns
  std::multimap<SimTime, std::vector<uint8_t>> out_;  // due time -> the TLP, in order of due time and sending
  SimTime link_free_ = 0;   // where the link's last TLP out ends, in 1/4096 ns
  uint64_t malformed_ = 0, unsupported_ = 0;
};

}  // namespace fisrig::nvme
