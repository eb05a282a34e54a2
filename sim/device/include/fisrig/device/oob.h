// The device side of SATA out-of-band signalling, as LiteSATA's PHY control
// (litesata/phy/ctrl.py) expects its peer to behave:
//
//   host COMRESET (384 cycles of bursts)  -> device COMINIT after a short delay (384 cycles)
//   host COMWAKE (192 cycles)             -> device COMWAKE (192 cycles)
//   host D10.2                            <- device ALIGN, ALIGN, ... until the host's ALIGN
//                                            (speed negotiation: below)
//   host ALIGN ...                        <- device SYNC (the link layer takes over)
//   host SYNC (its PHY control is READY)  -> link up
//
// At power-on, and once the drive has booted, the device sends COMINIT by itself (the
// host's AWAIT-COMINIT state takes it). A COMRESET at any time restarts all of it; one
// that comes while the drive is still booting is answered when it is ready.
//
// Speed negotiation: the device sends its ALIGNs at its fastest speed first. A host
// receiver at another speed cannot lock on them (it sees only undecodable symbols), and
// does not answer with ALIGN; after 54.6 us without the host's ALIGN the device tries the
// next speed down, to Gen1. The host's speed is what its pins' dword_gap pattern says.
// (LiteSATA's host does not step down itself: a host faster than the device never links.)
#pragma once

#include <cstdint>

#include "fisrig/device/pins.h"

namespace fisrig::device {

// 150 MHz cycles a dword takes at a SATA speed (pins.h: the cycles between are dword_gap).
constexpr uint32_t cycles_per_dword(int gen) { return gen >= 3 ? 1 : gen == 2 ? 2 : 4; }

class DeviceOob {
 public:
  enum class State : uint8_t {
    kOff,           // rails off
    kBooting,       // powered, not ready: COMINIT once ready
    kComresetIn,    // the host's COMRESET bursts are coming in
    kCominitDelay,  // the device is about to answer
    kSendCominit,
    kAwaitComwake,
    kComwakeIn,
    kComwakeDelay,
    kSendComwake,
    kSendAlign,     // ALIGNs until the host's ALIGN arrives
    kLinked,        // the link layer drives the wire
  };
  enum class Event : uint8_t { kNone, kComreset };

  // Cycles from the end of the host's burst to the device's answer (about 1 us and
  // 100 ns: a real device needs a few bursts to qualify the signal).
  static constexpr uint32_t kCominitDelay = 150;
  static constexpr uint32_t kComwakeDelay = 16;

  explicit DeviceOob(int max_gen = 3) : max_gen_(max_gen) {}

  // One cycle of the pins. ready_cycle: the first cycle the drive can answer COMINIT.
  // Returns kComreset when a COMRESET reset the device (not while off or booting).
  Event clock(const fisrig_pins_in& in, uint64_t cycle, uint64_t ready_cycle);
  // What the device drives while the link layer does not (rx_data/charisk included).
  void drive_pins(fisrig_pins_out& out) const;

  void power_off() { state_ = State::kOff, burst_end_ = 0; }
  void power_on() { state_ = State::kBooting; }
  State state() const { return state_; }
  bool linked() const { return state_ == State::kLinked; }
  uint64_t cominits_sent() const { return cominits_; }
  int max_gen() const { return max_gen_; }
  // The speed the device sends at now (the negotiated one once linked).
  int gen() const { return gen_; }

 private:
  void enter(State s, uint64_t until) { state_ = s, until_ = until; }

  State state_ = State::kBooting;
  uint64_t until_ = 0;      // end of the current timed state
  uint64_t burst_end_ = 0;  // end of the host's COMRESET bursts (none are answered before)
  uint64_t cominits_ = 0;
  int max_gen_;
  int gen_ = 0;
  int host_gen_ = 3;         // from the spacing of the host's dwords
  uint64_t last_dword_ = 0;  // the cycle of the host's last dword
};

}  // namespace fisrig::device
