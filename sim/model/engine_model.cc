#include "engine_model.h"

#include "protocol_mismatch.h"

#include <algorithm>
#include <cstring>

extern "C" {
#include "fisrig/pattern.h"
}

namespace fisrig::model {

namespace ata = drive::ata;

namespace {
bool is_queued(const fisrig_cmd_desc& d) { return mismatch::queued(d.protocol); }
uint64_t lba_of(const fisrig_cmd_desc& d) {
  uint64_t v = 0;
  for (int i = 5; i >= 0; --i) v = (v << 8) | d.lba[i];
  return v;
}
void put_lba(uint8_t out[6], uint64_t v) {
  for (int i = 0; i < 6; ++i) out[i] = uint8_t(v >> (8 * i));
}
uint32_t sectors_of(const fisrig_cmd_desc& d) {
  uint32_t n = is_queued(d) ? d.features : d.count;
  return n ? n : 65536;
}
// The dwords of the FIS that asks for a protocol's data (the ts_setup stamp's); 0 for READ
// DMA EXT and non-data commands, which have none.
uint32_t setup_dwords(uint8_t proto) {
  namespace fd = drive::fis_dwords;
  switch (proto) {
    case FISRIG_PROTO_FPDMA_IN:
    case FISRIG_PROTO_FPDMA_OUT: return fd::kDmaSetup;
    case FISRIG_PROTO_DMA_OUT: return fd::kDmaActivate;
    case FISRIG_PROTO_PIO_IN:
    case FISRIG_PROTO_PIO_OUT: return fd::kPioSetup;
    default: return 0;
  }
}
// A descriptor's timeout, the engine's default when it says 0 (engine_if.h).
uint64_t timeout_ticks_of(const fisrig_cmd_desc& d) {
  return d.timeout_ticks ? d.timeout_ticks : EngineModel::kDefaultTimeoutTicks;
}
constexpr uint64_t kSectorsPerDataFis = drive::fis_dwords::kMaxDataPayload / (drive::ata::kSectorBytes / 4);
}  // namespace

EngineModel::EngineModel(drive::Drive& d)
    : drive_(d), wire_(d.config().interface), sq_(kSqEntries), cq_(kCqEntries), cq_ns_(kCqEntries), data_window_(FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES) {
  // The rig's reaction to the drive's request for data (WireStamps::kHostDataTurnaround).
  drive_.set_host_data_turnaround(ticks_to_ns(WireStamps::kHostDataTurnaroundTicks));
  drive_.log_data_fises(&fis_log_);
  std::fill(std::begin(deadlines_), std::end(deadlines_), drive::kNever);
}

fisrig_engine_ops EngineModel::ops() {
  fisrig_engine_ops o{};
  o.ctx = this;
  o.sq = sq_.data();
  o.sq_entries = kSqEntries;
  o.cq = cq_.data();
  o.cq_entries = kCqEntries;
  o.data_window = data_window_.data();
  o.data_window_bytes = uint32_t(data_window_.size());
  o.doorbell = &EngineModel::c_doorbell;
  o.sq_head = &EngineModel::c_sq_head;
  o.cq_tail = &EngineModel::c_cq_tail;
  o.cq_consumed = &EngineModel::c_cq_consumed;
  o.now = &EngineModel::c_now;
  o.wait = &EngineModel::c_wait;
  return o;
}

void EngineModel::c_doorbell(void* ctx, uint32_t tail) { static_cast<EngineModel*>(ctx)->doorbell(tail); }
uint32_t EngineModel::c_sq_head(void* ctx) { return static_cast<EngineModel*>(ctx)->sq_head_; }
uint32_t EngineModel::c_cq_tail(void* ctx) {
  auto* m = static_cast<EngineModel*>(ctx);
  if (m->cpu_ns_ > m->now_) m->run_until(m->cpu_ns_);  // what has ended by the CPU's time
  return m->cq_tail_;
}
void EngineModel::c_cq_consumed(void* ctx, uint32_t head) {
  auto* m = static_cast<EngineModel*>(ctx);
  if (head == m->cq_head_) return;
  SimTime seen = m->cq_ns_[(head - 1) & (kCqEntries - 1)] + VmCpuTime::kSeeNs;
  if (!m->busy_mask_ && m->waiting_.empty() && seen > m->cpu_ns_) seen += VmCpuTime::kIdleWakeNs;
  m->reap_from_ = std::max({m->cpu_ns_, m->now_, seen});
  m->reap_ns_ = SimTime(head - m->cq_head_) * VmCpuTime::kReapNs;
  m->cpu_ns_ = m->reap_from_ + m->reap_ns_;
  m->cq_head_ = head;
}
uint64_t EngineModel::c_now(void* ctx) {
  auto* m = static_cast<EngineModel*>(ctx);
  return ns_to_ticks(std::max(m->now_, m->cpu_ns_));
}
void EngineModel::c_wait(void* ctx, uint64_t until) { static_cast<EngineModel*>(ctx)->wait(until); }

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
  static_assert(FISRIG_DATA_ZEROS == FISRIG_PATTERN_ZEROS && FISRIG_DATA_STAMP == FISRIG_PATTERN_STAMP &&
                FISRIG_DATA_LFSR == FISRIG_PATTERN_LFSR, "engine_if.h's data sources are pattern.h's kinds");
  int kind = d.data_source == FISRIG_DATA_NONE ? FISRIG_PATTERN_ZEROS : d.data_source;
  range_list_.resize(size_t(blocks) * 512);
  uint32_t sector[FISRIG_SECTOR_DWORDS];
  for (uint32_t i = 0; i < blocks; ++i) {
    fisrig_pattern_sector(kind, lba_of(d) + i, d.data_word, d.compress_pct, sector);
    std::memcpy(range_list_.data() + size_t(i) * 512, sector, 512);
  }
  cmd.data_out = range_list_.data();
  cmd.data_out_bytes = uint32_t(range_list_.size());
}

