// The NAND back end as timed resources: each die is busy until some time, and an
// operation starts when the die and its inputs are free. Operations are queued per die
// in the order the controller issues them, as a simple in-order flash scheduler does.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "fisrig/ssd/config.h"

namespace fisrig::drive {

struct NandCounters {
  uint64_t page_reads = 0;
  uint64_t page_programs = 0;   // multi-plane program units
  uint64_t bytes_programmed = 0;  // what those units wrote (SMART: NAND writes)
  uint64_t block_erases = 0;    // per die (all planes at once)
  SimTime die_busy_ns = 0;      // summed over dies
};

// The type of page `page` of a block of `pages_per_block` pages whose cells hold
// `bits_per_cell` bits: 0 the lower page, bits_per_cell - 1 the upper. The shadow order
// programs, at each step s, the lower page of word line s, the next bit of word line s - 1,
// and so on (MLC: L0 L1 U0 L2 U1 ... L(n-1) U(n-2) U(n-1); TLC: L0 L1 M0 L2 M1 U0 ...),
// so that a word line's upper page is written only once its neighbours' lower pages are.
uint32_t nand_page_type(uint32_t page, uint32_t pages_per_block, uint32_t bits_per_cell);

class NandBackend {
 public:
  // `seed`: what the spreads are drawn from (NandTiming's block_spread_pct, erase_spread_pct,
  // spread_pct and read_retry_pct); the Drive passes its FaultKnobs::seed, so a run repeats
  // for its seed as its faults do.
  NandBackend(const NandGeometry& geometry, const NandTiming& timing, uint64_t seed);

  // Programs one unit (a multi-plane page) of `bytes` on `die`, data in the controller at
  // `t_ready`; `page` is its page's index within its block (its type: NandTiming), `block`
  // the block's index on the die (its own speed: NandTiming::block_spread_pct). Returns when
  // the data is durable.
  // `slc`: the block is programmed one bit a cell (the SLC cache): NandTiming::slc_program_ns.
  SimTime program(uint32_t die, uint32_t bytes, SimTime t_ready, uint32_t page = 0, uint32_t block = 0, bool slc = false);
  // Reads page `page` of block `block` on `die` and moves `bytes` of it over the channel;
  // returns data-out time.
  SimTime read(uint32_t die, uint32_t bytes, SimTime t_issue, uint32_t page = 0, uint32_t block = 0, bool slc = false);
  // Erases block `block` on every plane of `die`; returns when done.
  SimTime erase(uint32_t die, SimTime t_issue, uint32_t block = 0);
  // The array time (tPROG, without the transfer) of the last program issued.
  SimTime last_program_ns() const { return last_program_ns_; }
  // The page type of page `page` of a block (0: lower), and the nominal times of a type.
  uint32_t page_type(uint32_t page) const {
    if (page_types_.empty()) return 0;
    return page_types_[page < page_types_.size() ? page : page % page_types_.size()];
  }
  SimTime nominal_read_ns(uint32_t page) const { return read_ns_[page_type(page)]; }
  SimTime nominal_program_ns(uint32_t page) const { return program_ns_[page_type(page)]; }
  // Erases a block on every die, one die after another from `t_issue`, and nothing else
  // starts on any die until the last is done (gc.serial_erase); returns that time.
  SimTime erase_serially(SimTime t_issue, uint32_t block = 0);

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
  // The blocks' own speeds and the operations' stream, from the seed (the constructor's).
  void reseed(uint64_t seed);
  SimTime transfer_ns(uint32_t bytes) const;
  // A program's and an erase's array time on `block`, its own speed in (block_spread_pct,
  // erase_spread_pct), from the tables reseed() makes. Inline: every program and erase asks.
  SimTime block_program_ns(uint32_t type, uint32_t block) const {
    if (block_program_ns_.empty()) return program_ns_[type];
    return block_program_ns_[size_t(type) * blocks_ + (block < blocks_ ? block : block % blocks_)];
  }
  SimTime block_erase_ns(uint32_t block) const {
    if (block_erase_ns_.empty()) return timing_.erase_ns;
    return block_erase_ns_[block < blocks_ ? block : block % blocks_];
  }
  // `ns` times the operation's own factor (NandTiming::spread_pct), if it has one.
  SimTime spread(SimTime ns) { return timing_.spread_pct > 0 ? spread_drawn(ns) : ns; }
  SimTime spread_drawn(SimTime ns);
  double block_draw(uint32_t block) const;  // over [-1, 1], from the seed and the block alone
  double uniform();  // [0, 1), the next draw of the stream
  void note(uint32_t die, SimTime start, SimTime end, Activity kind);
  struct Op {
    SimTime start, end;
    Activity kind;
  };
  bool keep_ = false, gc_ = false;
  std::vector<std::deque<Op>> activity_;
  NandTiming timing_;
  std::vector<uint8_t> page_types_;  // per page of a block (empty: one type)
  std::array<SimTime, 4> read_ns_{}, program_ns_{};  // nominal, per page type
  uint32_t blocks_;  // blocks per plane: the block tables' size
  // Per block (and page type: type x blocks_ + block), the program and erase times with the
  // block's own speed in; empty when the profile gives that no spread.
  std::vector<SimTime> block_program_ns_, block_erase_ns_;
  uint64_t rng_state_, seed_;
  // No page types and no spread (every profile before them): read_ns, program_ns, erase_ns.
  bool plain_ = true;
  SimTime last_program_ns_ = 0;
  double ns_per_byte_;
  std::vector<SimTime> die_free_;
  NandCounters counters_;
};

}  // namespace fisrig::drive
