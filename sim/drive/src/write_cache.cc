#include "fisrig/drive/write_cache.h"

#include <algorithm>

namespace fisrig::drive {

void WriteCache::retire(SimTime t) {
  while (!entries_.empty() && ftl_.unit_done(entries_.front().seq) <= t) {
    entries_.pop_front();
    if (free_head_) --free_head_;
  }
}

SimTime WriteCache::admit(SimTime t) {
  while (free_head_ < entries_.size() && ftl_.unit_done(entries_[free_head_].seq) <= t) ++free_head_;
  SimTime when = t;
  while (used() >= capacity_) {
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

void WriteCache::push(uint64_t lpn, uint64_t seq, const ContentStore::PageWords& old) {
  entries_.push_back(Entry{lpn, seq, old});
}

SimTime WriteCache::drain(SimTime t) {
  if (entries_.empty()) return t;
  if (ftl_.unit_done(entries_.back().seq) == kNever) ftl_.program_open_unit(t);
  SimTime done = t;
  for (const Entry& e : entries_) done = std::max(done, ftl_.unit_done(e.seq));
  return done;
}

PowerLossReport WriteCache::power_loss(SimTime t, ContentStore& content, bool torn_reads_unc) {
  PowerLossReport r;
  // Newest first, so a page written twice ends with what it held before both.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    SimTime done = ftl_.unit_done(it->seq);
    if (done <= t) continue;
    SimTime start = ftl_.unit_program_start(it->seq);
    if (torn_reads_unc && done != kNever && start <= t) {
      ++r.pages_torn;
      content.fill(it->lpn * ContentStore::kSectorsPerPage, ContentStore::kSectorsPerPage,
                   kTornWord);
    } else {
      ++r.pages_reverted;
      content.restore_page(it->lpn, it->old);
    }
  }
  clear();
  return r;
}

}  // namespace fisrig::drive
