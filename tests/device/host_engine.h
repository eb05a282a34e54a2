// The host's transport and command sequencing for the device side's tests, as the rig's
// command engine does it: Register H2D out (one at a time, the next only after a queued
// command's releasing D2H), then the device leads: PIO Setup, DMA Activate, DMA Setup,
// Data FISes, Register D2H and Set Device Bits are answered as they come.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "host_link.h"

namespace fisrig::test {

struct HostCommand {
  uint8_t command = 0;
  uint16_t features = 0;
  uint64_t lba = 0;
  uint16_t count = 0;
  uint8_t device = 0x40;
  uint16_t aux = 0;
  bool queued = false;
  uint8_t tag = 0;
  std::vector<uint8_t> out;  // what the host sends (write data, DSM ranges, a password block)
  std::vector<uint8_t> in;   // what the device sent

  // Results.
  bool released = false;     // queued: the D2H that frees the bus came
  bool done = false;
  bool ncq_failed = false;   // outstanding when an error SDB came (the log says which failed)
  bool lost = false;         // the link went down under it
  uint8_t status = 0;
  uint8_t error = 0;
  uint64_t lba_out = 0;      // the D2H's LBA
  uint32_t out_sent = 0;
  uint32_t pio_setups = 0;
  uint32_t dma_activates = 0;
  uint32_t data_fises_in = 0;
  uint32_t bad_crc_fises_in = 0;
  uint32_t data_r_errs = 0;  // our Data FISes the device answered R_ERR
  uint32_t h2d_resends = 0;
  uint64_t h2d_cycle = 0;
  uint64_t done_cycle = 0;
};

// A Register H2D as the rig's engine builds it (hw/fisrig_hw/engine/h2d.py).
std::vector<uint32_t> h2d_fis(const HostCommand& c);

class HostEngine {
 public:
  explicit HostEngine(HostLink& link);

  // Queues the command; its H2D goes when the protocol allows. c must outlive it.
  void issue(HostCommand* c) { waiting_.push_back(c); }
  void clock();
  size_t outstanding() const;
  // Gives up every command not done (as a host that timed them out does).
  void abandon();

  std::vector<std::vector<uint32_t>> signatures;  // D2H FISes outside any command
  std::vector<uint8_t> setup_tags;                // DMA Setup tags in arrival order
  std::vector<uint32_t> sdb_sactive;              // each SDB's SActive field
  struct NcqError {
    uint8_t status, error;
  };
  std::vector<NcqError> ncq_errors;
  std::vector<uint8_t> fis_types;                 // every FIS received, in order
  uint32_t protocol_errors = 0;

 private:
  void on_frame(const HostRxFrame& f);
  void on_sent(const std::vector<uint32_t>& fis, bool ok);
  void on_reset();
  void finish(HostCommand* c, uint8_t status, uint8_t error);
  void send_data(HostCommand* c, uint32_t bytes);

  HostLink& link_;
  std::deque<HostCommand*> waiting_;
  HostCommand* nonqueued_ = nullptr;
  std::array<HostCommand*, 32> tags_{};
  std::deque<HostCommand*> awaiting_release_;
  HostCommand* in_target_ = nullptr;   // DMA Setup (to host) chose it
  HostCommand* out_target_ = nullptr;  // DMA Setup (to device) chose it
  uint32_t in_expect_ = 0;
  bool pio_in_ = false;
  uint8_t pio_e_status_ = 0;
};

}  // namespace fisrig::test
