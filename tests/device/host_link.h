// The host end of the wire for the device side's tests: a model of LiteSATA 2024.12's
// PHY control (phy/ctrl.py: COMRESET, COMWAKE, D10.2 until ALIGN, ALIGN until three
// K28.3 primitives, READY, the 10 ms retry and the 4096-cycle rx_idle fallback) and link
// layer (core/link.py: its TX and RX state machines, ALIGN insertion and removal, CONT
// removal), with knobs LiteSATA lacks so that the tests can exercise the device: CONT on
// transmit, HOLD while receiving, pauses while transmitting.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "fisrig/device/pins.h"
#include "fisrig/link/primitives.h"
#include "fisrig/link/scrambler.h"

namespace fisrig::test {

struct HostLinkOptions {
  bool cont = false;                   // repeated primitives as two copies, CONT, junk
  uint64_t stability_cycles = 2000;    // PHY READY to link connected (LiteSATA: 750,000)
  uint64_t retry_cycles = 1'500'000;   // 10 ms without an OOB answer: start again
  uint64_t align_timeout_cycles = 130'950;  // 873 us in AWAIT-ALIGN / SEND-ALIGN
  // Receiving a device Data FIS: HOLD once per FIS after rx_hold_after dwords, for
  // rx_hold_cycles cycles (0: never).
  uint32_t rx_hold_after = 0;
  uint32_t rx_hold_cycles = 0;
  // Sending a Data FIS: pause (send HOLD) once per FIS after tx_pause_after dwords.
  uint32_t tx_pause_after = 0;
  uint32_t tx_pause_cycles = 0;
};

struct HostRxFrame {
  std::vector<uint32_t> fis;  // without the CRC
  bool crc_ok = false;
  uint64_t cycle = 0;
};

class HostLink {
 public:
  enum class Phy { kReset, kComreset, kAwaitCominit, kAwaitNoCominit, kComwake, kAwaitComwake, kAwaitNoComwake,
                   kAwaitAlign, kSendAlign, kReady };
  enum class Tx { kIdle, kRdy, kSof, kCopy, kHolda, kEof, kWtrm };
  enum class Rx { kIdle, kRdy, kWaitFirst, kCopy, kROk, kRErr };

  explicit HostLink(HostLinkOptions o = {}) : opt_(o) {}

  // One cycle: the device's pins as the host samples them now in, the host's pins out.
  void clock(const fisrig_pins_out& dev, fisrig_pins_in& host);

  void send(std::vector<uint32_t> fis) { tx_queue_.push_back(std::move(fis)); }
  bool tx_idle() const { return tx_queue_.empty() && tx_ == Tx::kIdle; }
  void comreset() { phy_ = Phy::kReset; }
  bool connected() const { return phy_ == Phy::kReady && cycle_ - ready_at_ >= opt_.stability_cycles; }
  Phy phy() const { return phy_; }
  Tx tx() const { return tx_; }
  Rx rx() const { return rx_; }
  HostLinkOptions& options() { return opt_; }
  uint64_t cycle() const { return cycle_; }

  // Called when a frame from the device ended, and when one of ours got its answer.
  std::function<void(const HostRxFrame&)> on_frame;
  std::function<void(const std::vector<uint32_t>& fis, bool r_ok)> on_sent;
  std::function<void()> on_reset;  // the PHY went back to RESET (link lost)

  // Every dword the device sent (not while its transmitter idles), once capture is on.
  bool capture = false;
  std::vector<link::LinkWord> captured;
  std::vector<uint64_t> captured_cycle;

  struct Counters {
    uint64_t comresets = 0;        // COMRESETs sent
    uint64_t retries = 0;          // 10 ms / 873 us timeouts
    uint64_t rx_idle_resets = 0;   // no ALIGN for 4096 cycles while READY
    uint64_t connects = 0;
    uint64_t frames_received = 0;
    uint64_t crc_errors = 0;       // device frames with a bad CRC (answered R_ERR)
    uint64_t r_err_received = 0;   // our frames answered R_ERR
    uint64_t holds_from_device = 0;  // cycles the device sent HOLD while we transmitted
    uint64_t holda_from_device = 0;  // cycles the device answered HOLDA to our HOLD
    uint64_t conts_received = 0;
    uint64_t max_gap_between_aligns = 0;  // once connected
  } counters;

 private:
  void phy_clock(const fisrig_pins_out& dev, fisrig_pins_in& host);
  link::LinkWord link_clock(bool have, const link::LinkWord& w);
  link::LinkWord encode(const link::LinkWord& w, bool& consumed);
  void reset_link();

  HostLinkOptions opt_;
  uint64_t cycle_ = 0;
  Phy phy_ = Phy::kReset;
  uint64_t phy_until_ = 0;  // end of a burst we are sending
  uint64_t timer_start_ = 0;
  uint32_t align_count_ = 0;
  uint64_t ready_at_ = 0;
  bool was_connected_ = false;
  uint64_t last_align_ = 0;
  uint64_t align_tx_ = 0;  // ALIGN inserter counter

  // CONT removal on receive.
  bool in_cont_ = false;
  uint32_t last_prim_ = 0;
  // CONT on transmit.
  uint32_t cont_last_ = 0;
  int cont_reps_ = 0;
  bool cont_junk_ = false;
  uint32_t junk_ = 0x12345678;

  Tx tx_ = Tx::kIdle;
  Rx rx_ = Rx::kIdle;
  std::deque<std::vector<uint32_t>> tx_queue_;
  std::vector<uint32_t> tx_words_;  // the frame being sent: FIS and CRC
  size_t tx_index_ = 0;
  link::Scrambler tx_scrambler_;
  uint64_t tx_pause_left_ = 0;
  bool tx_paused_once_ = false;
  std::vector<uint32_t> rx_words_;
  link::Scrambler rx_scrambler_;
  uint64_t rx_hold_left_ = 0;
  bool rx_held_once_ = false;
};

}  // namespace fisrig::test