void EngineModel::doorbell(uint32_t tail) {
  SimTime cost = 0;
  for (uint32_t i = sq_head_; i != tail; ++i) cost += VmCpuTime::submit_ns(sq_[i & (kSqEntries - 1)]);
  cpu_ns_ = std::max(cpu_ns_, now_) + cost;
  run_until(cpu_ns_);
  while (sq_head_ != tail) waiting_.push_back(sq_[sq_head_++ & (kSqEntries - 1)]);
  issue_waiting();
}

void EngineModel::issue_waiting() {
  issue_at_ = drive::kNever;
  while (!waiting_.empty() && !recovery_.on) {  // nothing new while an NCQ error recovers
    const fisrig_cmd_desc& d = waiting_.front();
    if (drive_.link_drop_at() != drive::kNever) return;  // the link falls: nothing more goes first
    if (d.protocol == FISRIG_PROTO_POWER) {
      power(d);
    } else if (d.protocol == FISRIG_PROTO_LINK) {
      link(d);
    } else if (is_queued(d)) {
      if (nonqueued_slot_ >= 0 || busy_mask_ == ~0u) return;
      if (!issue_known_) issue_time_ = queued_issue_time(), issue_known_ = true;
      if (issue_time_ > now_) {
        issue_at_ = issue_time_;  // taken then (process_next_event), if nothing changed meanwhile
        return;
      }
      start(d);
    } else {
      if (busy_mask_) return;  // a non-queued command runs alone
      start(d);
    }
    waiting_.pop_front();
  }
}

SimTime EngineModel::queued_issue_time() {
  SimTime t = std::max(now_, ticks_to_ns(records_until_));
  if (accept_slot_ >= 0 && busy(accept_slot_)) t = std::max(t, slots_[accept_slot_].accept_end);
  // Out of every open data phase, in order of their start: one that ends may run into the
  // next. Phases over by now never hold an H2D back again: they leave the list.
  while (phase_head_ < phase_tail_ && phases_[phase_head_].close <= now_) ++phase_head_;
  for (uint32_t i = phase_head_; i < phase_tail_ && phases_[i].open <= t; ++i)
    if (t < phases_[i].close) t = phases_[i].close;
  return t;
}

void EngineModel::book_phase(uint8_t s, SimTime open, SimTime close) {
  if (phase_tail_ == kPhaseRoom) {  // keep only what can still hold an H2D back: at most a slot's each
    uint32_t n = 0;
    for (uint32_t i = phase_head_; i < phase_tail_; ++i)
      if (phases_[i].close > now_) phases_[n++] = phases_[i];
    phase_head_ = 0, phase_tail_ = n;
  }
  // In its place by its start: the drive books into gaps on its wire, so a phase often starts
  // before several booked earlier (about nine a command in model.instructions_per_cmd's run,
  // 92 instructions an insertion when shifted one by one).
  BookedPhase* at = phases_ + phase_tail_;
  if (at != phases_ + phase_head_ && at[-1].open > open) {
    at = std::upper_bound(phases_ + phase_head_, at, open,
                          [](SimTime o, const BookedPhase& p) { return o < p.open; });
    std::memmove(at + 1, at, (phases_ + phase_tail_ - at) * sizeof *at);
  }
  ++phase_tail_;
  *at = BookedPhase{open, close, s};
  phase_close_[s] = close;
}

