#include "fisrig/ssd/nand.h"

#include "fisrig/ssd/mix64.h"

#include <algorithm>
#include <cmath>

namespace fisrig::drive {

uint32_t nand_page_type(uint32_t page, uint32_t pages_per_block, uint32_t bits_per_cell) {
  if (bits_per_cell <= 1 || pages_per_block == 0) return 0;
  page %= pages_per_block;
  const uint32_t b = bits_per_cell, lines = (pages_per_block + b - 1) / b;
  // Step s programs bit j of word line s - j, j = 0 (lower) first; a block whose pages do
  // not fill its last word line stops when its pages are used.
  uint32_t n = 0;
  for (uint32_t s = 0; s < lines + b - 1; ++s)
    for (uint32_t j = 0; j < b; ++j) {
      if (j > s || s - j >= lines) continue;
      if (n++ == page) return j;
    }
  return b - 1;
}

NandBackend::NandBackend(const NandGeometry& geometry, const NandTiming& timing, uint64_t seed)
    : timing_(timing),
      blocks_(std::max<uint32_t>(1, geometry.blocks_per_plane)),
      ns_per_byte_(1e3 / timing.channel_mbps),
      die_free_(geometry.dies(), 0) {
  if (timing.bits_per_cell > 1)
    for (uint32_t p = 0; p < geometry.pages_per_block; ++p)
      page_types_.push_back(uint8_t(nand_page_type(p, geometry.pages_per_block, timing.bits_per_cell)));
  for (size_t t = 0; t < read_ns_.size(); ++t) {
    const auto& r = timing.page_read_ns;
    const auto& p = timing.page_program_ns;
    read_ns_[t] = r.empty() ? timing.read_ns : r[std::min(t, r.size() - 1)];
    program_ns_[t] = p.empty() ? timing.program_ns : p[std::min(t, p.size() - 1)];
  }
  reseed(seed);
}

SimTime NandBackend::transfer_ns(uint32_t bytes) const {
  return SimTime(double(bytes) * ns_per_byte_ + 0.5);
}

namespace {
double unit_of(uint64_t z) { return double(z >> 11) * 0x1.0p-53; }
SimTime scaled(SimTime ns, double f) { return SimTime(std::llround(double(ns) * f)); }
}  // namespace

// A block's draw over [-1, 1] follows from the seed and the block's index alone, whichever
// die asks and however often it has been erased: its speed is its own.
double NandBackend::block_draw(uint32_t block) const {
  uint64_t base = mix64(seed_ ^ mix64(uint64_t(block) + 0x632BE59BD9B4E019ull));
  return unit_of(mix64(base + 1)) + unit_of(mix64(base + 2)) - 1;  // triangular over [-1, 1]
}

// The blocks' own speeds, once per seed: a program or erase then looks its time up.
void NandBackend::reseed(uint64_t seed) {
  rng_state_ = seed_ = seed;
  const auto& spreads = timing_.block_spread_pct;
  bool programs = std::any_of(spreads.begin(), spreads.end(), [](double v) { return v > 0; });
  block_program_ns_.clear();
  block_erase_ns_.clear();
  if (programs) block_program_ns_.resize(size_t(program_ns_.size()) * blocks_);
  if (timing_.erase_spread_pct > 0) block_erase_ns_.resize(blocks_);
  plain_ = page_types_.empty() && !programs && block_erase_ns_.empty() && timing_.spread_pct <= 0 &&
           timing_.read_retry_pct <= 0;
  for (uint32_t b = 0; b < blocks_ && (programs || !block_erase_ns_.empty()); ++b) {
    double draw = block_draw(b);
    for (size_t t = 0; programs && t < program_ns_.size(); ++t) {
      double s = spreads[std::min(t, spreads.size() - 1)];
      block_program_ns_[t * blocks_ + b] = scaled(program_ns_[t], 1 + s / 100 * draw);
    }
    if (!block_erase_ns_.empty()) block_erase_ns_[b] = scaled(timing_.erase_ns, 1 + timing_.erase_spread_pct / 100 * draw);
  }
}

// splitmix64: a counter-based stream, so that a run's times follow from the seed and the
// order of the operations alone.
double NandBackend::uniform() { return unit_of(mix64(rng_state_ += 0x9E3779B97F4A7C15ull)); }

SimTime NandBackend::spread_drawn(SimTime ns) {
  // The sum of two uniform draws less one is triangular over [-1, 1].
  return scaled(ns, 1 + timing_.spread_pct / 100 * (uniform() + uniform() - 1));
}

// Transfers over the NAND channel are not reserved as a shared resource: with an
// in-order reservation, one busy die's future operation would block its idle neighbours
// on the same channel (no back-filling), which a real channel does not do. Each channel
// carries several times the SATA link's rate in every profile, so it is not the limit;
// the transfer time still counts in each die's occupancy.
SimTime NandBackend::program(uint32_t die, uint32_t bytes, SimTime t_ready, uint32_t page, uint32_t block, bool slc) {
  SimTime start = std::max(t_ready, die_free_[die]);
  if (slc) last_program_ns_ = spread(timing_.slc_program_ns ? timing_.slc_program_ns : program_ns_[0]);
  else last_program_ns_ = plain_ ? timing_.program_ns : spread(block_program_ns(page_type(page), block));
  SimTime done = start + transfer_ns(bytes) + last_program_ns_;
  counters_.die_busy_ns += done - start;
  die_free_[die] = done;
  note(die, start, done, Activity::kProgram);
  ++counters_.page_programs;
  counters_.bytes_programmed += bytes;
  return done;
}

SimTime NandBackend::read(uint32_t die, uint32_t bytes, SimTime t_issue, uint32_t page, uint32_t block, bool slc) {
  SimTime start = std::max(t_issue, die_free_[die]);
  SimTime array = timing_.read_ns;
  if (!plain_) {
    array = spread(slc ? read_ns_[0] : nominal_read_ns(page));
    if (timing_.read_retry_pct > 0 && uniform() * 100 < timing_.read_retry_pct) array += spread(timing_.read_retry_ns);
  }
  SimTime done = start + array + transfer_ns(bytes);
  counters_.die_busy_ns += done - start;
  die_free_[die] = done;  // the page register is busy until the data is out
  note(die, start, done, Activity::kRead);
  ++counters_.page_reads;
  return done;
}

SimTime NandBackend::erase(uint32_t die, SimTime t_issue, uint32_t block) {
  SimTime start = std::max(t_issue, die_free_[die]);
  SimTime done = start + (plain_ ? timing_.erase_ns : spread(block_erase_ns(block)));
  counters_.die_busy_ns += done - start;
  die_free_[die] = done;
  note(die, start, done, Activity::kErase);
  ++counters_.block_erases;
  return done;
}

SimTime NandBackend::erase_serially(SimTime t_issue, uint32_t block) {
  SimTime t = t_issue;
  for (uint32_t d = 0; d < dies(); ++d) t = erase(d, t, block);
  for (SimTime& f : die_free_) f = std::max(f, t);
  return t;
}

SimTime NandBackend::all_idle_at() const {
  return *std::max_element(die_free_.begin(), die_free_.end());
}

void NandBackend::reset_time(SimTime t) {
  for (auto& d : die_free_) d = std::min(d, t);
  for (auto& ops : activity_) {  // what had not started is gone, what ran ends now
    while (!ops.empty() && ops.back().start >= t) ops.pop_back();
    for (Op& op : ops) op.end = std::min(op.end, t);
  }
}

void NandBackend::keep_activity(bool on) {
  keep_ = on;
  activity_.assign(on ? die_free_.size() : 0, {});
}

void NandBackend::note(uint32_t die, SimTime start, SimTime end, Activity kind) {
  if (keep_) activity_[die].push_back({start, end, gc_ ? Activity::kGc : kind});
}

double NandBackend::draw_ma(SimTime t, const std::array<double, 4>& ma) {
  double sum = 0;
  for (auto& ops : activity_) {
    while (!ops.empty() && ops.front().end <= t) ops.pop_front();
    if (!ops.empty() && ops.front().start <= t) sum += ma[size_t(ops.front().kind)];
  }
  return sum;
}

}  // namespace fisrig::drive
