#include "fisrig/ssd/write_cache.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace fisrig::drive {

void WriteCache::retire(SimTime t) {
  while (!entries_.empty() && ftl_.unit_done(entries_.front().seq) <= t) {
    if (keep_recent_) {
      recent_.push_back(entries_.front());
      if (recent_.size() > keep_recent_) recent_.pop_front();
    }
    entries_.pop_front();
    if (free_head_) --free_head_;
  }
}

SimTime WriteCache::admit(SimTime t, uint64_t pages) {
  while (free_head_ < entries_.size() && ftl_.unit_done(entries_[free_head_].seq) <= t) ++free_head_;
  SimTime when = t;
  pages = std::min(std::max<uint64_t>(pages, 1), capacity_);
  while (used() + pages > capacity_) {
    const Entry& oldest = entries_[free_head_];
    SimTime done = ftl_.unit_done(oldest.seq);
    if (done == kNever) {
      // The oldest page waits in a part-filled unit: write it out to make room.
      ftl_.program_open_unit(when);
      done = ftl_.unit_done(oldest.seq);
    }
    when = std::max(when, done);
    ++free_head_;
  }
  return when;
}

void WriteCache::push(uint64_t lpn, uint64_t seq, const ContentStore::PageWords& old, bool through,
                      SimTime arrived) {
  entries_.push_back(Entry{lpn, seq, old, through, arrived});
}

SimTime WriteCache::drain(SimTime t) {
  if (entries_.empty()) return t;
  if (ftl_.unit_done(entries_.back().seq) == kNever) ftl_.program_open_unit(t);
  SimTime done = t;
  for (const Entry& e : entries_) done = std::max(done, ftl_.unit_done(e.seq));
  return done;
}

PowerLossReport WriteCache::power_loss(SimTime t, ContentStore& content, const PowerConfig& power, SimTime cut) {
  PowerLossReport r;
  // Which buffered pages are lost, oldest first: those not durable by t and, on an honest
  // drive, every later one not written through (its map commits in order, so nothing
  // after a lost page survives it). A drive that reorders keeps half of what it had not
  // made durable (the odd units) and so loses earlier pages while later ones stay.
  std::vector<uint8_t> lost(entries_.size());
  bool broken = false;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const bool came = e.arrived <= cut, durable = came && ftl_.unit_done(e.seq) <= t;
    if (power.reorders) {
      lost[i] = !came || (!durable && !(e.seq & 1));
      if (!lost[i] && !durable) ++r.pages_reordered;
    } else {
      lost[i] = !durable || (broken && !e.through);
      broken |= !durable;
    }
  }
  // Newest first, so a page written twice ends with what it held before both; a page a
  // later kept entry wrote keeps that (a set: enterprise-200gb's 64 MiB cache holds 16,384 pages).
  std::unordered_set<uint64_t> kept;
  for (size_t i = entries_.size(); i-- > 0;) {
    const Entry& e = entries_[i];
    if (!lost[i]) {
      kept.insert(e.lpn);
      continue;
    }
    if (kept.count(e.lpn)) continue;
    SimTime done = ftl_.unit_done(e.seq);
    SimTime start = ftl_.unit_program_start(e.seq);
    if (power.torn_reads_unc && done != kNever && done > t && start <= t && e.arrived <= cut) {
      ++r.pages_torn;
      content.fill(e.lpn * ContentStore::kSectorsPerPage, ContentStore::kSectorsPerPage, kTornWord);
    } else {
      ++r.pages_reverted;
      content.restore_page(e.lpn, e.old);
    }
  }
  // What stayed, for the lies: retired entries and those kept, newest last.
  std::deque<Entry> durable;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!lost[i] && ftl_.unit_done(entries_[i].seq) <= t) durable.push_back(entries_[i]);
  durable.insert(durable.begin(), recent_.begin(), recent_.end());
  entries_.swap(durable);
  lie(t, content, power, r);
  clear();
  return r;
}

// The lies, on what was made durable before the cut (entries_, newest last, here).
void WriteCache::lie(SimTime t, ContentStore& content, const PowerConfig& power, PowerLossReport& r) {
  const uint64_t pages = content.sectors() / ContentStore::kSectorsPerPage;
  if (power.bit_errors_ns) {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (ftl_.unit_done(it->seq) + power.bit_errors_ns < t) break;
      ContentStore::PageWords w = content.page(it->lpn);
      bool hit = false;
      for (uint32_t& x : w)
        if (x >= 1 && x <= kMaxUserWord) x |= kDamagedBit, hit = true;
      if (hit) content.restore_page(it->lpn, w), ++r.pages_damaged;
    }
  }
  uint32_t n = 0;
  for (auto it = entries_.rbegin(); it != entries_.rend() && n < power.misdirected_pages; ++it, ++n) {
    // It was written one page on: that page holds it, its own page what it held before.
    if (it->lpn + 1 >= pages) continue;
    content.restore_page(it->lpn + 1, content.page(it->lpn));
    content.restore_page(it->lpn, it->old);
    ++r.pages_misdirected;
  }
  if (power.loses_map_segment && !entries_.empty()) {
    constexpr uint64_t kSegmentPages = 1024;  // 4 MiB of LBAs a mapping page covers
    uint64_t first = entries_.back().lpn / kSegmentPages * kSegmentPages;
    uint64_t last = std::min(pages, first + kSegmentPages);
    content.fill(first * ContentStore::kSectorsPerPage, (last - first) * ContentStore::kSectorsPerPage, kZeroWord);
    r.pages_unmapped += last - first;
  }
}

}  // namespace fisrig::drive
