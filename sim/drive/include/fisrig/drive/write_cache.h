// The volatile write buffer: which logical pages are acknowledged to the host but not yet
// durable on NAND, what each held before (so a power cut can put it back), and when room
// frees up for more. Entries leave in order as their program units complete.
#pragma once

#include <cstdint>
#include <deque>

#include "fisrig/drive/content_store.h"
#include "fisrig/drive/ftl.h"

namespace fisrig::drive {

struct PowerLossReport {
  uint64_t pages_reverted = 0;  // acknowledged writes lost from the cache
  uint64_t pages_torn = 0;      // pages whose program was cut mid-way
};

class WriteCache {
 public:
  WriteCache(uint64_t capacity_pages, Ftl& ftl) : capacity_(capacity_pages), ftl_(ftl) {}

  // Waits (in simulated time) until one page fits; returns when it does.
  SimTime admit(SimTime t);
  // Records a page now in the buffer: landed in host unit `seq`, held `old` before.
  void push(uint64_t lpn, uint64_t seq, const ContentStore::PageWords& old);
  // Forgets entries durable by t. Only at host time (submit, idle): commands are
  // processed ahead of time, and a power cut may yet land before what they freed.
  void retire(SimTime t);
  // When everything now buffered is durable (programs the open unit if it must).
  SimTime drain(SimTime t);
  // Power cut at t: what was not durable reverts; a program in flight is torn.
  PowerLossReport power_loss(SimTime t, ContentStore& content, bool torn_reads_unc);

  uint64_t used() const { return entries_.size() - free_head_; }
  uint64_t capacity() const { return capacity_; }
  void clear() {
    entries_.clear();
    free_head_ = 0;
  }

 private:
  struct Entry {
    uint64_t lpn;
    uint64_t seq;
    ContentStore::PageWords old;
  };
  uint64_t capacity_;
  Ftl& ftl_;
  std::deque<Entry> entries_;
  size_t free_head_ = 0;  // entries before this are durable: room for new pages
};

}  // namespace fisrig::drive