// The drive moved its bookings for a queued H2D that went first (Drive::receive_h2d): the
// copies taken from them move too.
void EngineModel::move_bookings(const std::vector<drive::LinkTiming::Move>& moves) {
  const drive::LinkTiming::Mover mv(moves);
  for (uint32_t i = phase_head_; i < phase_tail_; ++i) mv(phases_[i].open), mv(phases_[i].close);
  for (uint32_t m = busy_mask_; m; m &= m - 1) {  // a free slot's are not looked at again
    const uint32_t s = uint32_t(__builtin_ctz(m));
    Slot& slot = slots_[s];
    mv(phase_close_[s]);
    mv(slot.accept_end);
    for (drive::Drive::DataFis& f : slot.fises) mv(f.start), mv(f.end);
  }
}

// A slot freed before its phase was over (a timeout, a power cut, an abort): its phase
// no longer holds the wire. (Freed after it, as a completion frees it, it is left to leave
// from the front.)
void EngineModel::drop_phase(uint8_t s) {
  for (uint32_t i = phase_head_; i < phase_tail_; ++i)
    if (phases_[i].slot == s && phases_[i].close == phase_close_[s]) phases_[i].close = 0;
  phase_close_[s] = 0;
}

void EngineModel::end_at_once(const fisrig_cmd_desc& d, uint8_t result) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.result = result;
  r.ts_submit = r.ts_status = now_ticks();
  complete(0, r);
}

void EngineModel::start(const fisrig_cmd_desc& d) {
  // Data past the RAM window the firmware gave the engine: refused, nothing on the wire.
  if (d.data_source == FISRIG_DATA_RAM && d.data_word + fisrig_desc_ram_bytes(&d) > data_window_.size())
    return end_at_once(d, FISRIG_RESULT_REFUSED);
  // No link: the engine fails the descriptor at once rather than time it out.
  if (!drive_.powered() || now_ < link_back_at_) return end_at_once(d, FISRIG_RESULT_LINK_LOST);
  // The drive's page-table entry for this LBA is a cache miss at random LBAs: start
  // loading it before the slot and link bookkeeping. The main job's model run: 33.6 s of
  // CPU without this, 24.4 s with it (the miss was 22% of its profile).
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
      cmd.payload.kind = drive::WritePayload::Kind::kZeros;
      break;
    case FISRIG_DATA_STAMP:
    case FISRIG_DATA_LFSR:
      // The pattern generator's sector is fully described by its word and the LBA.
      cmd.payload.kind = drive::WritePayload::Kind::kWord;
      cmd.payload.word = 1 + d.data_word % drive::kMaxUserWord;
      cmd.payload.compress_pct = d.data_source == FISRIG_DATA_LFSR || !d.compress_pct ? 100 : d.compress_pct;
      if (remember_styles_) {
        uint16_t style = uint16_t(d.data_source << 8 | std::min<uint8_t>(d.compress_pct, 100));
        if (style != (FISRIG_DATA_STAMP << 8 | 100)) styles_[cmd.payload.word] = style;
        else styles_.erase(cmd.payload.word);
      }
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
  uint32_t dw[FISRIG_SECTOR_DWORDS];
  uint32_t w = drive::is_damaged(word) ? word & ~drive::kDamagedBit : word;
  if (w == drive::kZeroWord) {
    std::memset(out, 0, drive::ata::kSectorBytes);
    return;
  }
  if (w == drive::kLiteralWord || w > drive::kMaxUserWord) {
    drive_.content().read_bytes(lba, out);
    return;
  }
  auto it = styles_.find(w);
  uint16_t style = it == styles_.end() ? uint16_t(FISRIG_DATA_STAMP << 8 | 100) : it->second;
  fisrig_pattern_sector(style >> 8, lba, w - 1, uint8_t(style & 0xFF), dw);
  if (drive::is_damaged(word)) drive::damage_sector(dw, lba);
  for (uint32_t i = 0; i < FISRIG_SECTOR_DWORDS; ++i)
    for (int b = 0; b < 4; ++b) out[4 * i + b] = uint8_t(dw[i] >> (8 * b));
}

