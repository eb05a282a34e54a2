// The simulated SSD behind its protocol: NAND, FTL, the volatile write buffer, the content
// it holds, its power and the controller's firmware time. A protocol front end (sim/sata's
// Drive) turns its commands into these calls and books its own wire around them: the SSD
// says when data is ready, when room frees up and when a write is durable. Every time is
// on the drive's clock (ns).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "fisrig/ssd/config.h"
#include "fisrig/ssd/content.h"
#include "fisrig/ssd/content_store.h"
#include "fisrig/ssd/ftl.h"
#include "fisrig/ssd/nand.h"
#include "fisrig/ssd/page_table.h"
#include "fisrig/ssd/write_cache.h"

namespace fisrig::drive {

// What the host moved through the SSD and what its power did, whatever the protocol.
struct SsdStats {
  uint64_t sectors_read = 0;
  uint64_t sectors_written = 0;
  uint64_t sectors_trimmed = 0;
  uint64_t power_cycles = 0;  // rails cut while on (power_off)
  PowerLossReport last_power_loss;
};

// One host write while its data arrives (begin_write, write_page, end_write).
struct SsdWrite {
  const WritePayload* payload = nullptr;
  uint64_t lba = 0;      // its first sector: literal bytes are taken from here on
  bool through = false;  // FUA or the cache off: acknowledged only once on NAND
  uint32_t slots = 0;    // what a page takes on NAND after compression (Ftl::slots_for)
  uint64_t first_seq = kNever, last_seq = 0;  // the FTL's host units it landed in
  Ftl::ReadBatch rmw;  // reads of partly written pages (read-modify-write)
};

class Ssd {
 public:
  static constexpr uint32_t kSectorsPerPage = ContentStore::kSectorsPerPage;

  // Checks the profile (ProfileError) and builds the media, mapping and buffer.
  explicit Ssd(DriveConfig config);

  const DriveConfig& config() const { return cfg_; }
  FaultKnobs& faults() { return cfg_.faults; }
  const SsdStats& stats() const { return stats_; }
  uint64_t user_sectors() const { return cfg_.user_sectors; }
  // What it says it holds now: user_sectors, unless a power fault shrank it
  // (PowerConfig::shrinks_to_8mib_after_cycles).
  uint64_t visible_sectors() const { return visible_sectors_; }

  // The controller's one CPU: `work` ns of firmware from t or once it is free; returns
  // when done. Commands of any protocol share it.
  SimTime run_firmware(SimTime t, SimTime work) { return cpu_free_ = std::max(t, cpu_free_) + work; }
  // A command reached the controller at t: the buffer forgets what is durable by then and
  // idle work (background GC, idle flush) runs up to t.
  void arrive(SimTime t) {
    cache_->retire(t);
    idle_until(t);
  }
  // Lets idle time pass up to t (background GC, idle flush); nothing while off or hung.
  void idle_until(SimTime t);
  // The host's commands keep the SSD busy until t (idle work starts after it).
  void busy_until(SimTime t) { last_activity_ = std::max(last_activity_, t); }
  // Every time kept for a later decision, moved as a front end moved its wire (mv(t)).
  template <class Mover>
  void retime(const Mover& mv) {
    mv(last_activity_);
    mv(last_host_write_);
  }

  // Reads. The first sector of [lba, lba+n) that reads back unrecoverable (a UNC fault
  // range, or a program torn by power loss), lba+n if none.
  uint64_t first_unreadable(uint64_t lba, uint32_t n) const;
  // When each page of [lba, end) is in the controller, read from t (ready[i]: page
  // lba / 8 + i); every NAND read costs the CPU controller.page_read_overhead.
  void read_pages(uint64_t lba, uint64_t end, SimTime t, std::vector<SimTime>& ready);
  // The content of [lba, end) into the sink (words, bytes or both).
  void read_content(uint64_t lba, uint64_t end, const ReadSink& sink) const;
  void count_read(uint64_t sectors) { stats_.sectors_read += sectors; }
  // Starts loading the mapping of `lba`, for a host that overlaps the memory latency of
  // commands queued up. Changes nothing.
  void prefetch_lba(uint64_t lba) const {
    lba &= 0xFFFFFFFFFFFFull;
    if (lba < cfg_.user_sectors) pages_.prefetch(lba / kSectorsPerPage);  // mapping and content share the line
  }

