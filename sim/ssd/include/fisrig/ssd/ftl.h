// Page-mapped flash translation layer over superblocks.
//
// With an SLC cache (CacheConfig::slc_gb) the host's frontier opens superblocks programmed
// one bit a cell while the cache has room: they hold 1/bits_per_cell of a native one, fast
// to program; GC relocates their data into native superblocks like any victim's, and idle
// time folds them first.
//
// A superblock is one erase block from every plane of every die; its slots are striped
// so that consecutive program units land on consecutive dies. Host writes and GC
// relocations fill two separate open superblocks. GC is greedy (fewest valid slots),
// in the write path when the free pool falls to its floor and in idle time up to a
// target. Slots are 4 KiB, or smaller units on a compressing drive, where a logical
// page takes as many slots as its compressed size needs.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "fisrig/ssd/config.h"
#include "fisrig/ssd/huge_pages.h"
#include "fisrig/ssd/page_table.h"
#include "fisrig/ssd/nand.h"

namespace fisrig::drive {

struct FtlCounters {
  uint64_t host_slots = 0;     // slots the host's data took
  uint64_t gc_slots = 0;       // slots GC copied
  uint64_t pad_slots = 0;      // slots padded to program a part-filled unit
  uint64_t gc_victims = 0;
  uint64_t background_victims = 0;
  uint64_t superblock_erases = 0;
  double write_amplification() const {
    return host_slots ? double(host_slots + gc_slots + pad_slots) / double(host_slots) : 1.0;
  }
};

class Ftl {
 public:
  static constexpr uint32_t kUnmapped = 0xFFFFFFFFu;

  // `table` holds one mapping entry per logical page (shared with the content store).
  Ftl(const DriveConfig& config, NandBackend& nand, PageTable& table);

  uint64_t logical_pages() const { return l2p_.size(); }
  uint32_t slots_per_page() const { return slots_per_lpn_; }
  // Slots a logical page takes at this compressed size (percent of 4 KiB).
  uint32_t slots_for(uint8_t compress_pct) const;

  // Maps a host page to new slots; its data is in the controller at t_ready. Returns the
  // sequence number of the host program unit it landed in (see unit_done).
  uint64_t write(uint64_t lpn, uint32_t slots, SimTime t_ready);
  void trim(uint64_t lpn);
  bool mapped(uint64_t lpn) const { return l2p_.slot(lpn) != kUnmapped; }

  // Programs the part-filled host unit now (FLUSH, FUA, idle), padding its remainder.
  void program_open_unit(SimTime t);
  // When host unit `seq` became durable; kNever while it is still being filled.
  SimTime unit_done(uint64_t seq) const;
  // When the program of unit `seq` started (for torn-write detection).
  SimTime unit_program_start(uint64_t seq) const;
  uint64_t next_unit_seq() const { return host_.unit_seq; }

  // Reads a logical page into the controller, issued at t; returns when it is there.
  // Pages that share a NAND page with the previous read of the same batch cost nothing.
  struct ReadBatch {
    uint64_t last_unit = ~uint64_t{0};
    SimTime last_done = 0;
    SimTime t_issue = 0;
    uint32_t nand_reads = 0;
  };
  SimTime read(uint64_t lpn, SimTime t, ReadBatch& batch);

  // Idle time from `from` to `until`: background GC.
  void idle(SimTime from, SimTime until);
  // Every block erased, every mapping dropped; returns when the erase finishes.
  SimTime erase_all(SimTime t);

  uint32_t free_superblocks() const { return uint32_t(free_.size()); }
  // Superblocks in SLC mode now, and the most there may be (0: no SLC cache).
  uint32_t slc_superblocks() const { return slc_in_use_; }
  uint32_t slc_budget() const { return slc_budget_; }
  uint32_t superblocks() const { return superblocks_; }
  uint32_t slots_per_superblock() const { return slots_per_sb_; }
  uint64_t valid_slots() const;
  // The two maps agree: every mapped page's slot names it back in p2l, and each
  // superblock's valid count is the slots of the pages mapped into it (p2l may still name
  // pages that have moved on; GC checks each against the L2P). The integrity tests check
  // this after churn through GC.
  bool maps_agree() const;
  const FtlCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = FtlCounters{}; }

 private:
  static constexpr uint32_t kNoSlot = 0xFFFFFFFFu;
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  enum class SbState : uint8_t { kFree, kOpen, kClosed };

  struct Frontier {
    uint32_t sb = kNone;
    uint32_t next = 0;       // next slot index within sb
    uint32_t cap = 0;        // what sb holds (capacity(sb), kept at hand for the write path)
    SimTime unit_ready = 0;  // latest data-ready time of the unit being filled
    uint64_t unit_seq = 0;   // host frontier: sequence of the unit being filled
    uint64_t sb_first_seq = 0;
    bool host = false;
  };

  uint32_t die_of_unit(uint32_t unit) const { return unit % dies_; }
  // A unit's page within its die's block: units stripe across the dies, page by page.
  uint32_t page_of_unit(uint32_t unit) const { return unit / dies_; }
  void invalidate(uint64_t lpn);
  void place(Frontier& f, uint64_t lpn, uint32_t slots, SimTime t_ready);
  void make_room(Frontier& f, uint32_t slots, SimTime t);
  void close(Frontier& f, SimTime t);
  void program_unit(Frontier& f);
  void pad_unit(Frontier& f);
  bool collect_one(SimTime t, bool background);
  void collect(uint32_t victim, SimTime t, bool background);  // relocates its valid data, erases it
  // What a superblock holds: slots_per_sb_, or slc_slots_ in SLC mode (one load: the write
  // path asks for every page).
  uint32_t capacity(uint32_t sb) const { return sb_capacity_[sb]; }
  bool slc(uint32_t sb) const { return sb_capacity_[sb] != slots_per_sb_; }
  void set_slc(uint32_t sb, bool on) { sb_capacity_[sb] = on ? slc_slots_ : slots_per_sb_; }
  uint32_t pick_victim();
  void bucket_insert(uint32_t sb);
  void bucket_remove(uint32_t sb);
  void dec_valid(uint32_t sb, uint32_t n);

  NandBackend& nand_;
  GcConfig gc_;
  uint32_t dies_;
  uint32_t slot_bytes_;
  uint32_t slots_per_lpn_;
  uint32_t unit_slots_;
  uint32_t slots_per_sb_;
  uint32_t superblocks_;
  uint32_t bg_target_free_;

  PageTable& l2p_;
  std::vector<uint8_t> lpn_slots_;  // compressing drives only
  HugeVector<uint32_t> p2l_;       // first slot of a page: its lpn; others kNone
  std::vector<uint32_t> sb_valid_;
  std::vector<SbState> sb_state_;
  std::vector<uint32_t> sb_capacity_;  // capacity(sb)
  uint32_t slc_slots_ = 0, slc_budget_ = 0, slc_in_use_ = 0;
  std::vector<int32_t> bucket_next_, bucket_prev_, bucket_head_;
  uint32_t bucket_min_hint_ = 0;
  std::deque<uint32_t> free_;

  Frontier host_, gcf_;
  std::vector<SimTime> unit_done_ring_, unit_start_ring_;
  std::vector<SimTime> gc_read_done_;  // scratch: per unit of the victim being collected
  std::vector<uint32_t> gc_valid_;     // scratch: its valid slots, in order
  uint64_t ring_mask_;
  FtlCounters counters_;
};

}  // namespace fisrig::drive