// ---- completions ----

void EngineModel::push_cq(const fisrig_cpl_record& r) {
  cq_ns_[cq_tail_ & (kCqEntries - 1)] = now_;
  cq_[cq_tail_++ & (kCqEntries - 1)] = r;
}

void EngineModel::complete(uint8_t s, fisrig_cpl_record r) {
  r.slot = s;
  push_cq(r);
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

void EngineModel::free_slot(uint8_t s) {
  busy_mask_ &= ~(1u << s);
  if (deadlines_[s] == next_deadline_) next_deadline_known_ = false;
  deadlines_[s] = drive::kNever;
  if (phase_close_[s] > now_) drop_phase(s);
  if (nonqueued_slot_ == s) nonqueued_slot_ = -1;
}

// The failing queued command and those the error aborted: their records wait for the
// engine's log read, which the first of them starts when the error SDB is in (the gateware
// sends it as soon as no FIS is pending). Their slots stay taken until then.
bool EngineModel::hold_for_recovery(uint8_t s, const drive::Completion& c, const fisrig_cpl_record& r) {
  if (!recovery_.on) {
    const drive::NcqErrorLog& log = drive_.ncq_error_log();
    if (!log.valid) return false;  // no error to read back: the record stands as it is
    recovery_.on = true;
    recovery_.log = log;
    recovery_.held.clear();
    drive::AtaCommand cmd;
    cmd.command = ata::kReadLogExt;
    cmd.lba = ata::kLogNcqError;
    cmd.count = 1;
    cmd.device = 0x40;
    cmd.user_tag = kRecoveryTag;
    log_page_.clear();
    cmd.pio_in = &log_page_;
    SimTime arrive = drive_.receive_h2d(std::max(now_, c.t_complete) + ticks_to_ns(WireStamps::kNcqRecoveryTicks));
    uint64_t seq = drive_.next_completion_seq();
    drive_.submit(cmd, arrive);
    if (armed_.left)
      note_events(wire_.first_dword(arrive, drive::fis_dwords::kRegH2D), drive_.pending_completion(seq),
                  FISRIG_PROTO_PIO_IN, fis_log_);
    fis_log_.clear();
  }
  recovery_.held.emplace_back(s, r);
  return true;
}

// The log is in: the failing tag ends ATA_ERROR with the log's status, error and LBA, every
// other held command NCQ_ABORTED (all of them if the log read failed, or the error was a
// non-queued command's), stamped where the gateware's RECOVERED writes them.
void EngineModel::recovered(const drive::Completion& log) {
  if (!recovery_.on) return;  // a power cut or COMRESET ended the held commands already
  const drive::NcqErrorLog& e = recovery_.log;
  uint64_t at = log.t_data_end ? wire_.last_data_dword(log.t_data_end) : ns_to_ticks(log.t_complete);
  for (auto& [s, r] : recovery_.held) {
    bool failing = log.ok() && !e.non_queued && s == e.tag;
    if (failing) {
      r.result = FISRIG_RESULT_ATA_ERROR;
      r.status = e.status;
      r.error = e.error;
      put_lba(r.lba, e.lba);
    } else {
      // As the gateware's sweep: the status and error of the error SDB that ended it.
      r.result = FISRIG_RESULT_NCQ_ABORTED;
      r.status = e.status;
      r.error = e.error;
    }
    r.ts_status = at;
    free_slot(s);
    issue_known_ = false;
    complete(s, r);
  }
  recovery_ = Recovery{};
}

// What slot s's command had on the wire by t, from whole frames as the gateware's stamps
// and dword counts are (engine_if.h): its H2D once the device had it, the releasing D2H
// and setup FIS once they had ended, the Data FISes that had ended; and its bits of the
// slots' masks (struct fisrig_cut_record).
void EngineModel::crossed_by(uint8_t s, SimTime t, fisrig_cpl_record& r, CutMasks& m) const {
  namespace fd = drive::fis_dwords;
  const Slot& slot = slots_[s];
  r = fisrig_cpl_record{};
  r.user_tag = slot.desc.user_tag;
  r.ts_submit = slot.ts_submit;
  const uint32_t bit = 1u << s;
  if (slot.h2d_end > t) return;
  r.ts_h2d = slot.ts_h2d;
  m.issued |= bit;
  // A command held for NCQ recovery had its completion already (its stamps are in the
  // record held for it); any other's the drive still holds, timed ahead.
  const drive::Completion* c = drive_.pending_completion(slot.seq);
  for (const auto& [hs, hr] : recovery_.held)
    if (hs == s) {
      r.ts_accept = hr.ts_accept, r.ts_setup = hr.ts_setup;
      r.ts_data_first = hr.ts_data_first, r.ts_data_last = hr.ts_data_last;
      r.sectors = hr.sectors, r.data_dwords = hr.data_dwords;
    }
  if (!c) {
    m.queued |= r.ts_accept ? bit : 0;
    m.data |= r.data_dwords ? bit : 0;
    return;
  }
  if (c->queued && c->t_accept && c->t_accept <= t) {
    r.ts_accept = wire_.first_dword(c->t_accept, fd::kRegD2H);
    m.queued |= bit;
  }
  uint32_t setup = setup_dwords(slot.desc.protocol);
  if (setup && c->t_data_start && c->t_data_start <= t) r.ts_setup = wire_.first_dword(c->t_data_start, setup);
  uint32_t dwords = 0;
  SimTime last = 0;
  for (const auto& f : slot.fises)
    if (f.end <= t) dwords += f.dwords, last = f.end;
  if (dwords) {
    r.ts_data_first = wire_.first_data_dword(c->t_data_fis);
    r.ts_data_last = wire_.last_data_dword(last);
    r.data_dwords = dwords;
    r.sectors = dwords / (ata::kSectorBytes / 4);
    m.data |= bit;
  }
}

void EngineModel::write_cut_record(SimTime t, uint64_t trigger_tick) {
  fisrig_cut_record cut{};
  cut.user_tag = FISRIG_USER_TAG_EVENT;
  cut.slot = FISRIG_EVENT_REC_POWER_CUT;
  cut.result = FISRIG_RESULT_LINK_LOST;
  cut.ts_submit = cut.ts_status = ns_to_ticks(t);
  cut.ts_trigger = trigger_tick;
  CutMasks m;
  fisrig_cpl_record scratch;
  for (uint8_t s = 0; s < FISRIG_ENGINE_SLOTS; ++s)
    if (busy(s)) crossed_by(s, t, scratch, m);
  cut.slots_issued = m.issued;
  cut.slots_queued = m.queued;
  cut.slots_data = m.data;
  cut.slots_done = 0;  // the model writes a record the moment its status comes
  fisrig_cpl_record r;
  std::memcpy(&r, &cut, sizeof r);
  push_cq(r);
}

void EngineModel::lose_outstanding(SimTime t, uint8_t result) {
  CutMasks m;
  for (uint8_t s = 0; s < FISRIG_ENGINE_SLOTS; ++s) {
    if (!busy(s)) continue;
    fisrig_cpl_record r;
    crossed_by(s, t, r, m);
    free_slot(s);
    r.result = result;
    r.ts_status = ns_to_ticks(t);
    complete(s, r);
  }
  issue_known_ = false;
  recovery_ = Recovery{};  // the held records went out above, LINK_LOST
}

SimTime EngineModel::next_deadline() const {
  if (!next_deadline_known_) {
    next_deadline_ = *std::min_element(std::begin(deadlines_), std::end(deadlines_));
    next_deadline_known_ = true;
  }
  return next_deadline_;
}

// ---- the power controller and the link ----

void EngineModel::power(const fisrig_cmd_desc& d) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.ts_submit = now_ticks();
  // Rails off or on from the program disarm a cut still waiting for its event, as the
  // gateware's power controller does (engine/power.py): a cut armed for a FLUSH that the
  // plan's own power-off overtook must not fire later, in the next power-on or verify.
  if (d.command == FISRIG_POWER_OFF || d.command == FISRIG_POWER_ON) armed_ = Armed{};
  switch (d.command) {
    case FISRIG_POWER_OFF:
      off_edge(now_);
      r.ts_status = now_ticks();
      break;
    case FISRIG_POWER_ON:
      loss_at_ = drive::kNever;  // an off edge still staged is dropped, as the gateware's
      if (drive_.powered()) {
        // The drive never lost power (no pin it runs on was switched, or not yet): the
        // rig waits for a signature that does not come, as the gateware does.
        now_ += ticks_to_ns(timeout_ticks_of(d));
        r.result = FISRIG_RESULT_TIMEOUT;
        r.ts_status = now_ticks();
        break;
      }
      sample_through(now_);
      drive_.power_on(power_back_at(now_));
      r.ts_status = ns_to_ticks(drive_.ready_at());  // link up, signature received
      if (drive_.ready_at() > now_ + ticks_to_ns(timeout_ticks_of(d))) {
        // Not back within the descriptor's timeout: as the gateware's slot, TIMEOUT then.
        r.result = FISRIG_RESULT_TIMEOUT;
        r.ts_status = now_ticks() + timeout_ticks_of(d);
      }
      break;
    case FISRIG_POWER_STAGE:
      if (d.features > FISRIG_PIN_P3 || d.count > 1) {
        r.result = FISRIG_RESULT_REFUSED;
      } else {
        stage_.used[d.features] = d.count == 1;
        stage_.off_ticks[d.features] = d.timeout_ticks;
        stage_.on_ticks[d.features] = d.data_word;
      }
      r.ts_status = now_ticks();
      break;
    case FISRIG_POWER_OFF_AT_EVENT:
      armed_ = Armed{};
      armed_.on = true;
      armed_.event = d.features;
      armed_.delay_ticks = d.timeout_ticks;
      armed_.from_tick = now_ticks();
      if (d.features == FISRIG_EVENT_TIME) {
        // A cut at a time: the delay runs from the arming (this record's ts_submit), as the
        // gateware's power controller counts it, tick for tick.
        armed_.trigger_tick = now_ticks();
        armed_.cut_at = ticks_to_ns(now_ticks() + d.timeout_ticks);
      } else {
        armed_.left = std::max<uint32_t>(1, d.count);
        // Commands under way count with what they have still to send.
        for (uint32_t b = busy_mask_; b; b &= b - 1) {
          const Slot& slot = slots_[__builtin_ctz(b)];
          note_events(slot.ts_h2d, drive_.pending_completion(slot.seq), slot.desc.protocol, slot.fises);
        }
      }
      r.ts_status = now_ticks();
      break;
    case FISRIG_POWER_SAMPLE:
      sample(d, r);
      break;
    default:
      r.result = FISRIG_RESULT_REFUSED;
  }
  complete(0, r);
}

