// The drive states the reviews measure, and the HD Tach-style sweep that measures them.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "host_driver.h"

namespace fisrig::tools {

struct SweepOptions {
  uint32_t zones = 256;               // sample points evenly spread over the LBA span
  uint64_t zone_bytes = 32ull << 20;  // HD Tach's "long bench" zone
  uint32_t transfer_bytes = 128 << 10;
  uint8_t compress_pct = 100;         // data written by a write sweep
};

struct SweepResult {
  std::vector<double> zone_mbps;  // one figure per zone, in LBA order
  double avg_mbps = 0;            // all zones' bytes over all zones' time: what a user waits for
  double min_mbps = 0;
  double max_mbps = 0;
};

// Writes (or reads) each zone sequentially at queue depth 1, timing each zone.
SweepResult sweep(HostDriver& h, bool write, const SweepOptions& o, uint32_t& word);
// Sequential write of every LBA at QD32 with 128 KiB commands.
void fill(HostDriver& h, uint8_t compress_pct, uint32_t& word);
// 4 KiB random writes over the whole span at QD32 (NCQ) for `duration` of simulated time.
RunTotals torture(HostDriver& h, SimTime duration, uint8_t compress_pct, uint32_t& word, uint64_t seed);

struct RecoveryOptions {
  double torture_minutes = 20;
  double idle_minutes = 40;
  SweepOptions sweep;
  uint8_t data_compress_pct = 100;  // the fill's and the torture's data
  uint64_t seed = 1;
};

// torture-idle-trim-recovery, as the review ran it: secure erase, clean sweep; full fill,
// torture, sweep; secure erase, full fill, torture, idle, sweep; TRIM of the whole
// drive, sweep.
struct RecoveryFigures {
  SweepResult clean, tortured, idle_recovered, trimmed;
  RunTotals torture;
  double write_amplification = 0;
};
RecoveryFigures torture_idle_trim(Drive& d, const RecoveryOptions& o);

// The same states on a compressing drive, with reads, as sandforce-trim-broken.txt runs
// them: secure erase; write sweep; full fill; read sweep; torture; read and write sweeps.
struct CompressingFigures {
  SweepResult write_clean, read_clean, read_tortured, write_tortured;
};
CompressingFigures compressing_states(Drive& d, const RecoveryOptions& o);

}  // namespace fisrig::tools
