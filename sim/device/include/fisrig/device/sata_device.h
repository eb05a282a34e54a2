// The simulated SATA drive as the rig's gateware sees it at the transceiver: out-of-band
// signalling, the link layer, transport and ATA protocols over the transaction-level
// Drive, clocked once per 150 MHz SATA cycle (Gen3, one dword per cycle).
//
//   fisrig::device::SataDevice dev(fisrig::drive::load_profile("tiny-1gb"));
//   for (;;) dev.clock(pins_in, pins_out);
//
// The power pin drives Drive::power_off/power_on; a COMRESET calls Drive::comreset. See
// oob.h, link_layer.h and command_layer.h for each layer, link_faults.h for the faults
// applied on the wire. An idle linked cycle costs about 10-20 ns here (nothing is
// allocated per cycle; OOB is skipped once linked; FIS work waits for its wake cycle).
#pragma once

#include <cstdint>
#include <string>

#include "fisrig/device/command_layer.h"
#include "fisrig/device/counters.h"
#include "fisrig/device/link_faults.h"
#include "fisrig/device/link_layer.h"
#include "fisrig/device/oob.h"
#include "fisrig/device/pattern_codec.h"
#include "fisrig/device/pins.h"
#include "fisrig/sata/drive.h"

namespace fisrig::device {

class SataDevice {
 public:
  // The link-level fault knobs of config.faults (r_err_rate, hold_storm_*) act on the
  // wire here and are taken out of the Drive's copy so that they do not act twice.
  // max_gen: the fastest SATA speed the device negotiates (1..3), at most the profile's
  // interface.max_gen; the Drive gets the lower of the two, for IDENTIFY word 76.
  explicit SataDevice(drive::DriveConfig config, int max_gen = 3);

  // One SATA clock cycle: the host's pins at this edge in, the device's for the next out.
  void clock(const fisrig_pins_in& in, fisrig_pins_out& out) {
    clock_wire(in, out);
    out.current_ma = current_ma_;
  }

  drive::Drive& drive() { return drive_; }
  const drive::Drive& drive() const { return drive_; }
  LinkFaults& link_faults() { return faults_; }
  const DeviceCounters& counters() const { return counters_; }
  const PatternCodec& codec() const { return codec_; }
  const CommandLayer& commands() const { return commands_; }
  DeviceOob::State oob_state() const { return oob_.state(); }
  DeviceLink::State link_state() const { return link_.state(); }
  bool link_up() const { return up_; }
  int gen() const { return oob_.gen(); }
  uint64_t cycle() const { return cycle_; }
  drive::SimTime now_ns() const { return cycle_ns(cycle_); }

  // Device and Drive counters, one "name value" per line.
  std::string stats_text() const;

 private:
  void clock_wire(const fisrig_pins_in& in, fisrig_pins_out& out);
  void power_edge(bool on, uint64_t cycle);
  void reset_link();

  LinkFaults faults_;  // before drive_: built from the config the Drive gets without them
  drive::Drive drive_;
  DeviceCounters counters_;
  PatternCodec codec_;
  DeviceOob oob_;
  DeviceLink link_;
  CommandLayer commands_;
  uint64_t cycle_ = 0;
  uint64_t ready_cycle_ = 0;  // power-on: the first cycle the drive answers OOB
  bool power_ = true;         // the Drive starts powered and ready
  uint8_t pins_ = FISRIG_PINS_ON;
  bool powered_by(uint8_t pins) const;
  bool up_ = false;
  fisrig_pins_out held_{};    // the last dword sent, on the wire through the dword gaps
  uint16_t current_ma_ = 0;   // the current pins' last conversion (pins.h)
};

}  // namespace fisrig::device
