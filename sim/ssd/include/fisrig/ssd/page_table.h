// One entry per 4 KiB logical page: where the FTL put it and what the content store says
// it holds, side by side, so that a host write finds both in one cache line.
#pragma once

#include <cstdint>

#include "fisrig/ssd/huge_pages.h"

namespace fisrig::drive {

class PageTable {
 public:
  static constexpr uint32_t kUnmapped = 0xFFFFFFFFu;

  explicit PageTable(uint64_t pages) : e_(pages, Entry{kUnmapped, 0}) {}

  uint32_t& slot(uint64_t lpn) { return e_[lpn].slot; }
  uint32_t slot(uint64_t lpn) const { return e_[lpn].slot; }
  uint32_t& content(uint64_t lpn) { return e_[lpn].content; }
  uint32_t content(uint64_t lpn) const { return e_[lpn].content; }
  uint64_t size() const { return e_.size(); }
  void prefetch(uint64_t lpn) const { __builtin_prefetch(&e_[lpn]); }
  void unmap_all() {
    for (Entry& x : e_) x.slot = kUnmapped;
  }
  void clear_content() {
    for (Entry& x : e_) x.content = 0;
  }

 private:
  struct Entry {
    uint32_t slot;
    uint32_t content;
  };
  HugeVector<Entry> e_;
};

}  // namespace fisrig::drive
