// The non-read/write commands: DSM TRIM, FLUSH, IDENTIFY, READ LOG EXT, SET FEATURES,
// SECURITY ERASE, SANITIZE BLOCK ERASE and SMART.
#include <algorithm>
#include <cstring>

#include "drive_ctx.h"

namespace fisrig::drive {

void Drive::do_dsm(Ctx& c, uint32_t blocks, bool trim) {
  const AtaCommand& cmd = c.cmd;
  if (!trim || blocks > cfg().identity.dsm_max_blocks) return fail(c, ata::kErrorAbrt, 0);
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
    if (lba + n > ssd_.visible_sectors()) {
      c.t = t;
      return fail(c, ata::kErrorAbrt, lba);
    }
    ranges.push_back({lba, n});
  }
  for (const Range& r : ranges) {
    ssd_.deallocate(r.lba, r.n);
    c.c.sectors += r.n;
  }
  c.t = ssd_.run_firmware(t, cfg().controller.trim_range_ns * ranges.size());
}

void Drive::do_flush(Ctx& c) {
  c.t = ssd_.flush(c.t);
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
  const SsdStats& s = ssd_.stats();
  const NandGeometry& g = cfg().nand;
  smart::Counters n;
  n.powered_ns = ssd_.powered_ns(now);
  n.power_ons = 1 + s.power_cycles - (ssd_.powered() ? 0 : 1);  // the first is the drive's start
  n.unexpected_power_losses = s.power_cycles;
  n.host_sectors_written = s.sectors_written;
  n.host_sectors_read = s.sectors_read;
  n.nand_bytes_programmed = ssd_.nand().counters().bytes_programmed;
  // A die's erase takes the block of every plane.
  n.block_erases = ssd_.nand().counters().block_erases * g.planes_per_die;
  n.blocks = uint64_t{g.dies()} * g.planes_per_die * g.blocks_per_plane;
  n.rated_pe_cycles = g.rated_pe_cycles;
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
      ssd_.enable_write_cache();
      return;
    case ata::kFeatureDisableWriteCache:
      c.t = ssd_.disable_write_cache(c.t);
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
    c.t = ssd_.erase_all(c.t);
    security_enabled_ = false;
  }
}

void Drive::do_sanitize(Ctx& c) {
  if (c.cmd.features != ata::kSanitizeBlockErase ||
      (c.cmd.lba & 0xFFFFFFFF) != ata::kSanitizeBlockEraseKey)
    return fail(c, ata::kErrorAbrt, 0);
  c.t = ssd_.erase_all(c.t);
}

}  // namespace fisrig::drive
