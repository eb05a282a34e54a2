// The device's SATA link layer, one dword per cycle in each direction.
//
// Transmit: X_RDY until the host's R_RDY (the host backs off when both send X_RDY: the
// device wins), SOF, the FIS and its CRC scrambled, EOF, WTRM until R_OK or R_ERR; HOLDA
// while the host holds with HOLD. Receive: R_RDY to the host's X_RDY, R_IP while the FIS
// comes in, HOLD during a hold storm, HOLDA while the host pauses with HOLD, R_OK or R_ERR
// (bad CRC, a FIS over 2049 dwords, the r_err_rate fault) until the host's SYNC.
// Idle: SYNC, at least two before the next X_RDY (a receiver leaves R_OK only on SYNC,
// and an ALIGN may take the place of the first). Every primitive that repeats goes out twice, then CONT and scrambled junk,
// and is sent afresh after each ALIGN pair; two ALIGNs go out every 256 dwords.
// On receive ALIGNs are dropped and CONT is undone (fisrig_link's FrameReceiver).
#pragma once

#include <cstdint>

#include "fisrig/device/counters.h"
#include "fisrig/device/fis.h"
#include "fisrig/device/link_faults.h"
#include "fisrig/link/framing.h"
#include "fisrig/link/scrambler.h"

namespace fisrig::device {

// A FIS the device is sending (built in place by the command layer).
struct TxFrame {
  uint32_t dw[fis::kMaxFisDwords];
  uint32_t n = 0;
  bool corrupt_crc = false;  // the data_fis_crc_error_rate fault: the host must see a bad CRC
};

class DeviceLink {
 public:
  enum class State : uint8_t {
    kIdle,
    kSendXrdy,
    kSendSof,
    kSendData,  // the FIS, then its CRC
    kSendEof,
    kWaitResult,  // WTRM until R_OK / R_ERR
    kRecvRdy,     // R_RDY until SOF
    kRecv,
    kRecvResult,  // R_OK / R_ERR until SYNC
  };
  // What happened this cycle, for the command layer.
  struct Events {
    bool received = false;  // a FIS ended: rx_fis()/rx_len(); rx_ok false if answered R_ERR
    bool rx_ok = false;
    bool sent = false;  // the loaded FIS is done: sent_ok tells R_OK (else R_ERR or aborted)
    bool sent_ok = false;
  };

  DeviceLink(DeviceCounters& counters, LinkFaults& faults);

  // One cycle: the host's dword (have = false while its transmitter is idle) in, the
  // device's dword out.
  link::LinkWord clock(bool have, const link::LinkWord& in, Events& ev);

  // The frame to fill, then load() it; only while can_load().
  TxFrame& frame() { return tx_; }
  bool can_load() const { return !loaded_ && enabled_; }
  void load() { loaded_ = true; }
  // Transmission starts only once the host's link is up (its first SYNC after OOB).
  void enable(bool on) { enabled_ = on; }
  // 150 MHz cycles a dword takes at the negotiated speed (Gen3 1, Gen2 2, Gen1 4): the
  // fault knobs given in time (hold_storm_us) last as long at every speed.
  void set_cycles_per_dword(uint32_t n) { cycles_per_dword_ = n; }
  // Back to idle with nothing in flight (COMRESET, power, OOB restart).
  void reset();

  State state() const { return state_; }
  const uint32_t* rx_fis() const { return rx_.frame().fis.data(); }
  size_t rx_len() const { return rx_.frame().fis.size(); }

 private:
  link::LinkWord emit_primitive(uint32_t p, bool& sent);
  link::LinkWord emit_data(uint32_t d, bool& sent);
  void end_frame(Events& ev, bool ok);
  void to_idle() { state_ = State::kIdle, idle_syncs_ = 0; }
  void start_hold_storm();
  uint32_t receive_primitive();

  DeviceCounters& counters_;
  LinkFaults& faults_;
  link::FrameReceiver rx_;
  link::AlignInserter align_;
  link::ContEncoder cont_;
  link::Scrambler scrambler_;
  TxFrame tx_;
  State state_ = State::kIdle;
  bool loaded_ = false;
  bool enabled_ = false;
  uint32_t tx_index_ = 0;  // next dword of tx_ (tx_.n: the CRC)
  uint32_t tx_crc_ = 0;
  bool holding_ = false;   // the host holds us (HOLD) while we transmit
  uint32_t idle_syncs_ = 0;  // SYNCs sent since the link went idle
  bool rx_result_ok_ = false;
  // Hold storm while receiving a Data FIS: bursts left, cycles each, where the next starts.
  uint32_t storm_bursts_ = 0;
  uint64_t storm_burst_cycles_ = 0;  // dwords a HOLD burst lasts
  uint32_t cycles_per_dword_ = 1;
  uint64_t storm_left_ = 0;  // cycles left in the current burst
  size_t storm_next_at_ = 0;
  bool storm_checked_ = false;
};

}  // namespace fisrig::device
