// The simulated NVMe controller at its link's TLP interface (NVMe, part 2: docs/nvme-rig.md),
// as sim/device is the SATA drive at the pins: what the rig's root port sends goes in, a TLP
// at a time with the time its last byte crossed; what the device sends comes out, each TLP
// no sooner than it is due and one after another at the link's rate (its bytes and 8 of
// framing a TLP, at the generation's and width's rate after encoding: pcie_link.h's).
//
// What it answers: configuration requests (PciFunction: IDs, BAR0, the capabilities, CRS
// until ready after a reset), memory reads and writes of BAR0 (the controller's registers
// and doorbells, the MSI-X table and pending bits), and, as a function must, a request it
// does not take (memory space off, an address outside BAR0, a configuration request to
// another function) with Unsupported Request (a posted write: dropped and counted). A TLP
// that is not one (fisrig/nvme/tlp.h refuses it) or that asks for what a register access
// cannot be (more than 2 dwords, byte enables not whole) is counted and dropped.
//
// Commands, as the SATA device at the pins does them (sim/device's command_layer.h): the
// controller's own times are "not before" times and the link adds its own. The controller
// runs over a link of no cost (NvmeConfig::free_link) and a mirror of the rig's memory that
// this fills through real read requests: an SQ tail doorbell's new SQEs are fetched (a
// 64-byte read each), then a command's PRP list where its buffer has one (a read's too: the
// controller needs it to know where the data goes), then the data a command takes from the
// host (a write's, a Compare's, a Dataset Management range list) in reads of
// Max_Read_Request_Size; the controller sees a command's doorbell when its bytes are in, at
// the time the last completion came, commands of a queue in its order. What the controller
// writes (a read's data, CQEs) and its MSI-X messages go out as memory writes of at most
// Max_Payload_Size no sooner than the controller's time for them. A completion for a read it
// made that is not good (an unexpected tag, a status other than SC, poisoned) is counted
// (bad_completions); the command is given to the controller with what did come.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
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
  // The controller holds the mirror by reference and reports to this: not copied, not moved.
  TlpDevice(const TlpDevice&) = delete;
  TlpDevice& operator=(const TlpDevice&) = delete;

  // A TLP from the rig, its last byte in at t (times never go back).
  void receive(const std::vector<uint8_t>& tlp, SimTime t);
  // The next TLP out whose first byte may go by `until`: true with its bytes and that time.
  bool transmit(SimTime until, std::vector<uint8_t>& tlp, SimTime& start);
  // When the next TLP out may start (drive::kNever: none is queued).
  SimTime next_out() const;

  // The rails off at t: the controller loses what a cut loses (Controller::power_off), what
  // was being fetched or sent goes, and nothing is answered until they are on again; on at
  // t: the function answers CRS until the SSD is up, then it is a function after a reset.
  void power(bool on, SimTime t);
  bool powered() const { return powered_; }
  // The earliest time something is due: a TLP out, or the controller's next event.
  SimTime next_event() const { return std::min(next_out(), ctrl_->next_event()); }

  PciFunction& function() { return fn_; }
  Controller& controller() { return *ctrl_; }
  uint64_t malformed() const { return malformed_; }
  uint64_t unsupported() const { return unsupported_; }
  uint64_t bad_completions() const { return bad_completions_; }
  uint64_t msix_masked() const { return msix_masked_; }  // messages a masked vector held back
  uint64_t while_off() const { return while_off_; }       // TLPs that came with the rails off

 private:
  // A command's SQE the device is fetching, with what it takes from the host, in its queue's order.
  struct Slot {
    uint32_t index = 0;     // in its SQ
    enum Stage : uint8_t { kSqe, kList, kData, kReady } stage = kSqe;
    uint32_t reads_out = 0;  // read requests of its stage not answered yet
    uint64_t bytes = 0;      // its buffer's
    bool from_host = false;  // the buffer's data is read from the host before the command goes
    uint64_t covered = 0;    // of its buffer, what PRP1 and the list pages read so far describe
    uint64_t list = 0;       // the PRP list page being read
    SimTime ready_at = 0;
  };
  struct Queue {
    bool started = false;
    uint64_t base = 0;
    uint32_t size = 0;
    uint32_t fetched = 0;   // the next SQE to fetch
    uint32_t released = 0;  // the tail the controller has
    std::deque<Slot> slots;
  };
  struct Read {
    uint16_t qid = 0;
    uint32_t index = 0;     // the SQE it is for
    uint64_t address = 0;
    uint32_t bytes = 0, got = 0;
  };
  void doorbell(uint16_t qid, uint32_t tail, SimTime t);
  void read(uint16_t qid, uint32_t index, uint64_t address, uint32_t bytes, SimTime t);
  void completion(const Tlp& t, SimTime in);
  Slot* slot(uint16_t qid, uint32_t index);
  void advance(uint16_t qid, Slot& s, SimTime t);  // a stage's reads are all in
  void release(uint16_t qid);
  void host_write(const HostWrite& w);
  void memory_write(uint64_t address, std::vector<uint8_t> data, SimTime due);
  void reset_commands();


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
  uint64_t malformed_ = 0, unsupported_ = 0, bad_completions_ = 0, msix_masked_ = 0, while_off_ = 0;
  bool powered_ = true;
  std::vector<Queue> queues_;
  std::map<uint8_t, Read> reads_;  // by tag
  std::deque<std::pair<Read, SimTime>> waiting_;  // reads for which no tag was free
  uint8_t next_tag_ = 0;
};

}  // namespace fisrig::nvme
