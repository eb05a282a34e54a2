// The engine model's commands: a descriptor started on the drive, its answer's stamps and
// record, and the ends the drive's status does not give (protocol_mismatch.h).
#include "engine_model.h"

#include "descriptor_fields.h"
#include "protocol_mismatch.h"

#include <algorithm>
#include <cstring>

extern "C" {
#include "fisrig/pattern.h"
}

namespace fisrig::model {

// ---- fetching and starting descriptors ----

// A TRIM whose range list is not in RAM (a raw DSM without data_out): the drive reads what
// it is sent, so it gets the sectors the rig's pattern generator sends, as the device side
// does on the rtl target (its STAMP sectors read as ranges past the drive's end: ABRT after
// the data, tests/rtl/test_raw_mismatch.py). A list the drive refuses unread is not made.
void EngineModel::range_list_from_generator(const fisrig_cmd_desc& d, drive::AtaCommand& cmd) {
  bool send = d.command == drive::ata::kSendFpdmaQueued;
  if (!send && d.command != drive::ata::kDataSetManagement) return;
  uint32_t blocks = send ? d.features : d.count;
  blocks = blocks ? blocks : 65536;
  if (blocks > drive_.config().identity.dsm_max_blocks) return;
  static_assert(int(FISRIG_DATA_ZEROS) == int(FISRIG_PATTERN_ZEROS) && int(FISRIG_DATA_STAMP) == int(FISRIG_PATTERN_STAMP) &&
                int(FISRIG_DATA_LFSR) == int(FISRIG_PATTERN_LFSR), "engine_if.h's data sources are pattern.h's kinds");
  int kind = d.data_source == FISRIG_DATA_NONE ? int(FISRIG_PATTERN_ZEROS) : int(d.data_source);
  range_list_.resize(size_t(blocks) * 512);
  uint32_t sector[FISRIG_SECTOR_DWORDS];
  for (uint32_t i = 0; i < blocks; ++i) {
    fisrig_pattern_sector(kind, lba_of(d) + i, d.data_word, d.compress_pct, sector);
    std::memcpy(range_list_.data() + size_t(i) * 512, sector, 512);
  }
  cmd.data_out = range_list_.data();
  cmd.data_out_bytes = uint32_t(range_list_.size());
}

void EngineModel::start(const fisrig_cmd_desc& d) {
  // Data past the RAM window the firmware gave the engine: refused, nothing on the wire.
  if (d.data_source == FISRIG_DATA_RAM && d.data_word + fisrig_desc_ram_bytes(&d) > data_window_.size())
    return end_at_once(d, FISRIG_RESULT_REFUSED);
  // No link: the engine fails the descriptor at once rather than time it out.
  if (!link_up_ || (!drive_.powered() && link_fall_at_ == drive::kNever)) return end_at_once(d, FISRIG_RESULT_LINK_LOST);
  // The drive's page-table entry for this LBA is a cache miss at random LBAs: start
  // loading it before the slot and link bookkeeping (a fifth of the main job's model time
  // was that miss: docs/performance.md, "The model's time").
  const uint64_t lba = lba_of(d);
  drive_.prefetch_lba(lba);
  bool queued = is_queued(d);
  uint8_t s = queued ? uint8_t(__builtin_ctz(~busy_mask_)) : 0;  // the lowest free slot
  Slot& slot = slots_[s];
  busy_mask_ |= 1u << s;
  slot.desc = d;
  slot.generation++;
  slot.ts_submit = now_ticks();
  deadlines_[s] = now_ + ticks_to_ns(timeout_ticks_of(d));
  next_deadline_ = std::min(next_deadline_, deadlines_[s]);
  if (!queued) nonqueued_slot_ = s;
  slot.lost = false;
  if (link_fall_at_ != drive::kNever) {
    // The drive has gone quiet and the rig has not yet seen its link fall: the H2D waits
    // for a device that does not answer, and the command ends LINK_LOST at the fall.
    slot.lost = true;
    slot.lost_as = fisrig_cpl_record{};
    slot.lost_as.user_tag = d.user_tag;
    slot.lost_as.ts_submit = slot.ts_submit;
    return;
  }

  drive::AtaCommand cmd;
  cmd.command = d.command;
  cmd.features = d.features;
  cmd.lba = lba;
  cmd.count = queued ? uint16_t((d.count & ~0xF8u) | (uint32_t(s) << 3)) : d.count;
  cmd.device = d.device;
  cmd.icc = d.icc;
  cmd.control = d.control;
  cmd.aux = d.aux;
  cmd.user_tag = s | (slot.generation << 8);
  // The drive answers by the opcode, whatever the descriptor says (protocol_mismatch.h).
  slot.answer = mismatch::answer_of(d.command, d.features);
  cmd.host_sends_no_data = mismatch::host_sends_no_data(d.protocol, slot.answer);
  // Another queued command waits behind this write with a slot for it: its H2D (and the
  // D2H releasing it) will cut in after this write's DMA Setup, as on the wire.
  bool successor = waiting_.size() > 1 ? is_queued(waiting_[1]) : __builtin_popcount(busy_mask_) >= 2;
  if (d.protocol == FISRIG_PROTO_FPDMA_OUT && successor && busy_mask_ != ~0u) {
    cmd.host_idle_after_setup_ns = ticks_to_ns(WireStamps::kSetupToCutInTicks);
    cmd.host_fis_after_setup_ns = cmd.host_idle_after_setup_ns +
                                  drive_.link_timing().fis_ns(drive::fis_dwords::kRegH2D) +
                                  drive_.link_timing().fis_ns(drive::fis_dwords::kRegD2H);
  }
  uint32_t off = d.data_word;
  switch (d.data_source) {
    case FISRIG_DATA_ZEROS:
    case FISRIG_DATA_STAMP:
    case FISRIG_DATA_LFSR:
      cmd.payload = styles_.payload(d.data_source, d.data_word, d.compress_pct);
      break;
    case FISRIG_DATA_RAM:
      if (off < data_window_.size()) {
        cmd.data_out = data_window_.data() + off;
        cmd.data_out_bytes = uint32_t(data_window_.size() - off);
        // Sector data from RAM: only as much as the window holds.
        if (sectors_of(d) * 512ull <= data_window_.size() - off) {
          cmd.payload.kind = drive::WritePayload::Kind::kLiteral;
          cmd.payload.bytes = data_window_.data() + off;
        }
      }
      break;
    default:  // FISRIG_DATA_NONE: the rig's generator sends zeros to a drive that asks for data
      if (mismatch::data_out(slot.answer)) cmd.payload.kind = drive::WritePayload::Kind::kZeros;
      break;
  }
  if (!cmd.data_out) range_list_from_generator(d, cmd);
  bool data_in_to_ram = d.data_source == FISRIG_DATA_RAM &&
                        (d.protocol == FISRIG_PROTO_PIO_IN || d.protocol == FISRIG_PROTO_DMA_IN);
  // Sector reads into RAM: as the gateware's DMA, only when the window holds them.
  bool sectors_to_ram = d.data_source == FISRIG_DATA_RAM &&
                        (d.protocol == FISRIG_PROTO_DMA_IN || d.protocol == FISRIG_PROTO_FPDMA_IN) &&
                        off < data_window_.size() && sectors_of(d) * 512ull <= data_window_.size() - off;
  if (sectors_to_ram) {
    read_words_.assign(sectors_of(d), drive::kZeroWord);
    cmd.sink.words = read_words_.data();
  }
  pio_in_.clear();
  if (data_in_to_ram) cmd.pio_in = &pio_in_;
  bool capture = capture_ && mismatch::data_in(slot.answer);  // what the drive sends, whatever was asked
  slot.captured.clear();
  if (capture) {
    cmd.pio_in = &pio_in_;  // IDENTIFY and log pages
    if (slot.answer != FISRIG_PROTO_PIO_IN) {  // sector reads, as many as the drive reads
      uint32_t n = mismatch::queued(slot.answer) ? d.features : d.count;
      slot.captured.assign((n ? n : 65536) * size_t(drive::ata::kSectorBytes), 0);
      cmd.sink.bytes = slot.captured.data();
    }
  }
  // A cut armed on the count of SDBs counts each command's as the drive books it; one the
  // drive took back and merged with a later command's would be counted twice.
  drive_.set_sdb_coalescing(!(armed_.on && armed_.event == FISRIG_EVENT_SDB));
  // A queued H2D wins the wire as on the rig, its release right after it (Drive::
  // receive_h2d). Not while a cut is armed: the events it counts were taken from the
  // drive's bookings as it made them, and a later H2D would move them.
  const bool cut_in = mismatch::queued(slot.answer) && !armed_.on;  // the drive releases it at once
  cmd.release_sent = cut_in;
  SimTime arrive = drive_.receive_h2d(now_ + ticks_to_ns(WireStamps::kTakeToH2dTicks), cut_in);
  if (!drive_.wire_moves().empty()) move_bookings(drive_.wire_moves());
  for (const auto& pull : drive_.wire_pulls()) move_bookings(pull);  // statuses taken back after it
  slot.ts_h2d = wire_.first_dword(arrive, drive::fis_dwords::kRegH2D);
  slot.h2d_end = arrive;
  slot.seq = drive_.next_completion_seq();
  drive_.submit(cmd, arrive);
  slot.fises.swap(fis_log_);  // both keep their room: no allocation per command
  fis_log_.clear();
  slot.ends_prepared = false;
  if (slot.answer != d.protocol)
    if (const drive::Completion* c = drive_.pending_completion(slot.seq)) prepare_mismatch_end(s, *c);
  slot.accept_end = 0;
  issue_known_ = false;
  if (queued) {
    accept_slot_ = s;
    if (const drive::Completion* c = drive_.last_submitted_completion(slot.seq)) {
      slot.accept_end = c->t_accept;
      if (c->t_data_start && c->t_data_end) {
        // The rig takes the next descriptor once its data path has sent a write's last
        // Data FIS on, before its last dwords cross (WireStamps::kDataOutDoneTicks).
        SimTime close = c->t_data_end;
        if (d.protocol == FISRIG_PROTO_FPDMA_OUT)
          close -= std::min(close - c->t_data_start, ticks_to_ns(WireStamps::kDataOutDoneTicks));
        book_phase(s, c->t_data_start, close);
      }
    }
  }
  if (armed_.left) note_events(slot.ts_h2d, drive_.pending_completion(slot.seq), d.protocol, slot.fises);
  if (capture && !pio_in_.empty()) slot.captured = pio_in_;
  // The drive read what the sectors held when it took the command (it runs commands
  // ahead); the VM looks only after the completion, as it does on the rig.
  if (sectors_to_ram)
    for (size_t i = 0; i < read_words_.size(); ++i)
      render_sector(read_words_[i], lba + i, data_window_.data() + off + i * drive::ata::kSectorBytes);
  // IDENTIFY and log pages land in RAM where the descriptor said.
  if (data_in_to_ram && off < data_window_.size())
    std::memcpy(data_window_.data() + off, pio_in_.data(),
                std::min<size_t>(pio_in_.size(), data_window_.size() - off));
}

// The bytes of a sector holding content word `word`, as the rig's DMA would land them.
void EngineModel::render_sector(uint32_t word, uint64_t lba, uint8_t* out) const {
  if (!styles_.render(word, lba, out)) drive_.ssd().content().read_bytes(lba, out);
}

// Sectors whose data crossed the wire in Data FISes, as the gateware counts them
// (engine_if.h's data_dwords / 128): all of them when the command succeeded; a read that
// failed sent the good sectors before its UNC sector, or up to the end of the Data FIS that
// failed its CRC (as the RTL device side sends them, sim/device/src/command_data.cc); a
// write that failed its CRC took data up to and including that FIS. A DSM's are its range
// list's blocks, not the LBAs it trimmed (which the Drive's sectors say).
uint32_t EngineModel::sectors_moved(const fisrig_cmd_desc& d, const drive::Completion& c) {
  if (!c.t_data_end) return 0;
  bool dsm = c.command == ata::kDataSetManagement || c.command == ata::kSendFpdmaQueued;
  if (dsm) return sectors_of(d);
  if (c.ok()) return c.sectors;
  uint64_t lba = lba_of(d);
  if (!mismatch::sized(d.protocol) || c.lba < lba) return 0;
  uint64_t n = sectors_of(d), good = c.lba - lba;
  if (c.error & ata::kErrorIcrc) return uint32_t(std::min<uint64_t>(n, good + kSectorsPerDataFis));
  if (c.error & ata::kErrorUnc) return uint32_t(std::min<uint64_t>(n, good));
  return 0;
}

uint64_t EngineModel::record_stall_ticks(uint64_t status_tick, uint8_t protocol) const {
  // The CPU busy: its clock ahead of the engine's, whose events up to it are handled before
  // the CPU looks again. Reaping from the reap's start (its look at the ring) to its end;
  // building descriptors otherwise.
  if (now_ >= cpu_ns_ || protocol != FISRIG_PROTO_FPDMA_IN) return 0;
  const bool reaping = now_ >= reap_from_ && now_ < reap_to();
  // Spread as on the rig, by a draw fixed by where in the CPU's work the status came (the
  // same records every run, and the same again where the whole schedule repeats).
  const uint64_t draw = ((status_tick - ns_to_ticks(reap_from_)) * 0x9E3779B97F4A7C15ull) >> 40;
  const uint64_t mean = reaping ? WireStamps::kRecordStallReapingTicks : WireStamps::kRecordStallBuildingTicks;
  const uint64_t j = reaping ? WireStamps::kRecordStallReapingSpread : WireStamps::kRecordStallBuildingSpread;
  return mean - j + draw % (2 * j + 1);
}

void EngineModel::deliver(const drive::Completion& c) {
  namespace fd = drive::fis_dwords;
  if (c.user_tag == kRecoveryTag) return recovered(c);
  uint8_t s = uint8_t(c.user_tag & 0xFF);
  Slot& slot = slots_[s];
  if (!busy(s) || slot.generation != (c.user_tag >> 8)) return;  // timed out earlier
  if (slot.ends_prepared) return;  // not by the drive's status (protocol_mismatch.h)
  // Stamped by the FISes of the drive's answer; the descriptor's protocol asked for its length.
  const uint8_t proto = slot.answer;
  fisrig_cpl_record r{};
  r.user_tag = slot.desc.user_tag;
  r.status = c.status;
  r.error = c.error;
  r.result = c.aborted_by_ncq_error ? FISRIG_RESULT_NCQ_ABORTED
             : c.ok()               ? FISRIG_RESULT_OK
                                    : FISRIG_RESULT_ATA_ERROR;
  // The D2H's LBA field, as the gateware records it: the device sends 0 on success unless
  // the command's LBA is an output (SMART RETURN STATUS); a PIO-in command that succeeded
  // ends with its PIO Setup's E_Status (no LBA); an SDB carries none; the failing NCQ
  // command's comes from log 10h, which keeps the Drive's; an aborted one has none.
  bool pio_in_ok = proto == FISRIG_PROTO_PIO_IN && c.ok() && c.t_data_start;
  bool lba_sent = c.queued ? !c.ok() && !c.aborted_by_ncq_error : !pio_in_ok && (!c.ok() || c.lba_is_output);
  put_lba(r.lba, lba_sent ? c.lba : 0);
  if (pio_in_ok) r.error = 0;
  fisrig_cmd_desc answered = slot.desc;
  answered.protocol = proto;
  uint32_t moved = sectors_moved(answered, c);
  r.sectors = moved;
  r.data_dwords = moved * (ata::kSectorBytes / 4);
  // Moved other than a DMA or FPDMA descriptor asked for (engine/records.py).
  if (r.result == FISRIG_RESULT_OK && mismatch::sized(slot.desc.protocol) &&
      r.data_dwords != mismatch::asked_dwords(slot.desc))
    r.result = FISRIG_RESULT_LENGTH;
  // Every stamp is where the FIS's first dword (or the data dword) crossed the wire inside
  // the drive's reservation for it (WireStamps). The Drive's t_accept, t_data_start and
  // t_complete are the ends of the releasing D2H, of the setup FIS (NCQ: DMA Setup; DMA
  // out: the first DMA Activate; PIO: PIO Setup) and of the status FIS.
  r.ts_submit = slot.ts_submit;
  r.ts_h2d = slot.ts_h2d;
  r.ts_accept = c.queued && c.t_accept ? wire_.first_dword(c.t_accept, fd::kRegD2H) : 0;
  uint32_t setup = setup_dwords(proto);
  r.ts_setup = setup && c.t_data_start ? wire_.first_dword(c.t_data_start, setup) : 0;
  r.ts_data_first = c.t_data_fis ? wire_.first_data_dword(c.t_data_fis) : 0;
  r.ts_data_last = c.t_data_end ? wire_.last_data_dword(c.t_data_end) : 0;
  if (pio_in_ok) {
    // Its last data dword (engine_if.h): the PIO Setup before that Data FIS carried the
    // ending status, and no D2H follows.
    r.ts_status = r.ts_data_last;
  } else if (c.queued && c.aborted_by_ncq_error && c.t_complete == c.t_arrive) {
    r.ts_status = ns_to_ticks(c.t_complete);  // sent into a halted queue: no FIS of its own
  } else {
    r.ts_status = wire_.first_dword(c.t_complete, c.queued ? fd::kSetDeviceBits : fd::kRegD2H);
  }
  if (capture_ && r.result == FISRIG_RESULT_OK && !slot.captured.empty()) {
    std::fwrite(slot.captured.data(), 1, slot.captured.size(), capture_);
    slot.captured.clear();
  }
  if (c.queued && (c.aborted_by_ncq_error || !c.ok()) && hold_for_recovery(s, c, r)) return;
  // The sequencer writes the record before it takes another descriptor (WireStamps), the
  // first of a queued read's status later while the CPU is busy (record_stall_ticks).
  const uint64_t records_from = r.ts_status + WireStamps::kStatusToRecordTicks;
  records_until_ = std::max(records_until_, records_from) + WireStamps::kRecordTicks +
                   (records_until_ < records_from ? record_stall_ticks(r.ts_status, proto) : 0);
  issue_known_ = false;
  free_slot(s);
  complete(s, r);
}

void EngineModel::prepare_mismatch_end(uint8_t s, const drive::Completion& c) {
  namespace fd = drive::fis_dwords;
  Slot& slot = slots_[s];
  const uint8_t host = slot.desc.protocol, answer = slot.answer;
  const mismatch::End end = mismatch::end_of(host, answer, c);
  if (end == mismatch::End::kAsAnswered) return;
  fisrig_cpl_record& r = slot.ends_as;
  r = fisrig_cpl_record{};
  r.user_tag = slot.desc.user_tag;
  r.ts_submit = slot.ts_submit;
  r.ts_h2d = slot.ts_h2d;
  slot.ends_prepared = true;
  if (end == mismatch::End::kAtRelease) {
    // The D2H that released it has BSY clear: it ends a non-queued protocol, having moved
    // nothing; its DMA Setup, data and SDB come later for no one.
    r.result = mismatch::sized(host) ? FISRIG_RESULT_LENGTH : FISRIG_RESULT_OK;
    r.status = ata::kStatusDrdy;
    r.ts_status = wire_.first_dword(c.t_accept, fd::kRegD2H);
    deadlines_[s] = c.t_accept;
    next_deadline_ = std::min(next_deadline_, c.t_accept);
    return;
  }
  // TIMEOUT at the descriptor's deadline, with the stamps of what crossed before it (the
  // timeout sets ts_status).
  r.result = FISRIG_RESULT_TIMEOUT;
  if (mismatch::host_sends_no_data(host, answer)) {
    // The drive's DMA Activate; a queued protocol sends nothing for it, another non-queued
    // one an empty Data FIS, and the drive asks again, until the timeout.
    r.ts_setup = wire_.first_dword(c.t_data_start, fd::kDmaActivate);
    if (!mismatch::queued(host)) {
      // The rig's empty Data FIS needs no data from RAM: on the rtl run its first dword came
      // 106 ns after the DMA Activate's, a full one's 114 (tests/rtl/test_raw_mismatch.py),
      // so half the turnaround a full one takes here (WireStamps::kHostDataTurnaroundTicks).
      const drive::LinkTiming& link = drive_.link_timing();
      const SimTime turn = ticks_to_ns(WireStamps::kHostDataTurnaroundTicks / 2);
      const SimTime empty = link.fis_ns(fd::kDataHeader);
      const SimTime period = empty + turn + link.fis_ns(fd::kDmaActivate) + turn;
      const SimTime first = c.t_data_start + turn, deadline = deadlines_[s];
      const SimTime last = deadline > first + empty ? first + (deadline - first - empty) / period * period : first;
      r.ts_data_first = wire_.first_data_dword(first);
      r.ts_data_last = std::max(r.ts_data_first, wire_.last_data_dword(last + empty));
    }
  } else if (mismatch::queued(host) && c.t_complete) {
    // A non-queued answer: its D2H was taken for the release, and the SDB never comes.
    r.ts_accept = wire_.first_dword(c.t_complete, fd::kRegD2H);
    if (uint32_t setup = setup_dwords(answer); setup && c.t_data_start)
      r.ts_setup = wire_.first_dword(c.t_data_start, setup);
    r.ts_data_first = c.t_data_fis ? wire_.first_data_dword(c.t_data_fis) : 0;
    r.ts_data_last = c.t_data_end ? wire_.last_data_dword(c.t_data_end) : 0;
    fisrig_cmd_desc answered = slot.desc;
    answered.protocol = answer;
    r.sectors = sectors_moved(answered, c);
    r.data_dwords = r.sectors * (ata::kSectorBytes / 4);
  }
}

bool EngineModel::end_prepared(SimTime t) {
  for (uint32_t m = busy_mask_; m; m &= m - 1) {
    const uint8_t s = uint8_t(__builtin_ctz(m));
    Slot& slot = slots_[s];
    if (!slot.ends_prepared || slot.ends_as.result == FISRIG_RESULT_TIMEOUT || deadlines_[s] > t) continue;
    now_ = std::max(now_, t);
    fisrig_cpl_record r = slot.ends_as;
    records_until_ = std::max(records_until_, r.ts_status + WireStamps::kStatusToRecordTicks) +
                     WireStamps::kRecordTicks;
    issue_known_ = false;
    free_slot(s);
    complete(s, r);
    return true;
  }
  return false;
}

}  // namespace fisrig::model