// ---- the current sampler ----

void EngineModel::sample(const fisrig_cmd_desc& d, fisrig_cpl_record& r) {
  r.ts_status = now_ticks();
  if (d.count > 1) {
    r.result = FISRIG_RESULT_REFUSED;
    return;
  }
  // What was taken before this tick goes out first, as the gateware's stop or restart
  // flushes it (a sample due on this very tick is the restart's first, or not taken).
  if (sampler_.on) {
    sample_through(ticks_to_ns(now_ticks()) - 1);
    if (sampler_.taken) write_current_record();
  }
  sampler_.on = d.count == 1;
  sampler_.period = d.timeout_ticks ? d.timeout_ticks : FISRIG_CURRENT_PERIOD_TICKS;
  sampler_.first_tick = now_ticks();
  sampler_.taken = 0;
  if (sampler_.on) drive_.current_ma(now_);  // the drive keeps its NAND activity from here on
}

void EngineModel::sample_through(SimTime t) {
  if (!sampler_.on) return;
  for (;;) {
    uint64_t tick = sampler_.first_tick + sampler_.taken * sampler_.period;
    SimTime at = ticks_to_ns(tick);
    if (at > t) return;
    sampler_.ma[sampler_.taken++] = drive_.sensed_ma(at);
    if (sampler_.taken == FISRIG_CURRENT_SAMPLES) write_current_record();
  }
}

