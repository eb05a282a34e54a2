// A minimal host for the drive alone: keeps a queue depth of commands outstanding,
// hands out NCQ tags, and advances simulated time to each completion. This is what a
// benchmark tool on a real host does, without the OS; the rig's engine replaces it.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fisrig/sata/drive.h"

namespace fisrig::tools {

using drive::AtaCommand;
using drive::Completion;
using drive::Drive;
using drive::SimTime;

struct RunTotals {
  uint64_t commands = 0;
  uint64_t bytes = 0;
  SimTime start = 0;
  SimTime end = 0;
  double mb_per_s() const { return end > start ? double(bytes) * 1e3 / double(end - start) : 0; }
  double iops() const { return end > start ? double(commands) * 1e9 / double(end - start) : 0; }
};

class HostDriver {
 public:
  explicit HostDriver(Drive& d) : d_(d) {}

  SimTime now() const { return now_; }
  Drive& drive() { return d_; }

  // Issues what `next` produces (false = no more) with up to `qd` outstanding; queued
  // commands get a free tag here. Stops early when the drive's clock passes `until`.
  // Any failed command throws: the scenarios here expect a healthy drive.
  RunTotals run(uint32_t qd, const std::function<bool(AtaCommand&)>& next, SimTime until = drive::kNever);
  Completion one(const AtaCommand& cmd);  // non-queued, waits for it
  void idle(SimTime duration);

  // Commands the scenarios use.
  static AtaCommand write(uint64_t lba, uint32_t sectors, bool ncq, uint32_t word, uint8_t compress_pct);
  static AtaCommand read(uint64_t lba, uint32_t sectors, bool ncq);

  void secure_erase();
  void trim_all();  // DSM TRIM of every LBA, as a format with TRIM does

 private:
  Drive& d_;
  SimTime now_ = 0;
};

}  // namespace fisrig::tools
