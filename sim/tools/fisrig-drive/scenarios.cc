#include "scenarios.h"

#include <algorithm>

namespace fisrig::tools {

namespace {
constexpr uint32_t kSector = drive::ata::kSectorBytes;

uint32_t next_word(uint32_t& word) {
  word = word >= drive::kMaxUserWord ? 1 : word + 1;
  return word;
}
}  // namespace

SweepResult sweep(HostDriver& h, bool write, const SweepOptions& o, uint32_t& word) {
  SweepResult r;
  const uint64_t span = h.drive().user_sectors();
  const uint32_t xfer = o.transfer_bytes / kSector;
  const uint64_t zone_sectors = std::min<uint64_t>(o.zone_bytes / kSector, span / o.zones) / xfer * xfer;
  uint64_t bytes = 0;
  SimTime time = 0;
  for (uint32_t z = 0; z < o.zones; ++z) {
    uint64_t base = span * z / o.zones / 8 * 8;
    uint64_t lba = base, end = base + zone_sectors;
    RunTotals t = h.run(1, [&](AtaCommand& c) {
      if (lba >= end) return false;
      c = write ? HostDriver::write(lba, xfer, false, next_word(word), o.compress_pct)
                : HostDriver::read(lba, xfer, false);
      lba += xfer;
      return true;
    });
    r.zone_mbps.push_back(t.mb_per_s());
    bytes += t.bytes;
    time += t.end - t.start;
  }
  r.min_mbps = r.zone_mbps.empty() ? 0 : r.zone_mbps[0];
  for (double v : r.zone_mbps) {
    r.min_mbps = std::min(r.min_mbps, v);
    r.max_mbps = std::max(r.max_mbps, v);
  }
  r.avg_mbps = time ? double(bytes) * 1e3 / double(time) : 0;
  return r;
}

void fill(HostDriver& h, uint8_t compress_pct, uint32_t& word) {
  const uint64_t span = h.drive().user_sectors();
  const uint32_t xfer = (128 << 10) / kSector;
  uint64_t lba = 0;
  h.run(32, [&](AtaCommand& c) {
    if (lba >= span) return false;
    uint32_t n = uint32_t(std::min<uint64_t>(xfer, span - lba));
    c = HostDriver::write(lba, n, true, next_word(word), compress_pct);
    lba += n;
    return true;
  });
}

RunTotals torture(HostDriver& h, SimTime duration, uint8_t compress_pct, uint32_t& word, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t pages = h.drive().user_sectors() / 8;
  std::uniform_int_distribution<uint64_t> pick(0, pages - 1);
  SimTime until = h.now() + duration;
  return h.run(32, [&](AtaCommand& c) {
    c = HostDriver::write(pick(rng) * 8, 8, true, next_word(word), compress_pct);
    return true;
  }, until);
}

RecoveryFigures torture_idle_trim(Drive& d, const RecoveryOptions& o) {
  HostDriver h(d);
  RecoveryFigures f;
  uint32_t word = 0;
  const SimTime torture_time = SimTime(o.torture_minutes * 60 * drive::kNsPerS);
  h.secure_erase();
  f.clean = sweep(h, true, o.sweep, word);
  fill(h, o.data_compress_pct, word);
  d.ssd().ftl().reset_counters();
  f.torture = torture(h, torture_time, o.data_compress_pct, word, o.seed);
  f.write_amplification = d.ssd().ftl().counters().write_amplification();
  f.tortured = sweep(h, true, o.sweep, word);
  // As the review does: a fresh torture before the idle, so the idle sweep does not
  // land on zones the tortured sweep has just rewritten.
  h.secure_erase();
  fill(h, o.data_compress_pct, word);
  torture(h, torture_time, o.data_compress_pct, word, o.seed + 1);
  h.idle(SimTime(o.idle_minutes * 60 * drive::kNsPerS));
  f.idle_recovered = sweep(h, true, o.sweep, word);
  h.trim_all();
  f.trimmed = sweep(h, true, o.sweep, word);
  return f;
}

CompressingFigures compressing_states(Drive& d, const RecoveryOptions& o) {
  HostDriver h(d);
  CompressingFigures f;
  uint32_t word = 0;
  h.secure_erase();
  f.write_clean = sweep(h, true, o.sweep, word);
  fill(h, o.data_compress_pct, word);
  f.read_clean = sweep(h, false, o.sweep, word);
  torture(h, SimTime(o.torture_minutes * 60 * drive::kNsPerS), o.data_compress_pct, word, o.seed);
  f.read_tortured = sweep(h, false, o.sweep, word);
  f.write_tortured = sweep(h, true, o.sweep, word);
  return f;
}

}  // namespace fisrig::tools
