// The volatile write buffer: which logical pages are acknowledged to the host but not yet
// durable on NAND, what each held before (so a power cut can put it back), and when room
// frees up for more. Entries leave in order as their program units complete.
#pragma once

#include <cstdint>
#include <deque>

#include "fisrig/ssd/config.h"
#include "fisrig/ssd/content_store.h"
#include "fisrig/ssd/ftl.h"

namespace fisrig::drive {

struct PowerLossReport {
  uint64_t pages_reverted = 0;  // acknowledged writes lost from the cache
  uint64_t pages_torn = 0;      // pages whose program was cut mid-way
  // What a lying drive (PowerConfig's lies) did besides.
  uint64_t pages_reordered = 0;    // buffered out of order: kept while an earlier one was lost
  uint64_t pages_misdirected = 0;  // landed on the next page
  uint64_t pages_damaged = 0;      // read back with a bit flipped
  uint64_t pages_unmapped = 0;     // lost with their mapping segment: read zeros
};

class WriteCache {
 public:
  WriteCache(uint64_t capacity_pages, Ftl& ftl) : capacity_(capacity_pages), ftl_(ftl) {}

  // Waits (in simulated time) until `pages` pages fit (at most the buffer's); returns when
  // they do. The pages are the buffer's once pushed: a caller admits what it pushes next.
  SimTime admit(SimTime t, uint64_t pages = 1);
  // Records a page now in the buffer: its data in at `arrived`, landed in host unit `seq`,
  // held `old` before; `through`: its write was write-through (FUA, or the cache off),
  // acknowledged durable.
  void push(uint64_t lpn, uint64_t seq, const ContentStore::PageWords& old, bool through = false,
            SimTime arrived = 0);
  // The lies that need what was made durable shortly before a cut keep that many of the
  // entries retire() forgets (0: none, the default: nothing is kept).
  void keep_recent(size_t n) { keep_recent_ = n; }
  // Forgets entries durable by t. Only at host time (submit, idle): commands are
  // processed ahead of time, and a power cut may yet land before what they freed.
  void retire(SimTime t);
  // When everything now buffered is durable (programs the open unit if it must).
  SimTime drain(SimTime t);
  // Power lost at t: what was not durable reverts, and so does every buffered page after it
  // (an honest drive commits in order; write-through pages were acknowledged durable and
  // stay); a program in flight is torn. Then the lies `power` asks for. A page whose data
  // came in after the rails fell at `cut` (<= t: t is later where capacitors drained the
  // buffer) never arrived: it reverts too, untorn.
  PowerLossReport power_loss(SimTime t, ContentStore& content, const PowerConfig& power, SimTime cut = kNever);

  uint64_t used() const { return entries_.size() - free_head_; }
  uint64_t capacity() const { return capacity_; }
  void clear() {
    entries_.clear();
    recent_.clear();
    free_head_ = 0;
  }

 private:
  struct Entry {
    uint64_t lpn;
    uint64_t seq;
    ContentStore::PageWords old;
    bool through;
    SimTime arrived;
  };
  void lie(SimTime t, ContentStore& content, const PowerConfig& power, PowerLossReport& r);
  uint64_t capacity_;
  Ftl& ftl_;
  std::deque<Entry> entries_;
  std::deque<Entry> recent_;  // retired entries, newest last, keep_recent_ at most
  size_t keep_recent_ = 0;
  size_t free_head_ = 0;  // entries before this are durable: room for new pages
};

}  // namespace fisrig::drive
