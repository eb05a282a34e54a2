// The non-read/write commands: DSM TRIM, FLUSH, IDENTIFY, READ LOG EXT, SET FEATURES,
// SECURITY ERASE, SANITIZE BLOCK ERASE and SMART.
#include <algorithm>
#include <cstring>

#include "drive_ctx.h"
#include "mix64.h"

namespace fisrig::drive {

namespace {
constexpr uint32_t kSectorsPerPage = ContentStore::kSectorsPerPage;

}

void Drive::do_dsm(Ctx& c, uint32_t blocks, bool trim) {
  const AtaCommand& cmd = c.cmd;
  if (!trim || blocks > cfg_.identity.dsm_max_blocks) return fail(c, ata::kErrorAbrt, 0);
  uint32_t bytes = blocks * ata::kSectorBytes;

  // The range list arrives as data-out (or has arrived, over the device side's wire).
  if (cmd.data_phase_done) {
    c.c.t_data_start = c.c.t_data_end = c.t;
  } else {
    SimTime go = c.queued ? send_queued_setup(c.t, bytes) : send_fis(c.t, fis_dwords::kDmaActivate);
    c.c.t_data_start = go;
    // The host's protocol sends no data: none comes, as for a write (do_write).
    if (cmd.host_sends_no_data) return fail(c, ata::kErrorAbrt, 0);
    // A queued DSM's DMA Setup is followed by a DMA Activate, as for a queued write
    // (drive_rw.cc) and as the device side sends it: without it the model's queued TRIM
    // sent its range list 18 ticks before the gateware's (targets-agree).
    if (c.queued) go = send_fis(go, fis_dwords::kDmaActivate);
    c.c.t_data_end = link_.reserve(go + host_turnaround_, link_.data_ns(bytes));
    c.c.t_data_fis = c.c.t_data_end - link_.data_ns(bytes);  // where the wire had room for it
    log_fises(c, c.c.t_data_end, bytes);
  }
  SimTime t = c.c.t_data_end;
  // A list the host did not say (no bytes given with the command) reads as nothing valid.
  if (!cmd.data_out || cmd.data_out_bytes < bytes) {
    c.t = std::max(c.t, t);
    return fail(c, ata::kErrorAbrt, 0);
  }

  // Check every entry before trimming anything: a bad list changes nothing.
  struct Range { uint64_t lba; uint32_t n; };
  std::vector<Range> ranges;
  for (uint32_t off = 0; off + 8 <= bytes; off += 8) {
    uint64_t e;
    std::memcpy(&e, cmd.data_out + off, 8);
    uint32_t n = uint32_t(e >> 48);
    uint64_t lba = e & 0xFFFFFFFFFFFFull;
    if (!n) continue;
    if (lba + n > visible_sectors_) {
      c.t = t;
      return fail(c, ata::kErrorAbrt, lba);
    }
    ranges.push_back({lba, n});
  }
  // controller.trim_keeps_mapped_pct: such a page reads zeros but stays in the mapping,
  // so reading it still costs its (perhaps fragmented) NAND reads and GC still moves it.
  const uint64_t keep = uint64_t(cfg_.controller.trim_keeps_mapped_pct * 100);  // per 10,000
  auto unmap = [&](uint64_t p) {
    // A fixed draw per page: which pages a broken TRIM leaves mapped does not change from one
    // TRIM to the next, as the review found ("running TRIM again didn't yield any improvement").
    if (keep && mix64(p) % 10000 < keep) return;
    ftl_->trim(p);
  };
  for (const Range& r : ranges) {
    content_.fill(r.lba, r.n, kZeroWord);
    // Whole pages leave the mapping; a partial page only reads zeros where trimmed.
    uint64_t first = (r.lba + kSectorsPerPage - 1) / kSectorsPerPage;
    uint64_t last = (r.lba + r.n) / kSectorsPerPage;
    for (uint64_t p = first; p < last; ++p) unmap(p);
    // A page cut by a range edge goes too once nothing in it reads other than zeros
    // (ranges of 65535 sectors leave such a page at every boundary).
    for (uint64_t p : {r.lba / kSectorsPerPage, (r.lba + r.n - 1) / kSectorsPerPage}) {
      uint32_t w;
      if (content_.page_is_uniform(p, &w) && w == kZeroWord) unmap(p);
    }
    stats_.sectors_trimmed += r.n;
    c.c.sectors += r.n;
  }
  SimTime work = cfg_.controller.trim_range_ns * ranges.size();
  c.t = cpu_free_ = std::max(t, cpu_free_) + work;
}

void Drive::do_flush(Ctx& c) {
  if (cfg_.cache.flush_honest) c.t = std::max(c.t, cache_->drain(c.t));
}

void Drive::pio_in_page(Ctx& c, const std::vector<uint8_t>& page) {
  if (c.cmd.pio_in) *c.cmd.pio_in = page;
  SimTime go = send_fis(c.t, fis_dwords::kPioSetup);
  c.c.t_data_start = go;
  c.c.t_data_end = c.t = link_.reserve(go, link_.data_ns(page.size()));
  c.c.t_data_fis = c.t - link_.data_ns(page.size());  // where the wire had room for it
  log_fises(c, c.t, page.size());
  c.c.sectors = 1;
  // PIO data-in ends with the PIO Setup's ending status: no D2H follows.
  c.c.t_complete = c.t;
}

// SECURITY SET PASSWORD and ERASE UNIT take one 512-byte block of PIO data-out (the
// password): the drive's PIO Setup, then the host's Data FIS, unless it has crossed already
// over the device side's wire. Without this the model left the block's wire time out of
// their latency (4.1 us against the gateware's 5.0 for SET PASSWORD) and said 0 sectors.
void Drive::pio_out_block(Ctx& c) {
  if (c.cmd.data_phase_done) {
    c.c.t_data_start = c.c.t_data_end = c.t;
  } else {
    SimTime go = send_fis(c.t, fis_dwords::kPioSetup);
    c.c.t_data_start = go;
    c.c.t_data_end = c.t = link_.reserve(go + host_turnaround_, link_.data_ns(ata::kSectorBytes));
    c.c.t_data_fis = c.t - link_.data_ns(ata::kSectorBytes);  // where the wire had room for it
    log_fises(c, c.t, ata::kSectorBytes);
  }
  c.c.sectors = 1;
}

void Drive::do_identify(Ctx& c) {
  auto words = identify_words();
  std::vector<uint8_t> page(512);
  std::memcpy(page.data(), words.data(), 512);
  pio_in_page(c, page);
}

std::vector<smart::Attribute> Drive::smart_attributes(SimTime now) const {
  smart::Counters n;
  n.powered_ns = powered_ns_ + (powered_ && now > powered_since_ ? now - powered_since_ : 0);
  n.power_ons = 1 + stats_.power_cycles - (powered_ ? 0 : 1);  // the first is the drive's start
  n.unexpected_power_losses = stats_.power_cycles;
  n.host_sectors_written = stats_.sectors_written;
  n.host_sectors_read = stats_.sectors_read;
  n.nand_bytes_programmed = nand_.counters().bytes_programmed;
  // A die's erase takes the block of every plane.
  n.block_erases = nand_.counters().block_erases * cfg_.nand.planes_per_die;
  n.blocks = uint64_t{cfg_.nand.dies()} * cfg_.nand.planes_per_die * cfg_.nand.blocks_per_plane;
  n.rated_pe_cycles = cfg_.nand.rated_pe_cycles;
  n.interface_crc_errors = stats_.icrc_failures;
  return smart::attributes(n);
}

void Drive::do_smart(Ctx& c) {
  const AtaCommand& cmd = c.cmd;
  if (((cmd.lba >> 8) & 0xFFFF) != smart::kKey) return fail(c, ata::kErrorAbrt, 0);
  uint8_t sub = uint8_t(cmd.features);
  if (sub == smart::kEnableOperations) {
    smart_enabled_ = true;
    return;
  }
  if (!smart_enabled_) return fail(c, ata::kErrorAbrt, 0);  // every other subcommand
  switch (sub) {
    case smart::kDisableOperations:
      smart_enabled_ = false;
      return;
    case smart::kReturnStatus: {
      bool failing = smart::threshold_exceeded(smart_attributes(c.t));
      c.c.lba = uint64_t(failing ? smart::kThresholdExceeded : smart::kKey) << 8;
      c.c.lba_is_output = true;
      return;
    }
    case smart::kReadData:
      return pio_in_page(c, smart::data_page(smart_attributes(c.t)));
    case smart::kReadThresholds:
      return pio_in_page(c, smart::thresholds_page(smart_attributes(c.t)));
    default:  // no attribute auto-save, off-line collection, self-tests or SMART logs
      return fail(c, ata::kErrorAbrt, 0);
  }
}

void Drive::do_read_log(Ctx& c) {
  const AtaCommand& cmd = c.cmd;
  uint8_t log = uint8_t(cmd.lba & 0xFF);
  uint16_t page = uint16_t((cmd.lba >> 8) & 0xFFFF);
  uint32_t pages = cmd.count;
  if (!pages) return fail(c, ata::kErrorAbrt, 0);
  std::vector<uint8_t> out;
  for (uint32_t i = 0; i < pages; ++i) {
    std::vector<uint8_t> p = read_log_page(log, uint16_t(page + i));
    if (p.empty()) return fail(c, ata::kErrorAbrt, 0);
    out.insert(out.end(), p.begin(), p.end());
  }
  if (cmd.pio_in) *cmd.pio_in = out;
  bool dma = cmd.command == ata::kReadLogDmaExt;
  SimTime go = send_fis(c.t, dma ? fis_dwords::kDmaActivate : fis_dwords::kPioSetup);
  c.c.t_data_start = go;
  c.c.t_data_end = c.t = link_.reserve(go, link_.data_ns(out.size()));
  c.c.t_data_fis = c.t - link_.data_ns(out.size());  // where the wire had room for it
  log_fises(c, c.t, out.size());
  c.c.sectors = pages;
  if (!dma) c.c.t_complete = c.t;
  // Reading the NCQ error log is what lets the queue run again.
  if (log == ata::kLogNcqError) {
    ncq_error_at_ = kNever;
    ncq_log_.valid = false;
  }
}

void Drive::do_set_features(Ctx& c) {
  switch (c.cmd.features & 0xFF) {
    case ata::kFeatureEnableWriteCache:
      cache_enabled_ = true;
      return;
    case ata::kFeatureDisableWriteCache:
      c.t = std::max(c.t, cache_->drain(c.t));  // a real drive flushes before it turns off
      cache_enabled_ = false;
      return;
    case ata::kFeatureSetTransferMode:
    case ata::kFeatureEnableSataFeature:
    case ata::kFeatureDisableSataFeature:
    case 0x55:  // read look-ahead off
    case 0xAA:  // read look-ahead on
      return;
    default:
      return fail(c, ata::kErrorAbrt, 0);
  }
}

void Drive::secure_erase(Ctx& c) {
  content_.clear();
  cache_->clear();
  c.t = std::max(c.t, ftl_->erase_all(c.t));
  cpu_free_ = std::max(cpu_free_, c.t);
  last_activity_ = std::max(last_activity_, c.t);
}

void Drive::do_security(Ctx& c) {
  uint8_t op = c.cmd.command;
  bool prepared = erase_prepared_;
  erase_prepared_ = false;
  if (op == ata::kSecuritySetPassword) {
    pio_out_block(c);
    security_enabled_ = true;
  } else if (op == ata::kSecurityErasePrepare) {
    erase_prepared_ = true;
  } else {  // ERASE UNIT: only right after PREPARE, and only with a password set
    if (!prepared || !security_enabled_) return fail(c, ata::kErrorAbrt, 0);
    pio_out_block(c);
    secure_erase(c);
    security_enabled_ = false;
  }
}

void Drive::do_sanitize(Ctx& c) {
  if (c.cmd.features != ata::kSanitizeBlockErase ||
      (c.cmd.lba & 0xFFFFFFFF) != ata::kSanitizeBlockEraseKey)
    return fail(c, ata::kErrorAbrt, 0);
  secure_erase(c);
}

}  // namespace fisrig::drive
