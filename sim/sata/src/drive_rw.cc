// READ/WRITE DMA EXT and READ/WRITE FPDMA QUEUED: data moved FIS by FIS over the wire,
// pages through the write cache into the FTL, reads out of NAND or the buffer.
#include <algorithm>
#include <vector>

#include "drive_ctx.h"

namespace fisrig::drive {

namespace {
constexpr uint32_t kSectorsPerFis = 16;  // 8 KiB Data FIS
constexpr uint32_t kSectorsPerPage = Ssd::kSectorsPerPage;

uint32_t sector_count(const AtaCommand& cmd, bool queued) {
  uint32_t n = queued ? cmd.features : cmd.count;
  return n ? n : 65536;
}
}  // namespace

void Drive::dispatch(Ctx& c) {
  const AtaCommand& cmd = c.cmd;
  // SECURITY ERASE UNIT counts only straight after SECURITY ERASE PREPARE.
  if (cmd.command != ata::kSecurityEraseUnit && cmd.command != ata::kSecurityErasePrepare)
    erase_prepared_ = false;
  switch (cmd.command) {
    case ata::kReadDmaExt:
    case ata::kReadFpdmaQueued:
      return do_read(c);
    case ata::kWriteDmaExt:
    case ata::kWriteDmaFuaExt:
    case ata::kWriteFpdmaQueued:
      return do_write(c);
    case ata::kSendFpdmaQueued: {
      uint32_t subcommand = (cmd.count >> 8) & 0x1F;
      if (subcommand != 0) return fail(c, ata::kErrorAbrt, 0);  // only DSM is supported
      return do_dsm(c, cmd.features ? cmd.features : 65536, cmd.aux & 1);
    }
    case ata::kDataSetManagement:
      return do_dsm(c, cmd.count ? cmd.count : 65536, cmd.features & 1);
    case ata::kFlushCache:
    case ata::kFlushCacheExt:
      return do_flush(c);
    case ata::kIdentifyDevice:
      return do_identify(c);
    case ata::kReadLogExt:
    case ata::kReadLogDmaExt:
      return do_read_log(c);
    case ata::kSetFeatures:
      return do_set_features(c);
    case ata::kSecuritySetPassword:
    case ata::kSecurityErasePrepare:
    case ata::kSecurityEraseUnit:
      return do_security(c);
    case ata::kSanitize:
      return do_sanitize(c);
    case ata::kSmart:
      return do_smart(c);
    default:
      return fail(c, ata::kErrorAbrt, 0);
  }
}

bool Drive::sectors_in_range(Ctx& c, uint64_t& lba, uint32_t& n) {
  lba = c.cmd.lba & 0xFFFFFFFFFFFFull;
  n = sector_count(c.cmd, c.queued);
  c.c.lba = lba;
  c.c.sectors = n;
  if (lba + n > ssd_.visible_sectors()) {
    fail(c, ata::kErrorIdnf, lba);
    return false;
  }
  uint64_t idnf = first_hit(cfg().faults.idnf, lba, n);
  if (idnf < lba + n) {
    fail(c, ata::kErrorIdnf, idnf);
    return false;
  }
  return true;
}

void Drive::do_read(Ctx& c) {
  const AtaCommand& cmd = c.cmd;
  uint64_t lba;
  uint32_t n;
  if (!sectors_in_range(c, lba, n)) return;

  // The first unreadable sector: a UNC range, or a program torn by power loss.
  const uint64_t bad = ssd_.first_unreadable(lba, n);
  // When each page of the good part is in the controller.
  static thread_local std::vector<SimTime> ready;
  const uint64_t first_lpn = lba / kSectorsPerPage;
  const uint64_t end = bad;
  ssd_.read_pages(lba, end, c.t, ready);
  ssd_.read_content(lba, end, cmd.sink);

  SimTime t = c.t;
  // The same data phase on the device side's own wire (own_wire_), with SDB coalescing.
  const bool own = c.queued && coalesce_sdb_;
  if (own) c.own_t = c.t;
  for (uint64_t s = lba; s < end; s += kSectorsPerFis) {
    uint64_t e = std::min<uint64_t>(end, s + kSectorsPerFis);
    SimTime r = 0;
    for (uint64_t p = s / kSectorsPerPage; p <= (e - 1) / kSectorsPerPage; ++p)
      r = std::max(r, ready[p - first_lpn]);
    SimTime own_r = own ? std::max(r, c.own_t) : 0;
    r = std::max(r, t);
    if (s == lba) {
      SimTime due = kNever;
      if (own) {
        const SimTime setup = link_.fis_ns(fis_dwords::kDmaSetup);
        own_r = own_wire_.reserve(own_r, setup);
        due = c.own_due = own_r - setup;
      }
      if (c.queued) r = send_queued_setup(r, (end - lba) * ata::kSectorBytes, due);
      c.c.t_data_start = r;
    }
    // No HOLD storm: that knob is the device holding what it receives (writes).
    SimTime dur = link_.fis_ns(uint32_t((e - s) * 128) + fis_dwords::kDataHeader);
    if (own) c.own_t = own_wire_.reserve(own_r, dur);
    t = link_.reserve(r, dur);
    if (s == lba) c.c.t_data_fis = t - dur;  // where the wire had room for it
    log_fis(c, t - dur, t, uint32_t((e - s) * 128));
    if (chance(cfg().faults.data_fis_crc_error_rate)) {
      ++stats_.icrc_failures;
      ++stats_.r_err_data;
      c.c.t_data_end = c.t = t;
      return fail(c, ata::kErrorIcrc | ata::kErrorAbrt, s);
    }
  }
  if (end > lba) c.c.t_data_end = t, data_phase_end_ = std::max(data_phase_end_, t);
  c.t = std::max(t, c.t);
  ssd_.count_read(end - lba);
  if (bad < lba + n) fail(c, ata::kErrorUnc, bad);
}

void Drive::do_write(Ctx& c) {
  const AtaCommand& cmd = c.cmd;
  const WritePayload& pl = cmd.payload;
  uint64_t lba;
  uint32_t n;
  if (!sectors_in_range(c, lba, n)) return;
  if (!payload_ok(pl)) return fail(c, ata::kErrorAbrt, lba);

  bool fua = cmd.command == ata::kWriteDmaFuaExt || (c.queued && (cmd.device & 0x80));
  SsdWrite w = ssd_.begin_write(pl, lba, fua);
  uint64_t end = lba + n;
  uint64_t next_admit = lba / kSectorsPerPage;  // next page to find room for
  uint64_t next_apply = next_admit;             // next page to hand to the FTL
  SimTime t = c.t;
  if (c.queued && !cmd.data_phase_done) {
    // A queued write's DMA Setup opens a data phase that runs to its last Data FIS, with no
    // other's between (SATA has one open at a time): it goes once the phase before it has
    // ended and its whole transfer has room in the buffer, as a controller allocates a
    // command's buffer before its setup. Page by page, setups went into gaps of the wire
    // ahead of earlier commands' data (docs/drive-model.md, "Timing": one data phase at a time).
    uint64_t pages = (end - 1) / kSectorsPerPage - next_admit + 1;
    t = std::max(ssd_.admit(t, pages), data_phase_end_);
    next_admit += pages;
  }

  for (uint64_t s = lba; s < end; s += kSectorsPerFis) {
    uint64_t e = std::min<uint64_t>(end, s + kSectorsPerFis);
    // The device asks for data only when its buffer has room for it.
    SimTime room = t;
    for (; next_admit <= (e - 1) / kSectorsPerPage; ++next_admit) room = ssd_.admit(room);
    SimTime go;
    if (cmd.data_phase_done) {
      // The data is here already: only the buffer's room can hold the status back.
      go = room;
      t = std::max(t, room);
    } else {
      go = s == lba && c.queued ? send_queued_setup(room, uint64_t(n) * ata::kSectorBytes) : send_fis(room, fis_dwords::kDmaActivate);
      if (s == lba) c.c.t_data_start = go;
      // The host's protocol sends no data (AtaCommand::host_sends_no_data): none comes,
      // nothing is written, and the status the Drive books is the host's to ignore.
      if (cmd.host_sends_no_data) return fail(c, ata::kErrorAbrt, lba);
      // A queued write's DMA Setup (its Auto-Activate off, as without SET FEATURES 02h)
      // is followed by a DMA Activate too, as the device side sends it: booking only the
      // Setup made the model's queued writes 11 dwords a command faster than the wire.
      // The host's FIS that cuts in after the setup: the wire idle until it can start.
      if (s == lba && c.queued && cmd.host_idle_after_setup_ns) link_.reserve(go, cmd.host_idle_after_setup_ns);
      SimTime at = (s == lba && c.queued ? send_fis(go + cmd.host_fis_after_setup_ns, fis_dwords::kDmaActivate) : go) +
                   host_turnaround_;
      SimTime dur = link_.fis_ns(uint32_t((e - s) * 128) + fis_dwords::kDataHeader);
      if (chance(cfg().faults.hold_storm_rate)) dur += cfg().faults.hold_storm_ns;
      t = link_.reserve(at, dur);
      if (s == lba) c.c.t_data_fis = t - dur;  // where the wire had room for it
      log_fis(c, t - dur, t, uint32_t((e - s) * 128));
    }
    if (s == lba && cmd.data_phase_done) c.c.t_data_start = go;
    // data_fis_crc_error_rate is a read's (the device sends the bad CRC): a write's Data FIS
    // fails here when the device answered it R_ERR, by the r_err_rate knob on the model (as
    // sim/device's link answers any FIS the host sends), and on the device side when its
    // link did (it sets this knob to 1 for that command: sim/device command_layer.cc).
    bool bad_crc = cmd.data_phase_done && chance(cfg().faults.data_fis_crc_error_rate);
    if (bad_crc || (!cmd.data_phase_done && chance(cfg().faults.r_err_rate))) {
      // The device answers R_ERR; the command ends with an interface CRC error.
      if (bad_crc) ++stats_.icrc_failures;
      ++stats_.r_err_data;
      c.c.t_data_end = c.t = t;
      ssd_.abort_write(t);
      return fail(c, ata::kErrorIcrc | ata::kErrorAbrt, s);
    }
    // Pages whose last sector has now arrived go to the FTL.
    for (; next_apply < next_admit; ++next_apply) {
      uint64_t p0 = next_apply * kSectorsPerPage;
      uint64_t a = std::max(lba, p0), b = std::min(end, p0 + kSectorsPerPage);
      if (b > e) break;
      ssd_.write_page(w, next_apply, a, b, t);
    }
  }
  c.c.t_data_end = t;
  if (!cmd.data_phase_done) data_phase_end_ = std::max(data_phase_end_, t);
  c.t = ssd_.end_write(w, n, t);
}

}  // namespace fisrig::drive