void EngineModel::write_current_record() {
  fisrig_current_record c{};
  c.user_tag = FISRIG_USER_TAG_EVENT;
  c.slot = FISRIG_EVENT_REC_CURRENT;
  c.result = FISRIG_RESULT_OK;
  c.samples = uint8_t(sampler_.taken);
  std::copy(sampler_.ma, sampler_.ma + sampler_.taken, c.ma);
  c.period_ticks = uint32_t(sampler_.period);
  c.ts_first = sampler_.first_tick;
  sampler_.first_tick += sampler_.taken * sampler_.period;
  sampler_.taken = 0;
  // A full ring drops the record, as the gateware's sampler does when the ring stays full:
  // the next one says so.
  if (cq_tail_ - cq_head_ >= kCqEntries) {
    if (sampler_.dropped != 255) ++sampler_.dropped;
    return;
  }
  c.dropped = sampler_.dropped;
  sampler_.dropped = 0;
  fisrig_cpl_record r;
  static_assert(sizeof r == sizeof c, "engine_if.h");
  std::memcpy(&r, &c, sizeof r);
  push_cq(r);
}

void EngineModel::link(const fisrig_cmd_desc& d) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.ts_submit = now_ticks();
  if (d.command == FISRIG_LINK_COMRESET) {
    lose_outstanding(now_, FISRIG_RESULT_LINK_LOST);
    drive_.comreset(now_);
    now_ = std::max(now_, drive_.ready_at());
  } else if (d.command == FISRIG_LINK_WAIT_UP) {
    // The wait's length is itself a result: a drive that does not come back within the
    // timeout (or at all: powered off, or dead) ends it TIMEOUT at the timeout.
    SimTime give_up = now_ + ticks_to_ns(timeout_ticks_of(d));
    if (drive_.powered() && drive_.ready_at() <= give_up) {
      now_ = std::max(now_, drive_.ready_at());
    } else {
      now_ = give_up;
      r.result = FISRIG_RESULT_TIMEOUT;
    }
  } else {
    r.result = FISRIG_RESULT_REFUSED;
  }
  r.ts_status = now_ticks();
  complete(0, r);
}

