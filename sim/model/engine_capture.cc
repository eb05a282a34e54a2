// The engine model's side of the analyzer's capture (capture.h, wire_capture.h): a
// command's FISes, as the drive's wire model placed them, given to the capture when its
// record is written, with the record's triggers; the rig's events beside them. Every entry
// is marked modelled: the model knows where each FIS's dwords cross, not the primitives
// between them (docs/capture.md says what it holds and what it does not).
#include "engine_model.h"

#include "protocol_mismatch.h"

extern "C" {
#include "fisrig/ata.h"
}

namespace fisrig::model {

namespace {

fisrig_capture_entry entry(uint64_t tick, uint8_t kind, uint8_t dir, uint8_t type, uint8_t tag) {
  fisrig_capture_entry e{};
  e.tick = tick;
  e.kind = kind;
  e.dir = dir;
  e.type = type;
  e.flags = FISRIG_CAPTURE_MODELLED;
  e.tag = tag;
  return e;
}

fisrig_capture_entry fis_entry(uint64_t tick, uint8_t dir, uint8_t type, uint8_t tag, uint32_t dwords) {
  fisrig_capture_entry e = entry(tick, FISRIG_CAPTURE_FIS, dir, type, tag);
  e.count = dwords;
  e.header[0] = type;
  return e;
}

// A Register H2D as the engine sends the descriptor (engine_if.h: every field as written,
// a queued command's tag in COUNT bits 7:3), C bit set.
fisrig_capture_entry h2d_entry(uint64_t tick, const fisrig_cmd_desc& d, uint8_t slot, bool queued) {
  namespace fd = drive::fis_dwords;
  fisrig_capture_entry e = fis_entry(tick, FISRIG_CAPTURE_TO_DEVICE, FISRIG_FIS_REG_H2D, slot, fd::kRegH2D);
  const uint32_t count = queued ? (d.count & ~0xF8u) | uint32_t(slot) << 3 : d.count;
  e.header[0] |= 0x80u << 8 | uint32_t(d.command) << 16 | uint32_t(d.features & 0xFF) << 24;
  e.header[1] = d.lba[0] | uint32_t(d.lba[1]) << 8 | uint32_t(d.lba[2]) << 16 | uint32_t(d.device) << 24;
  e.header[2] = d.lba[3] | uint32_t(d.lba[4]) << 8 | uint32_t(d.lba[5]) << 16 | uint32_t(d.features >> 8) << 24;
  e.header[3] = count | uint32_t(d.icc) << 16 | uint32_t(d.control) << 24;
  e.header[4] = d.aux;
  return e;
}

bool is_command(uint8_t protocol) { return protocol <= FISRIG_PROTO_FPDMA_OUT; }

}  // namespace

void EngineModel::capture_wire_to(std::FILE* f) { wire_capture_.write_to(f); }

void EngineModel::finish_capture() { wire_capture_.finish(now_ticks()); }

void EngineModel::capture_desc(const fisrig_cmd_desc& d) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.ts_submit = r.ts_status = now_ticks();
  if (!wire_capture_.take(d, r.ts_submit)) r.result = FISRIG_RESULT_REFUSED;
  complete(0, r);
}

uint64_t EngineModel::capture_settled() const {
  uint64_t t = now_ticks();
  for (uint32_t b = busy_mask_; b; b &= b - 1) t = std::min(t, slots_[__builtin_ctz(b)].ts_submit);
  return t;
}

void EngineModel::capture_event(uint8_t event, uint64_t tick, uint8_t tag) {
  wire_capture_.add(entry(tick, FISRIG_CAPTURE_EVENT, 0, event, tag));
}

void EngineModel::capture_record(const fisrig_cpl_record& r) {
  if (r.user_tag == FISRIG_USER_TAG_EVENT) {
    if (r.slot == FISRIG_EVENT_REC_POWER_CUT) {
      capture_event(FISRIG_CAPTURE_EVENT_POWER_CUT, r.ts_submit, FISRIG_CAPTURE_NO_TAG);
      wire_capture_.fire(FISRIG_TRIGGER_POWER_CUT, 0, r.ts_submit);
    } else if (r.slot == FISRIG_EVENT_REC_LINK_DOWN || r.slot == FISRIG_EVENT_REC_LINK_UP) {
      capture_event(r.slot == FISRIG_EVENT_REC_LINK_DOWN ? FISRIG_CAPTURE_EVENT_LINK_DOWN : FISRIG_CAPTURE_EVENT_LINK_UP,
                    r.ts_status, FISRIG_CAPTURE_NO_TAG);
    }
  } else if (r.slot < FISRIG_ENGINE_SLOTS && is_command(slots_[r.slot].desc.protocol) &&
             slots_[r.slot].desc.user_tag == r.user_tag && slots_[r.slot].ts_submit == r.ts_submit) {
    capture_command(r.slot, r);
  }
  wire_capture_.settle(capture_settled());
}