  // Writes. Waits (in simulated time) until `pages` pages have room in the buffer.
  SimTime admit(SimTime t, uint64_t pages = 1) { return cache_->admit(t, pages); }
  SsdWrite begin_write(const WritePayload& payload, uint64_t lba, bool fua) const;
  // Page `lpn`'s sectors [a, b) of the write have arrived at t: into the content, the FTL
  // (reading the rest of a partly written page first) and the buffer.
  void write_page(SsdWrite& w, uint64_t lpn, uint64_t a, uint64_t b, SimTime t);
  // The write's data stopped at t (a CRC error): what arrived stays written.
  void abort_write(SimTime t) { last_host_write_ = t; }
  // All its `sectors` arrived by t: when its status may go (t; a write-through one's once
  // its pages are on NAND).
  SimTime end_write(const SsdWrite& w, uint32_t sectors, SimTime t);

  // [lba, lba+n) reads zeros from now; whole pages leave the mapping, but for the
  // controller.trim_keeps_mapped_pct of them a broken TRIM keeps.
  void deallocate(uint64_t lba, uint64_t n);
  // FLUSH: when everything buffered is durable (at once on a drive whose flush lies).
  SimTime flush(SimTime t) { return cfg_.cache.flush_honest ? std::max(t, cache_->drain(t)) : t; }
  // Every block erased and every sector reads zeros (secure erase, sanitize): when done.
  SimTime erase_all(SimTime t);

  bool write_cache_enabled() const { return cache_enabled_; }
  void enable_write_cache() { cache_enabled_ = true; }
  // Drains the buffer first, as a real drive does: when it is off.
  SimTime disable_write_cache(SimTime t) {
    t = std::max(t, cache_->drain(t));
    cache_enabled_ = false;
    return t;
  }

  // Power. Rails off at t: the volatile buffer is lost (the profile's lies with it).
  void power_off(SimTime t);
  // Rails on at t: when it is ready (the profile's boot, or FaultKnobs::boot_ns), kNever
  // if the cuts killed it (PowerConfig::dies_after_cycles: it is hung then).
  SimTime power_on(SimTime t);
  bool powered() const { return powered_; }
  // The firmware stopped answering (FaultKnobs::hang_after_commands, or a dead drive);
  // a reset or a power cut ends it.
  bool hung() const { return hung_; }
  void set_hung(bool hung) { hung_ = hung; }
  // Time powered on up to `now` (SMART's power-on hours).
  SimTime powered_ns(SimTime now) const {
    return powered_ns_ + (powered_ && now > powered_since_ ? now - powered_since_ : 0);
  }
  // What the drive draws from its supply at t, in mA (its profile's power.*_ma): 0 without
  // power; idle_ma and, per die, the NAND operation it runs at t (GC's at gc_ma). Asked
  // at times that never go back, after the SSD has been told of everything before t
  // (idle_until(t)): as a power module samples it. Tracking starts at the first call
  // (the NAND operations before it are not kept). 0 before a power_on's time too.
  double current_ma(SimTime t);
  // What the rig's current sense reads at t (the model's sampler, sim/device's current
  // pins): idle time up to t first, then current_ma in whole mA, at most 65,535
  // (engine_if.h's 16-bit samples).
  uint16_t sensed_ma(SimTime t) {
    idle_until(t);
    double ma = current_ma(t);
    return uint16_t(ma >= 65535 ? 65535 : ma + 0.5);
  }

  // The parts, for tests and tools that look inside.
  const Ftl& ftl() const { return *ftl_; }
  Ftl& ftl() { return *ftl_; }
  const NandBackend& nand() const { return nand_; }
  const ContentStore& content() const { return content_; }
  const WriteCache& cache() const { return *cache_; }

 private:
  DriveConfig cfg_;
  NandBackend nand_;
  PageTable pages_;  // before the FTL and the content store, which share it
  std::unique_ptr<Ftl> ftl_;
  std::unique_ptr<WriteCache> cache_;
  ContentStore content_;
  SsdStats stats_;

  bool powered_ = true;
  bool hung_ = false;
  bool cache_enabled_;
  bool tracking_current_ = false;
  SimTime powered_ns_ = 0;  // power-on time of the periods before the current one
  SimTime powered_since_ = 0;
  SimTime cpu_free_ = 0;
  SimTime last_activity_ = 0;
  SimTime last_host_write_ = 0;
  uint64_t visible_sectors_ = cfg_.user_sectors;
};

}  // namespace fisrig::drive
