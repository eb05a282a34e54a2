// The SATA wire as one shared, half-duplex resource, costed in dwords.
//
// Every FIS pays its payload plus framing (SOF, CRC, EOF), the X_RDY/R_RDY and
// WTRM/R_OK handshakes, and the two ALIGN primitives sent every 256 dwords. This is
// what caps the drive at the interface's rate so simulated figures compare with reviews;
// the model target's engine refines it FIS by FIS.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fisrig/drive/config.h"

namespace fisrig::drive {

namespace fis_dwords {
constexpr uint32_t kRegH2D = 5;
constexpr uint32_t kRegD2H = 5;
constexpr uint32_t kDmaActivate = 1;
constexpr uint32_t kDmaSetup = 7;
constexpr uint32_t kSetDeviceBits = 2;
constexpr uint32_t kPioSetup = 5;
constexpr uint32_t kDataHeader = 1;
constexpr uint32_t kMaxDataPayload = 2048;  // 8 KiB per Data FIS
// SOF + CRC + EOF + X_RDY/R_RDY + WTRM + R_IP/R_OK, as seen on the wire.
constexpr uint32_t kFraming = 3 + 2 + 1 + 2;
}  // namespace fis_dwords

class LinkTiming {
 public:
  explicit LinkTiming(const InterfaceConfig& cfg) : ns_per_dword_(1e9 / cfg.dwords_per_s()) {}

  // Wire time of one FIS with `payload` dwords (header included), ALIGNs included.
  SimTime fis_ns(uint32_t payload) const {
    uint32_t d = payload + fis_dwords::kFraming;
    d += 2 * ((d + 255) / 256);
    return SimTime(d * ns_per_dword_ + 0.5);
  }
  // Wire time of `bytes` of data as Data FISes of at most 8 KiB.
  SimTime data_ns(uint64_t bytes) const {
    uint64_t dwords = (bytes + 3) / 4;
    uint64_t full = dwords / fis_dwords::kMaxDataPayload;
    uint32_t rest = uint32_t(dwords % fis_dwords::kMaxDataPayload);
    SimTime t = full * fis_ns(fis_dwords::kMaxDataPayload + fis_dwords::kDataHeader);
    if (rest) t += fis_ns(rest + fis_dwords::kDataHeader);
    return t;
  }
  // Occupies the wire from no earlier than t for dur; returns when it is free again.
  SimTime reserve(SimTime t, SimTime dur) {
    SimTime start = std::max(t, free_);
    free_ = start + dur;
    return free_;
  }
  SimTime free_at() const { return free_; }
  void reset(SimTime t) { free_ = std::min(free_, t); }

 private:
  double ns_per_dword_;
  SimTime free_ = 0;
};

}  // namespace fisrig::drive
