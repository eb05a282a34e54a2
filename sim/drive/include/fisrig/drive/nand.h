// The NAND back end as timed resources: each die is busy until some time, and an
// operation starts when the die and its inputs are free. Operations are queued per die
// in the order the controller issues them, as a simple in-order flash scheduler does.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "fisrig/drive/config.h"

namespace fisrig::drive {

struct NandCounters {
  uint64_t page_reads = 0;
  uint64_t page_programs = 0;   // multi-plane program units
  uint64_t bytes_programmed = 0;  // what those units wrote (SMART: NAND writes)
  uint64_t block_erases = 0;    // per die (all planes at once)
  SimTime die_busy_ns = 0;      // summed over dies
};

class NandBackend {
 public:
  NandBackend(const NandGeometry& geometry, const NandTiming& timing);

  // Programs one unit (a multi-plane page) of `bytes` on `die`, data in the controller at
  // `t_ready`. Returns when the data is durable.
  SimTime program(uint32_t die, uint32_t bytes, SimTime t_ready);
  // Reads one page on `die` and moves `bytes` of it over the channel; returns data-out time.
  SimTime read(uint32_t die, uint32_t bytes, SimTime t_issue);
  // Erases a block on every plane of `die`; returns when done.
  SimTime erase(uint32_t die, SimTime t_issue);
  // Erases a block on every die, one die after another from `t_issue`, and nothing else
  // starts on any die until the last is done (gc.serial_erase); returns that time.
  SimTime erase_serially(SimTime t_issue);

  // What each die is doing, for the drive's current (Drive::current_ma): kept only once
  // asked for (keep_activity), as (start, end, kind) per die, in the order they run.
  enum class Activity : uint8_t { kRead, kProgram, kErase, kGc };
  void keep_activity(bool on);
  // While one lives, the operations issued are the garbage collector's (Activity::kGc).
  class GcScope {
   public:
    explicit GcScope(NandBackend& n, bool on = true) : n_(n), was_(n.gc_) { n.gc_ = was_ || on; }
    ~GcScope() { n_.gc_ = was_; }

   private:
    NandBackend& n_;
    bool was_;
  };
  // The summed draw of the dies at t (per Activity, in ma), t never earlier than the last
  // asked: what ended before it is dropped.
  double draw_ma(SimTime t, const std::array<double, 4>& ma);

  SimTime die_free(uint32_t die) const { return die_free_[die]; }
  SimTime all_idle_at() const;  // when every die is free
  uint32_t dies() const { return uint32_t(die_free_.size()); }
  const NandCounters& counters() const { return counters_; }
  void reset_time(SimTime t);  // power cycle: in-flight work is gone

 private:
  SimTime transfer_ns(uint32_t bytes) const;
  void note(uint32_t die, SimTime start, SimTime end, Activity kind);
  struct Op {
    SimTime start, end;
    Activity kind;
  };
  bool keep_ = false, gc_ = false;
  std::vector<std::deque<Op>> activity_;
  NandTiming timing_;
  double ns_per_byte_;
  std::vector<SimTime> die_free_;
  NandCounters counters_;
};

}  // namespace fisrig::drive
