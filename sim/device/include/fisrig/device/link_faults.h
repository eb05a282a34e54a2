// The link-level fault knobs (FaultKnobs in fisrig/ssd/config.h) as the device side
// applies them on the wire, cycle by cycle:
//   r_err_rate        per FIS the host sends: the device answers R_ERR and drops it.
//   hold_storm_rate   per Data FIS the device receives: it sends HOLD bursts adding up to
//   hold_storm_ns     hold_storm_ns (four bursts, 32 dwords apart) while the FIS comes in.
// data_fis_crc_error_rate stays with the Drive, which decides per Data FIS of a read which
// one fails and ends the command with ICRC|ABRT (raising an NCQ error when queued); the
// device then sends exactly that Data FIS with a corrupted CRC.
#pragma once

#include <cstdint>
#include <random>

#include "fisrig/ssd/config.h"

namespace fisrig::device {

class LinkFaults {
 public:
  LinkFaults() : rng_(1) {}
  explicit LinkFaults(const drive::FaultKnobs& k)
      : r_err_rate(k.r_err_rate),
        hold_storm_rate(k.hold_storm_rate),
        hold_storm_ns(k.hold_storm_ns),
        rng_(k.seed ^ 0x5A7Au) {}

  double r_err_rate = 0;
  double hold_storm_rate = 0;
  drive::SimTime hold_storm_ns = 0;

  bool chance(double p) { return p > 0 && (p >= 1 || std::uniform_real_distribution<double>(0, 1)(rng_) < p); }

 private:
  std::mt19937_64 rng_;
};

}  // namespace fisrig::device