void EngineModel::capture_command(uint8_t s, const fisrig_cpl_record& r) {
  namespace fd = drive::fis_dwords;
  const Slot& slot = slots_[s];
  const uint8_t proto = slot.answer;
  const bool queued = mismatch::queued(proto);
  const bool out = mismatch::data_out(proto);
  const uint8_t data_dir = out ? FISRIG_CAPTURE_TO_DEVICE : FISRIG_CAPTURE_TO_HOST;
  if (r.ts_h2d) wire_capture_.add(h2d_entry(r.ts_h2d, slot.desc, s, queued));
  if (queued && r.ts_accept) {
    fisrig_capture_entry e = fis_entry(r.ts_accept, FISRIG_CAPTURE_TO_HOST, FISRIG_FIS_REG_D2H, s, fd::kRegD2H);
    e.header[0] |= uint32_t(drive::ata::kStatusDrdy) << 16;  // BSY clear: the command is queued
    wire_capture_.add(e);
  }
  if (queued && r.ts_setup) {
    fisrig_capture_entry e = fis_entry(r.ts_setup, FISRIG_CAPTURE_TO_HOST, FISRIG_FIS_DMA_SETUP, s, fd::kDmaSetup);
    e.header[0] |= (out ? 0u : 0x20u) << 8;  // D: the data goes to the host
    e.header[1] = s;                         // DMA Buffer Identifier: the tag
    uint32_t bytes = 0;                      // DMA Transfer Count: what its Data FISes carry
    for (const drive::Drive::DataFis& f : slot.fises) bytes += f.dwords * 4;
    e.header[5] = slot.fises.empty() ? r.data_dwords * 4 : bytes;
    wire_capture_.add(e);
  }
  // Each Data FIS as the drive booked it, and what asked for it: a DMA Activate before each
  // one the host sends, a PIO Setup before each PIO one. The first such setup is the
  // record's; the later ones end where their Data FIS's turnaround begins (the drive books
  // them so, back to back), the model's placement, not a measured one.
  const SimTime turnaround = ticks_to_ns(WireStamps::kHostDataTurnaroundTicks);
  const bool pio = proto == FISRIG_PROTO_PIO_IN || proto == FISRIG_PROTO_PIO_OUT;
  const bool activates = proto == FISRIG_PROTO_DMA_OUT || proto == FISRIG_PROTO_FPDMA_OUT;
  bool first = true;
  fisrig_capture_entry last_data{};
  for (const drive::Drive::DataFis& f : slot.fises) {
    if (pio || activates) {
      const uint8_t type = pio ? FISRIG_FIS_PIO_SETUP : FISRIG_FIS_DMA_ACTIVATE;
      const uint32_t dwords = pio ? fd::kPioSetup : fd::kDmaActivate;
      uint64_t tick = first && r.ts_setup && !queued ? r.ts_setup
                      : wire_.first_dword(f.start > turnaround && !pio ? f.start - turnaround : f.start, dwords);
      fisrig_capture_entry e = fis_entry(tick, FISRIG_CAPTURE_TO_HOST, type, s, dwords);
      if (pio) {
        e.header[0] |= (out ? 0u : 0x20u) << 8 | uint32_t(drive::ata::kStatusDrdy | drive::ata::kStatusDrq) << 16;
        e.header[4] = f.dwords * 4;  // Transfer Count
      }
      wire_capture_.add(e);
    }
    if (!first) wire_capture_.add(last_data);
    first = false;
    last_data = fis_entry(wire_.fis_dword(f.start), data_dir, FISRIG_FIS_DATA, s, f.dwords + fd::kDataHeader);
  }
  // A command the drive ended ICRC: its last Data FIS is the one whose receiver answered
  // R_ERR (the drive model's data_fis_crc_error_rate and r_err_rate end it there).
  if (!first) {
    if (r.result == FISRIG_RESULT_ATA_ERROR && (r.error & drive::ata::kErrorIcrc)) last_data.flags |= FISRIG_CAPTURE_BAD;
    wire_capture_.add(last_data);
  }
  // The status: a queued command's Set Device Bits, another's D2H; a PIO read that ended
  // well has none (its last PIO Setup carried it), nor does a command the engine ended itself
  // (a timeout), nor one an NCQ error recovery ends (the error SDB is the recovery's).
  const bool pio_in_ok = proto == FISRIG_PROTO_PIO_IN && r.result == FISRIG_RESULT_OK && r.ts_setup;
  const bool by_status = r.result == FISRIG_RESULT_OK || r.result == FISRIG_RESULT_ATA_ERROR ||
                         r.result == FISRIG_RESULT_LENGTH || r.result == FISRIG_RESULT_CHECK_FAILED;
  if (by_status && !pio_in_ok && r.ts_status && !recovery_.on) {
    const uint32_t sb = uint32_t(r.status) << 16 | uint32_t(r.error) << 24;
    if (queued) {
      fisrig_capture_entry e = fis_entry(r.ts_status, FISRIG_CAPTURE_TO_HOST, FISRIG_FIS_SET_DEVICE_BITS, s,
                                         fd::kSetDeviceBits);
      e.header[0] |= 0x40u << 8 | (sb & 0xFF770000u);  // I; status bits 6:4 and 2:0
      e.header[1] = 1u << s;                             // SActive
      wire_capture_.add(e);
    } else {
      fisrig_capture_entry e = fis_entry(r.ts_status, FISRIG_CAPTURE_TO_HOST, FISRIG_FIS_REG_D2H, s, fd::kRegD2H);
      e.header[0] |= 0x40u << 8 | sb;
      e.header[1] = r.lba[0] | uint32_t(r.lba[1]) << 8 | uint32_t(r.lba[2]) << 16;
      e.header[2] = r.lba[3] | uint32_t(r.lba[4]) << 8 | uint32_t(r.lba[5]) << 16;
      wire_capture_.add(e);
    }
  }
  if (r.result == FISRIG_RESULT_TIMEOUT) {
    capture_event(FISRIG_CAPTURE_EVENT_TIMEOUT, r.ts_status, s);
    wire_capture_.fire(FISRIG_TRIGGER_TIMEOUT, 0, r.ts_status);
  }
  // A result's trigger fires at the status FIS that gave it: an NCQ error's, at its SDB.
  const uint64_t at = recovery_.on && r.result == FISRIG_RESULT_ATA_ERROR ? recovery_.sdb_tick : r.ts_status;
  if (r.result != FISRIG_RESULT_OK) wire_capture_.fire(FISRIG_TRIGGER_ERROR, 0, at);
  wire_capture_.fire(FISRIG_TRIGGER_RESULT, r.result, at);
}

