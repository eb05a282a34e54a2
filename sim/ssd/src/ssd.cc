// The SSD's side of every command: pages read and written through the buffer into the
// FTL, deallocation, erase, idle work and power.
#include "fisrig/ssd/ssd.h"

#include "fisrig/ssd/mix64.h"

namespace fisrig::drive {

Ssd::Ssd(DriveConfig config)
    : cfg_(std::move(config)),
      nand_(cfg_.nand, cfg_.timing, cfg_.faults.seed),
      pages_((cfg_.user_sectors + 7) / 8),
      content_(cfg_.user_sectors, pages_),
      cache_enabled_(cfg_.cache.enabled) {
  cfg_.validate();
  ftl_ = std::make_unique<Ftl>(cfg_, nand_, pages_);
  cache_ = std::make_unique<WriteCache>(std::max<uint64_t>(1, cfg_.cache.bytes / 4096), *ftl_);
  // The lies about what was made durable just before a cut need those pages: the last
  // 4,096 (16 MiB) cover a bit_errors_ms of a few ms at the tiny drive's write rate.
  const PowerConfig& pw = cfg_.power;
  if (pw.misdirected_pages || pw.bit_errors_ns || pw.loses_map_segment)
    cache_->keep_recent(std::max<size_t>(pw.misdirected_pages, 4096));
}

void Ssd::idle_until(SimTime t) {
  if (!powered_ || hung_ || t <= last_activity_) return;
  if (cache_->used() && t - last_host_write_ >= cfg_.cache.idle_flush_ns &&
      ftl_->unit_done(ftl_->next_unit_seq()) == kNever)
    ftl_->program_open_unit(std::max(last_host_write_ + cfg_.cache.idle_flush_ns, last_activity_));
  if (t - last_activity_ > cfg_.gc.background_idle_ns) ftl_->idle(last_activity_, t);
  cache_->retire(t);
}

uint64_t Ssd::first_unreadable(uint64_t lba, uint32_t n) const {
  uint64_t bad = first_hit(cfg_.faults.unc, lba, n);
  for (uint64_t lpn = lba / kSectorsPerPage; lpn * kSectorsPerPage < bad; ++lpn) {
    uint32_t w;
    if (content_.page_is_uniform(lpn, &w) && w != kTornWord) continue;
    for (uint64_t s = std::max(lba, lpn * kSectorsPerPage);
         s < std::min(bad, (lpn + 1) * kSectorsPerPage); ++s)
      if (content_.word(s) == kTornWord) {
        bad = s;
        break;
      }
  }
  return bad;
}

void Ssd::read_pages(uint64_t lba, uint64_t end, SimTime t, std::vector<SimTime>& ready) {
  uint64_t first_lpn = lba / kSectorsPerPage;
  uint64_t pages = end > lba ? (end - 1) / kSectorsPerPage - first_lpn + 1 : 0;
  ready.resize(pages);
  Ftl::ReadBatch batch;
  SimTime ctrl = std::max(t, cpu_free_);
  for (uint64_t i = 0; i < pages; ++i) {
    uint32_t reads = batch.nand_reads;
    SimTime d = ftl_->read(first_lpn + i, t, batch);
    if (batch.nand_reads != reads) ctrl += cfg_.controller.page_read_overhead_ns * (batch.nand_reads - reads);
    ready[i] = std::max(d, ctrl);
  }
  if (batch.nand_reads) cpu_free_ = std::max(cpu_free_, ctrl);
}

void Ssd::read_content(uint64_t lba, uint64_t end, const ReadSink& sink) const {
  if (sink.words)
    for (uint64_t s = lba; s < end; ++s) sink.words[s - lba] = content_.word(s);
  if (sink.bytes)
    for (uint64_t s = lba; s < end; ++s) content_.read_bytes(s, sink.bytes + (s - lba) * kSectorBytes);
}

SsdWrite Ssd::begin_write(const WritePayload& pl, uint64_t lba, bool fua) const {
  uint32_t slots = ftl_->slots_for(pl.kind == WritePayload::Kind::kZeros     ? 0
                                   : pl.kind == WritePayload::Kind::kLiteral ? 100
                                                                             : pl.compress_pct);
  SsdWrite w;
  w.payload = &pl;
  w.lba = lba;
  w.through = fua || !cache_enabled_;
  w.slots = slots;
  return w;
}

void Ssd::write_page(SsdWrite& w, uint64_t lpn, uint64_t a, uint64_t b, SimTime t) {
  const WritePayload& pl = *w.payload;
  ContentStore::PageWords old = content_.page(lpn);
  switch (pl.kind) {
    case WritePayload::Kind::kZeros: content_.fill(a, b - a, kZeroWord); break;
    case WritePayload::Kind::kWord: content_.fill(a, b - a, pl.word); break;
    case WritePayload::Kind::kLiteral:
      for (uint64_t x = a; x < b; ++x) content_.write_literal(x, pl.bytes + (x - w.lba) * kSectorBytes);
      break;
  }
  SimTime t_ready = t;
  bool partial = b - a < kSectorsPerPage;
  if (partial && ftl_->mapped(lpn)) t_ready = std::max(t_ready, ftl_->read(lpn, t, w.rmw));
  uint64_t seq = ftl_->write(lpn, w.slots, t_ready);
  cache_->push(lpn, seq, old, w.through, t);
  w.first_seq = std::min(w.first_seq, seq);
  w.last_seq = std::max(w.last_seq, seq);
}

SimTime Ssd::end_write(const SsdWrite& w, uint32_t sectors, SimTime t) {
  last_host_write_ = t;
  stats_.sectors_written += sectors;
  if (!w.through) return t;
  // Write-through: status only once the data is on NAND.
  if (ftl_->unit_done(w.last_seq) == kNever) ftl_->program_open_unit(t);
  SimTime done = t;
  for (uint64_t q = w.first_seq; q <= w.last_seq; ++q) done = std::max(done, ftl_->unit_done(q));
  return done;
}

void Ssd::deallocate(uint64_t lba, uint64_t n) {
  // controller.trim_keeps_mapped_pct: such a page reads zeros but stays in the mapping,
  // so reading it still costs its (perhaps fragmented) NAND reads and GC still moves it.
  const uint64_t keep = uint64_t(cfg_.controller.trim_keeps_mapped_pct * 100);  // per 10,000
  auto unmap = [&](uint64_t p) {
    // A fixed draw per page: which pages a broken TRIM leaves mapped does not change from one
    // TRIM to the next, as the review found ("running TRIM again didn't yield any improvement").
    if (keep && mix64(p) % 10000 < keep) return;
    ftl_->trim(p);
  };
  content_.fill(lba, n, kZeroWord);
  // Whole pages leave the mapping; a partial page only reads zeros where trimmed.
  uint64_t first = (lba + kSectorsPerPage - 1) / kSectorsPerPage;
  uint64_t last = (lba + n) / kSectorsPerPage;
  for (uint64_t p = first; p < last; ++p) unmap(p);
  // A page cut by a range edge goes too once nothing in it reads other than zeros
  // (ranges of 65535 sectors leave such a page at every boundary).
  for (uint64_t p : {lba / kSectorsPerPage, (lba + n - 1) / kSectorsPerPage}) {
    uint32_t w;
    if (content_.page_is_uniform(p, &w) && w == kZeroWord) unmap(p);
  }
  stats_.sectors_trimmed += n;
}

SimTime Ssd::erase_all(SimTime t) {
  content_.clear();
  cache_->clear();
  t = std::max(t, ftl_->erase_all(t));
  cpu_free_ = std::max(cpu_free_, t);
  last_activity_ = std::max(last_activity_, t);
  return t;
}

void Ssd::power_off(SimTime t) {
  // With power-loss protection the buffer drains on the capacitors' energy: the cut takes
  // effect once it is on NAND, and finds nothing to revert or tear.
  const SimTime lost_at = cfg_.power.plp ? std::max(t, cache_->drain(t)) : t;
  stats_.last_power_loss = cache_->power_loss(lost_at, content_, cfg_.power, t);
  nand_.reset_time(t);
  cpu_free_ = std::min(cpu_free_, t);
  powered_ = false;
  hung_ = false;
  last_activity_ = std::min(last_activity_, t);
  ++stats_.power_cycles;
  powered_ns_ += t - std::min(t, powered_since_);
}

SimTime Ssd::power_on(SimTime t) {
  powered_ = true;
  powered_since_ = t;
  cache_enabled_ = cfg_.cache.enabled;
  SimTime ready = t + (cfg_.faults.boot_ns != kNever ? cfg_.faults.boot_ns : cfg_.power.boot_ns);
  if (cfg_.power.shrinks_to_8mib_after_cycles && stats_.power_cycles >= cfg_.power.shrinks_to_8mib_after_cycles)
    visible_sectors_ = std::min<uint64_t>(cfg_.user_sectors, 8 * 1048576 / kSectorBytes);
  // A drive the cuts killed never comes ready again: it answers nothing.
  if (cfg_.power.dies_after_cycles && stats_.power_cycles >= cfg_.power.dies_after_cycles) {
    ready = kNever;
    hung_ = true;
  }
  last_activity_ = std::max(last_activity_, ready);
  return ready;
}

double Ssd::current_ma(SimTime t) {
  if (!tracking_current_) {
    nand_.keep_activity(true);
    tracking_current_ = true;
  }
  // A power_on at a later time (staged rails: the pins it needs come on then) has not yet
  // given it power at t.
  if (!powered_ || t < powered_since_) return 0;
  const PowerConfig& p = cfg_.power;
  return p.idle_ma + nand_.draw_ma(t, {p.read_ma, p.program_ma, p.erase_ma, p.gc_ma});
}

}  // namespace fisrig::drive
