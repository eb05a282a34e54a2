// One command while the drive processes it (private to the drive's sources).
#pragma once
#include <algorithm>

#include "fisrig/sata/drive.h"

namespace fisrig::drive {

struct Drive::Ctx {
  const AtaCommand& cmd;
  Completion c{};
  bool queued = false;
  bool failed = false;
  bool abort_queue = false;  // a non-queued command that found NCQ commands outstanding
  SimTime t = 0;  // where processing has got to on the drive's clock
  // A queued read's data phase on the device side's own wire, where it has got to
  // (Drive::own_wire_, with SDB coalescing): its status goes there after it. kNever: c.t.
  SimTime own_t = kNever;
  SimTime own_due = kNever;  // ... and its DMA Setup's start there (a queued read's)
};

// Inline: a read or write calls it per Data FIS (a branch when no log is set).
inline void Drive::log_fis(const Ctx& c, SimTime start, SimTime end, uint32_t dwords) {
  if (fis_log_) fis_log_->push_back({c.cmd.user_tag, start, end, dwords});
}

inline void Drive::log_fises(const Ctx& c, SimTime end, uint64_t bytes) {
  if (!fis_log_) return;
  uint64_t dwords = (bytes + 3) / 4;
  SimTime t = end - link_.data_ns(bytes);
  while (dwords) {
    uint32_t n = uint32_t(std::min<uint64_t>(dwords, fis_dwords::kMaxDataPayload));
    SimTime start = t;
    t += link_.fis_ns(n + fis_dwords::kDataHeader);
    log_fis(c, start, t, n);
    dwords -= n;
  }
}

}  // namespace fisrig::drive