void EngineModel::capture_error_sdb(const drive::Completion& c) {
  fisrig_capture_entry e = fis_entry(recovery_.sdb_tick, FISRIG_CAPTURE_TO_HOST, FISRIG_FIS_SET_DEVICE_BITS,
                                     FISRIG_CAPTURE_NO_TAG, drive::fis_dwords::kSetDeviceBits);
  e.header[0] |= 0x40u << 8 | (uint32_t(c.status | drive::ata::kStatusErr) << 16 & 0x00770000u) |
                 uint32_t(c.error) << 24;
  wire_capture_.add(e);  // SActive 0: the error completes no command
}

void EngineModel::capture_log_read(const drive::Completion& log) {
  namespace fd = drive::fis_dwords;
  fisrig_cmd_desc d{};
  d.command = drive::ata::kReadLogExt;
  d.lba[0] = drive::ata::kLogNcqError;
  d.count = 1;
  d.device = 0x40;
  wire_capture_.add(h2d_entry(recovery_.h2d_tick, d, FISRIG_CAPTURE_NO_TAG, false));
  if (log.t_data_start) {
    fisrig_capture_entry e = fis_entry(wire_.first_dword(log.t_data_start, fd::kPioSetup), FISRIG_CAPTURE_TO_HOST,
                                       FISRIG_FIS_PIO_SETUP, FISRIG_CAPTURE_NO_TAG, fd::kPioSetup);
    e.header[0] |= 0x20u << 8 | uint32_t(log.status) << 16;
    e.header[4] = uint32_t(drive::ata::kSectorBytes);
    wire_capture_.add(e);
  }
  for (const drive::Drive::DataFis& f : recovery_.fises)
    wire_capture_.add(fis_entry(wire_.fis_dword(f.start), FISRIG_CAPTURE_TO_HOST, FISRIG_FIS_DATA,
                                FISRIG_CAPTURE_NO_TAG, f.dwords + fd::kDataHeader));
  if (!log.ok()) {
    fisrig_capture_entry e = fis_entry(wire_.first_dword(log.t_complete, fd::kRegD2H), FISRIG_CAPTURE_TO_HOST,
                                       FISRIG_FIS_REG_D2H, FISRIG_CAPTURE_NO_TAG, fd::kRegD2H);
    e.header[0] |= 0x40u << 8 | uint32_t(log.status) << 16 | uint32_t(log.error) << 24;
    wire_capture_.add(e);
  }
}

}  // namespace fisrig::model
