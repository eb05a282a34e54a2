#include "fisrig/drive/nand.h"

#include <algorithm>

namespace fisrig::drive {

NandBackend::NandBackend(const NandGeometry& geometry, const NandTiming& timing)
    : timing_(timing),
      ns_per_byte_(1e3 / timing.channel_mbps),
      die_free_(geometry.dies(), 0) {}

SimTime NandBackend::transfer_ns(uint32_t bytes) const {
  return SimTime(double(bytes) * ns_per_byte_ + 0.5);
}

// Transfers over the NAND channel are not reserved as a shared resource: with an
// in-order reservation, one busy die's future operation would block its idle neighbours
// on the same channel (no back-filling), which a real channel does not do. Each channel
// carries several times the SATA link's rate in every profile, so it is not the limit;
// the transfer time still counts in each die's occupancy.
SimTime NandBackend::program(uint32_t die, uint32_t bytes, SimTime t_ready) {
  SimTime start = std::max(t_ready, die_free_[die]);
  SimTime done = start + transfer_ns(bytes) + timing_.program_ns;
  counters_.die_busy_ns += done - start;
  die_free_[die] = done;
  note(die, start, done, Activity::kProgram);
  ++counters_.page_programs;
  counters_.bytes_programmed += bytes;
  return done;
}

SimTime NandBackend::read(uint32_t die, uint32_t bytes, SimTime t_issue) {
  SimTime start = std::max(t_issue, die_free_[die]);
  SimTime done = start + timing_.read_ns + transfer_ns(bytes);
  counters_.die_busy_ns += done - start;
  die_free_[die] = done;  // the page register is busy until the data is out
  note(die, start, done, Activity::kRead);
  ++counters_.page_reads;
  return done;
}

SimTime NandBackend::erase(uint32_t die, SimTime t_issue) {
  SimTime start = std::max(t_issue, die_free_[die]);
  SimTime done = start + timing_.erase_ns;
  counters_.die_busy_ns += done - start;
  die_free_[die] = done;
  note(die, start, done, Activity::kErase);
  ++counters_.block_erases;
  return done;
}

SimTime NandBackend::erase_serially(SimTime t_issue) {
  SimTime t = t_issue;
  for (uint32_t d = 0; d < dies(); ++d) t = erase(d, t);
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
