#include "fisrig/ssd/ftl.h"


#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fisrig::drive {

namespace {
constexpr uint32_t kLogicalPageBytes = 4096;
uint64_t pow2_at_least(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
}  // namespace

Ftl::Ftl(const DriveConfig& config, NandBackend& nand, PageTable& table)
    : nand_(nand),
      gc_(config.gc),
      dies_(config.nand.dies()),
      l2p_(table) {
  const NandGeometry& g = config.nand;
  slot_bytes_ = config.controller.compression ? config.controller.compression_slot_bytes
                                              : kLogicalPageBytes;
  slots_per_lpn_ = kLogicalPageBytes / slot_bytes_;
  unit_slots_ = g.planes_per_die * g.page_bytes / slot_bytes_;
  slots_per_sb_ = dies_ * g.pages_per_block * unit_slots_;
  superblocks_ = g.blocks_per_plane;
  bg_target_free_ = std::max<uint32_t>(
      gc_.foreground_free_superblocks + 1,
      uint32_t(std::ceil(superblocks_ * gc_.background_target_free_pct / 100.0)));

  uint64_t lpns = (config.user_sectors + 7) / 8;
  if (slots_per_lpn_ > 1) lpn_slots_.assign(lpns, 0);
  p2l_.assign(uint64_t{slots_per_sb_} * superblocks_, kNone);
  sb_valid_.assign(superblocks_, 0);
  sb_state_.assign(superblocks_, SbState::kFree);
  sb_capacity_.assign(superblocks_, slots_per_sb_);
  bucket_next_.assign(superblocks_, -1);
  bucket_prev_.assign(superblocks_, -1);
  bucket_head_.assign(slots_per_sb_ + 1, -1);
  for (uint32_t sb = 0; sb < superblocks_; ++sb) free_.push_back(sb);
  if (config.cache.slc_gb > 0) {
    // A superblock in SLC mode holds a bit a cell: whole units of it.
    slc_slots_ = slots_per_sb_ / config.timing.bits_per_cell / unit_slots_ * unit_slots_;
    double per_sb = double(slc_slots_) * slot_bytes_;
    slc_budget_ = std::min<uint32_t>(superblocks_, uint32_t(std::ceil(config.cache.slc_gb * 1e9 / per_sb)));
  }

  uint64_t cache_units = config.cache.bytes / (uint64_t{unit_slots_} * slot_bytes_) + 1;
  uint64_t ring = pow2_at_least(std::max<uint64_t>(4 * cache_units + 64, 1024));
  unit_done_ring_.assign(ring, 0);
  unit_start_ring_.assign(ring, 0);
  ring_mask_ = ring - 1;
  host_.host = true;
}

uint32_t Ftl::slots_for(uint8_t compress_pct) const {
  if (slots_per_lpn_ == 1) return 1;
  uint32_t pct = std::min<uint32_t>(compress_pct, 100);
  return std::max<uint32_t>(1, (pct * slots_per_lpn_ + 99) / 100);
}

// ---- greedy victim buckets: one list per valid count ----

void Ftl::bucket_insert(uint32_t sb) {
  uint32_t v = sb_valid_[sb];
  bucket_prev_[sb] = -1;
  bucket_next_[sb] = bucket_head_[v];
  if (bucket_head_[v] >= 0) bucket_prev_[bucket_head_[v]] = int32_t(sb);
  bucket_head_[v] = int32_t(sb);
  bucket_min_hint_ = std::min(bucket_min_hint_, v);
}

void Ftl::bucket_remove(uint32_t sb) {
  uint32_t v = sb_valid_[sb];
  if (bucket_prev_[sb] >= 0) bucket_next_[bucket_prev_[sb]] = bucket_next_[sb];
  else bucket_head_[v] = bucket_next_[sb];
  if (bucket_next_[sb] >= 0) bucket_prev_[bucket_next_[sb]] = bucket_prev_[sb];
  bucket_next_[sb] = bucket_prev_[sb] = -1;
}

void Ftl::dec_valid(uint32_t sb, uint32_t n) {
  if (sb_state_[sb] == SbState::kClosed) {
    bucket_remove(sb);
    sb_valid_[sb] -= n;
    bucket_insert(sb);
  } else {
    sb_valid_[sb] -= n;
  }
}

uint32_t Ftl::pick_victim() {
  for (uint32_t v = bucket_min_hint_; v <= slots_per_sb_; ++v) {
    if (bucket_head_[v] >= 0) {
      bucket_min_hint_ = v;
      return uint32_t(bucket_head_[v]);
    }
  }
  bucket_min_hint_ = slots_per_sb_ + 1;
  return kNone;
}

// ---- writing ----

void Ftl::invalidate(uint64_t lpn) {
  uint32_t slot = l2p_.slot(lpn);
  if (slot == kUnmapped) return;
  uint32_t n = slots_per_lpn_ == 1 ? 1 : lpn_slots_[lpn];
  dec_valid(slot / slots_per_sb_, n);
  l2p_.slot(lpn) = kUnmapped;
}

void Ftl::program_unit(Frontier& f) {
  uint32_t unit = (f.next - 1) / unit_slots_;
  NandBackend::GcScope gc(nand_, !f.host);  // a relocation unit's program is GC's
  SimTime done = nand_.program(die_of_unit(unit), unit_slots_ * slot_bytes_, f.unit_ready, page_of_unit(unit), f.sb,
                               f.cap != slots_per_sb_);
  if (f.host) {
    unit_done_ring_[f.unit_seq & ring_mask_] = done;
    unit_start_ring_[f.unit_seq & ring_mask_] = done - nand_.last_program_ns();
    ++f.unit_seq;
  }
  f.unit_ready = 0;
}

void Ftl::pad_unit(Frontier& f) {
  uint32_t in_unit = f.next % unit_slots_;
  if (f.sb == kNone || in_unit == 0) return;
  uint32_t pad = unit_slots_ - in_unit;
  f.next += pad;  // p2l stays kNone: padding is never valid
  counters_.pad_slots += pad;
  program_unit(f);
}

void Ftl::close(Frontier& f, SimTime t) {
  if (f.sb == kNone) return;
  if (f.next % unit_slots_) {
    f.unit_ready = std::max(f.unit_ready, t);
    pad_unit(f);
  }
  counters_.pad_slots += f.cap - f.next;  // unused tail (only when a page can't fit)
  sb_state_[f.sb] = SbState::kClosed;
  bucket_insert(f.sb);
  f.sb = kNone;
}

void Ftl::make_room(Frontier& f, uint32_t slots, SimTime t) {
  if (f.sb != kNone && f.next + slots <= f.cap) return;
  close(f, t);
  if (f.host) {
    // Foreground GC: the host waits while the free pool is at its floor.
    while (free_.size() <= gc_.foreground_free_superblocks)
      if (!collect_one(t, false)) break;
  }
  if (free_.empty()) {
    // The floor keeps GC's own frontier supplied; reaching here is a bug, not a full drive.
    throw std::logic_error("FTL: no free superblock (GC floor too low)");
  }
  f.sb = free_.front();
  free_.pop_front();
  sb_state_[f.sb] = SbState::kOpen;
  // The SLC cache while it has room, and while the free pool is deeper than GC's floor
  // plus one: a drive nearly full writes its native cells.
  if (f.host && slc_in_use_ < slc_budget_ && free_.size() > gc_.foreground_free_superblocks + 1) {
    set_slc(f.sb, true);
    ++slc_in_use_;
  }
  f.cap = capacity(f.sb);
  f.next = 0;
  f.sb_first_seq = f.unit_seq;
}

void Ftl::place(Frontier& f, uint64_t lpn, uint32_t slots, SimTime t_ready) {
  make_room(f, slots, t_ready);
  uint32_t base = f.sb * slots_per_sb_;
  l2p_.slot(lpn) = base + f.next;
  if (slots_per_lpn_ > 1) lpn_slots_[lpn] = uint8_t(slots);
  sb_valid_[f.sb] += slots;
  for (uint32_t j = 0; j < slots; ++j) {
    p2l_[base + f.next] = j == 0 ? uint32_t(lpn) : kNone;
    ++f.next;
    f.unit_ready = std::max(f.unit_ready, t_ready);
    if (f.next % unit_slots_ == 0) program_unit(f);
  }
}

uint64_t Ftl::write(uint64_t lpn, uint32_t slots, SimTime t_ready) {
  invalidate(lpn);
  place(host_, lpn, slots, t_ready);
  counters_.host_slots += slots;
  // The page is in the unit being filled, or the one just programmed if it completed it.
  return host_.next % unit_slots_ == 0 ? host_.unit_seq - 1 : host_.unit_seq;
}

void Ftl::trim(uint64_t lpn) { invalidate(lpn); }

void Ftl::program_open_unit(SimTime t) {
  if (host_.sb == kNone || host_.next % unit_slots_ == 0) return;
  host_.unit_ready = std::max(host_.unit_ready, t);
  pad_unit(host_);
  if (host_.next >= host_.cap) close(host_, t);
}

SimTime Ftl::unit_done(uint64_t seq) const {
  if (seq >= host_.unit_seq) return kNever;
  if (host_.unit_seq - seq > ring_mask_) return 0;  // long since durable
  return unit_done_ring_[seq & ring_mask_];
}

SimTime Ftl::unit_program_start(uint64_t seq) const {
  if (seq >= host_.unit_seq) return kNever;
  if (host_.unit_seq - seq > ring_mask_) return 0;
  return unit_start_ring_[seq & ring_mask_];
}

// ---- reading ----

SimTime Ftl::read(uint64_t lpn, SimTime t, ReadBatch& batch) {
  uint32_t slot = l2p_.slot(lpn);
  if (slot == kUnmapped) return t;  // trimmed or never written: zeros, no NAND access
  uint32_t sb = slot / slots_per_sb_;
  uint32_t idx = slot % slots_per_sb_;
  uint32_t unit = idx / unit_slots_;
  // Data still in the controller's buffer: the unit being filled, or not yet durable.
  for (const Frontier* f : {&host_, &gcf_}) {
    if (f->sb != sb) continue;
    if (unit == f->next / unit_slots_ && f->next % unit_slots_) return t;
    if (f->host) {
      SimTime done = unit_done(f->sb_first_seq + unit);
      if (done > t) return t;
    }
  }
  uint32_t n = slots_per_lpn_ == 1 ? 1 : lpn_slots_[lpn];
  uint64_t first_unit = uint64_t(slot) / unit_slots_;
  uint64_t last_unit = (uint64_t(slot) + n - 1) / unit_slots_;
  SimTime done = t;
  for (uint64_t u = first_unit; u <= last_unit; ++u) {
    if (u == batch.last_unit) {
      done = std::max(done, batch.last_done);
      continue;
    }
    uint32_t in_sb = uint32_t(u % (slots_per_sb_ / unit_slots_));
    SimTime d = nand_.read(die_of_unit(in_sb), n * slot_bytes_, t, page_of_unit(in_sb), sb, slc(sb));
    ++batch.nand_reads;
    batch.last_unit = u;
    batch.last_done = d;
    done = std::max(done, d);
  }
  return done;
}

// ---- garbage collection ----

bool Ftl::collect_one(SimTime t, bool background) {
  uint32_t victim = pick_victim();
  if (victim == kNone || sb_valid_[victim] >= slots_per_sb_) return false;
  collect(victim, t, background);
  return true;
}

void Ftl::collect(uint32_t victim, SimTime t, bool background) {
  NandBackend::GcScope gc(nand_);
  const bool victim_slc = slc(victim);
  bucket_remove(victim);
  sb_state_[victim] = SbState::kOpen;  // out of the buckets while it is emptied
  uint32_t base = victim * slots_per_sb_;
  const uint32_t units = slots_per_sb_ / unit_slots_;
  // Every page with valid data is read first, then relocated: issuing a program between
  // reads would queue later reads behind 1 ms programs and chain the dies together.
  gc_read_done_.assign(units, 0);
  gc_valid_.clear();
  constexpr uint32_t kAhead = 64;  // mapping lookups are cache misses: overlap them
  for (uint32_t i = 0; i < slots_per_sb_; ++i) {
    if (i + kAhead < slots_per_sb_) {
      uint32_t ahead = p2l_[base + i + kAhead];
      if (ahead != kNone) l2p_.prefetch(ahead);
    }
    uint32_t lpn = p2l_[base + i];
    if (lpn == kNone || l2p_.slot(lpn) != base + i) continue;
    gc_valid_.push_back(i);
    uint32_t u = i / unit_slots_;
    if (!gc_read_done_[u])
      gc_read_done_[u] = nand_.read(die_of_unit(u), unit_slots_ * slot_bytes_, t, page_of_unit(u), victim, victim_slc);
  }
  for (size_t k = 0; k < gc_valid_.size(); ++k) {
    if (k + kAhead < gc_valid_.size()) l2p_.prefetch(p2l_[base + gc_valid_[k + kAhead]]);
    uint32_t i = gc_valid_[k];
    uint32_t lpn = p2l_[base + i];
    uint32_t n = slots_per_lpn_ == 1 ? 1 : lpn_slots_[lpn];
    sb_valid_[victim] -= n;
    l2p_.slot(lpn) = kUnmapped;
    place(gcf_, lpn, n, gc_read_done_[i / unit_slots_]);
    counters_.gc_slots += n;
  }
  if (gc_.serial_erase && !background) nand_.erase_serially(t, victim);
  else for (uint32_t d = 0; d < dies_; ++d) nand_.erase(d, t, victim);
  std::fill(p2l_.begin() + base, p2l_.begin() + base + slots_per_sb_, kNone);
  sb_valid_[victim] = 0;
  sb_state_[victim] = SbState::kFree;
  if (victim_slc) set_slc(victim, false), --slc_in_use_;
  free_.push_back(victim);
  ++counters_.gc_victims;
  ++counters_.superblock_erases;
  if (background) ++counters_.background_victims;
}

void Ftl::idle(SimTime from, SimTime until) {
  if (until <= from) return;
  SimTime step = std::max(from + gc_.background_idle_ns, nand_.all_idle_at());
  // The SLC cache folds into native cells first, whatever the free pool: the closed SLC
  // superblocks relocated one by one while the idle time lasts.
  for (uint32_t sb = 0; slc_in_use_ && sb < superblocks_ && step < until; ++sb)
    if (slc(sb) && sb_state_[sb] == SbState::kClosed) {
      collect(sb, step, true);
      step = nand_.all_idle_at();
    }
  if (free_.size() >= bg_target_free_) return;
  uint32_t max_valid = uint32_t(slots_per_sb_ * gc_.background_max_valid_pct / 100.0);
  while (step < until && free_.size() < bg_target_free_) {
    uint32_t victim = pick_victim();
    if (victim == kNone || sb_valid_[victim] > max_valid) break;
    collect_one(step, true);
    step = nand_.all_idle_at();
  }
}

SimTime Ftl::erase_all(SimTime t) {
  l2p_.unmap_all();
  std::fill(p2l_.begin(), p2l_.end(), kNone);
  std::fill(sb_valid_.begin(), sb_valid_.end(), 0);
  std::fill(sb_state_.begin(), sb_state_.end(), SbState::kFree);
  std::fill(bucket_head_.begin(), bucket_head_.end(), -1);
  std::fill(bucket_next_.begin(), bucket_next_.end(), -1);
  std::fill(bucket_prev_.begin(), bucket_prev_.end(), -1);
  bucket_min_hint_ = 0;
  free_.clear();
  for (uint32_t sb = 0; sb < superblocks_; ++sb) free_.push_back(sb);
  std::fill(sb_capacity_.begin(), sb_capacity_.end(), slots_per_sb_);
  slc_in_use_ = 0;
  host_.sb = gcf_.sb = kNone;
  host_.next = gcf_.next = 0;
  host_.unit_ready = gcf_.unit_ready = 0;
  SimTime done = t;
  for (uint32_t sb = 0; sb < superblocks_; ++sb)
    for (uint32_t d = 0; d < dies_; ++d) done = std::max(done, nand_.erase(d, t, sb));
  counters_.superblock_erases += superblocks_;
  return done;
}

bool Ftl::maps_agree() const {
  std::vector<uint32_t> valid(superblocks_, 0);
  for (uint64_t lpn = 0; lpn < l2p_.size(); ++lpn) {
    uint32_t slot = l2p_.slot(lpn);
    if (slot == kUnmapped) continue;
    if (slot >= p2l_.size() || p2l_[slot] != lpn) return false;
    valid[slot / slots_per_sb_] += slots_per_lpn_ == 1 ? 1 : lpn_slots_[lpn];
  }
  return valid == sb_valid_;
}

uint64_t Ftl::valid_slots() const {
  uint64_t v = 0;
  for (uint32_t x : sb_valid_) v += x;
  return v;
}

}  // namespace fisrig::drive