void EngineModel::note_events(uint64_t h2d_tick, const drive::Completion* c, uint8_t protocol,
                              const std::vector<drive::Drive::DataFis>& fises) {
  namespace fd = drive::fis_dwords;
  auto due = [this](uint64_t tick) {
    if (tick >= armed_.from_tick) armed_.due.push(tick);
  };
  switch (armed_.event) {
    case FISRIG_EVENT_H2D: due(h2d_tick); return;
    case FISRIG_EVENT_DATA:
      for (const auto& f : fises) due(wire_.first_data_dword(f.start));
      return;
    default: break;
  }
  // The device's FISes: a command aborted into a halted queue sent none of its own, and
  // a PIO-in command that succeeded ends in its PIO Setup, with no D2H.
  if (!c || (c->aborted_by_ncq_error && c->t_complete == c->t_arrive)) return;
  bool pio_in_ok = protocol == FISRIG_PROTO_PIO_IN && c->ok() && c->t_data_start;
  switch (armed_.event) {
    case FISRIG_EVENT_D2H:
      if (c->queued && c->t_accept) due(wire_.first_dword(c->t_accept, fd::kRegD2H));
      if (!c->queued && !pio_in_ok && c->t_complete) due(wire_.first_dword(c->t_complete, fd::kRegD2H));
      break;
    case FISRIG_EVENT_SDB:
      if (c->queued && c->t_complete) due(wire_.first_dword(c->t_complete, fd::kSetDeviceBits));
      break;
    case FISRIG_EVENT_DMA_SETUP:
      if (c->queued && c->t_data_start) due(wire_.first_dword(c->t_data_start, fd::kDmaSetup));
      break;
    default: break;
  }
}

void EngineModel::cut_if_due(SimTime t) {
  if (armed_.cut_at > t) return;
  SimTime cut = std::max(armed_.cut_at, now_);
  write_cut_record(cut, armed_.trigger_tick);
  armed_ = Armed{};
  now_ = cut;
  off_edge(cut);
}

void EngineModel::off_edge(SimTime t) {
  uint64_t first = UINT64_MAX;
  for (int pin = 0; pin < 4; ++pin)
    if (takes_power(pin)) first = std::min(first, stage_.off_ticks[pin]);
  loss_at_ = drive::kNever;
  if (first == UINT64_MAX) return;  // no pin the drive runs on switches: it keeps running
  SimTime at = ticks_to_ns(ns_to_ticks(t) + first);
  if (at > t) {
    loss_at_ = at;  // the drive runs on, and the link with it, until then
    return;
  }
  lose_power(t);
}

void EngineModel::lose_power(SimTime t) {
  sample_through(t);  // the samples up to t, with the power it still had
  lose_outstanding(t, FISRIG_RESULT_LINK_LOST);
  drive_.power_off(t);
}

SimTime EngineModel::power_back_at(SimTime t) const {
  uint64_t last = 0;
  for (int pin = 0; pin < 4; ++pin)
    if (takes_power(pin)) last = std::max(last, stage_.on_ticks[pin]);
  return ticks_to_ns(ns_to_ticks(t) + last);
}

// ---- time ----

// Handles the earliest event (at `next`): one at a time, so that the VM reaps and refills
// the queue between completions as the firmware does.
void EngineModel::process_next_event(SimTime next) {
  if (next == next_current_record()) {
    now_ = std::max(now_, next);
    sample_through(next);
  } else if (next == armed_.cut_at) {
    cut_if_due(next);
  } else if (next == drive_.link_drop_at()) {
    // The drive reset its port (link_drop_after_commands): the link falls, what was in
    // flight ends LINK_LOST, and it is down until the drive is ready again.
    now_ = std::max(now_, next);
    drive_.link_drop_seen();
    lose_outstanding(next, FISRIG_RESULT_LINK_LOST);
    link_back_at_ = drive_.ready_at();
  } else if (next == loss_at_) {
    // A staged off edge reached a pin the drive runs on.
    now_ = std::max(now_, next);
    loss_at_ = drive::kNever;
    lose_power(next);
  } else if (next == next_due()) {
    // The armed kind's next FIS crossed: the count-th sets the cut's tick.
    uint64_t tick = armed_.due.top();
    armed_.due.pop();
    now_ = std::max(now_, next);
    if (--armed_.left == 0) {
      armed_.trigger_tick = tick;
      armed_.cut_at = ticks_to_ns(tick + armed_.delay_ticks);
      armed_.due = {};
    }
  } else if (next == issue_at_) {
    now_ = std::max(now_, next);  // the queued descriptor waiting for it: issue_waiting below
  } else if (next == drive_.next_completion_time()) {
    drive::Completion c;
    drive_.pop_completion(c);
    now_ = std::max(now_, c.t_complete);
    deliver(c);
  } else if (end_prepared(next)) {
    // A queued command under a non-queued protocol ended at its releasing D2H.
  } else {
    // A slot past its timeout ends TIMEOUT and the others by a COMRESET, as the gateware's
    // sequencer does (TIMEOUT state): a drive that does not answer one command cannot be
    // trusted with the rest, and a hung drive answers nothing until it is reset. A late
    // answer from the drive is dropped with its queue.
    now_ = std::max(now_, next);
    for (uint8_t s = 0; s < FISRIG_ENGINE_SLOTS; ++s) {
      Slot& slot = slots_[s];
      if (!busy(s) || deadlines_[s] > now_) continue;
      // What crossed before, where the drive's answer left the rig waiting (protocol_mismatch.h).
      fisrig_cpl_record r = slot.ends_prepared ? slot.ends_as : fisrig_cpl_record{};
      r.user_tag = slot.desc.user_tag;
      r.result = FISRIG_RESULT_TIMEOUT;
      r.ts_submit = slot.ts_submit;
      r.ts_h2d = slot.ts_h2d;
      r.ts_status = now_ticks();
      free_slot(s);
      issue_known_ = false;
      complete(s, r);
      break;  // one a time, as the gateware's
    }
    lose_outstanding(now_, FISRIG_RESULT_LINK_LOST);
    drive_.comreset(now_);
    link_back_at_ = drive_.ready_at();  // what is sent meanwhile meets a link going through OOB
  }
  issue_waiting();
}

SimTime EngineModel::next_event() const {
  return std::min({drive_.next_completion_time(), next_deadline(), armed_.cut_at, next_due(), loss_at_,
                   drive_.link_drop_at(), next_current_record()});
}

void EngineModel::run_until(SimTime t) {
  for (SimTime next; (next = std::min(next_event(), issue_at_)) <= t;) process_next_event(next);
  if (now_ < t) {
    drive_.idle_until(t);
    now_ = t;
  }
}

// The VM found nothing to do: the engine runs to its next event (or `until`), and the CPU,
// idle meanwhile, is at the engine's time.
void EngineModel::wait(uint64_t until_ticks) {
  wait_engine(until_ticks);
  cpu_ns_ = std::max(cpu_ns_, now_);  // the CPU waited for the engine
}

void EngineModel::wait_engine(uint64_t until_ticks) {
  SimTime target = ticks_to_ns(until_ticks);
  SimTime next;
  for (;;) {
    next = next_event();
    // A descriptor taken before anything else happens gives the VM nothing to look at: taken
    // here, without a return to the VM's loop (about 90 instructions a command, callgrind).
    if (issue_at_ >= next || issue_at_ > target) break;
    now_ = std::max(now_, issue_at_);
    issue_waiting();
  }
  next = std::min(next, issue_at_);
  if (next <= target) {
    process_next_event(next);
    return;
  }
  drive_.idle_until(target);
  now_ = std::max(now_, target);
}

}  // namespace fisrig::model
