#include "engine_model.h"

#include <algorithm>
#include <cstring>

namespace fisrig::model {

namespace ata = drive::ata;

namespace {
bool is_queued(const fisrig_cmd_desc& d) {
  return d.protocol == FISRIG_PROTO_FPDMA_IN || d.protocol == FISRIG_PROTO_FPDMA_OUT;
}
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
}  // namespace

EngineModel::EngineModel(drive::Drive& d)
    : drive_(d), sq_(kSqEntries), cq_(kCqEntries), data_window_(FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES) {}

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
uint32_t EngineModel::c_cq_tail(void* ctx) { return static_cast<EngineModel*>(ctx)->cq_tail_; }
void EngineModel::c_cq_consumed(void* ctx, uint32_t head) { static_cast<EngineModel*>(ctx)->cq_head_ = head; }
uint64_t EngineModel::c_now(void* ctx) { return static_cast<EngineModel*>(ctx)->now_ticks(); }
void EngineModel::c_wait(void* ctx, uint64_t until) { static_cast<EngineModel*>(ctx)->wait(until); }

// ---- fetching and starting descriptors ----

void EngineModel::doorbell(uint32_t tail) {
  while (sq_head_ != tail) waiting_.push_back(sq_[sq_head_++ & (kSqEntries - 1)]);
  issue_waiting();
}

void EngineModel::issue_waiting() {
  while (!waiting_.empty()) {
    const fisrig_cmd_desc& d = waiting_.front();
    if (d.protocol == FISRIG_PROTO_POWER) {
      power(d);
    } else if (d.protocol == FISRIG_PROTO_LINK) {
      link(d);
    } else if (is_queued(d)) {
      if (nonqueued_slot_ >= 0 || busy_slots_ == FISRIG_ENGINE_SLOTS) return;
      start(d);
    } else {
      if (busy_slots_) return;  // a non-queued command runs alone
      start(d);
    }
    waiting_.pop_front();
  }
}

void EngineModel::start(const fisrig_cmd_desc& d) {
  if (!drive_.powered()) {
    // No link: the engine fails the descriptor at once rather than time it out.
    fisrig_cpl_record r{};
    r.user_tag = d.user_tag;
    r.result = FISRIG_RESULT_LINK_LOST;
    r.ts_submit = r.ts_status = now_ticks();
    complete(0, r);
    return;
  }
  bool queued = is_queued(d);
  uint8_t s = 0;
  if (queued)
    while (slots_[s].busy) ++s;
  Slot& slot = slots_[s];
  slot.busy = true;
  slot.desc = d;
  slot.generation++;
  slot.ts_submit = now_ticks();
  uint64_t timeout = d.timeout_ticks ? d.timeout_ticks : kDefaultTimeoutTicks;
  slot.deadline = now_ + ticks_to_ns(timeout);
  ++busy_slots_;
  if (!queued) nonqueued_slot_ = s;

  drive::AtaCommand cmd;
  cmd.command = d.command;
  cmd.features = d.features;
  cmd.lba = lba_of(d);
  cmd.count = queued ? uint16_t((d.count & ~0xF8u) | (uint32_t(s) << 3)) : d.count;
  cmd.device = d.device;
  cmd.icc = d.icc;
  cmd.control = d.control;
  cmd.aux = d.aux;
  cmd.user_tag = s | (slot.generation << 8);
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
    default:
      break;
  }
  bool data_in_to_ram = d.data_source == FISRIG_DATA_RAM &&
                        (d.protocol == FISRIG_PROTO_PIO_IN || d.protocol == FISRIG_PROTO_DMA_IN);
  pio_in_.clear();
  if (data_in_to_ram) cmd.pio_in = &pio_in_;
  bool capture = capture_ && (d.protocol == FISRIG_PROTO_PIO_IN || d.protocol == FISRIG_PROTO_DMA_IN ||
                              d.protocol == FISRIG_PROTO_FPDMA_IN);
  slot.captured.clear();
  if (capture) {
    cmd.pio_in = &pio_in_;  // IDENTIFY and log pages
    if (d.protocol != FISRIG_PROTO_PIO_IN) {  // sector reads
      slot.captured.assign(sectors_of(d) * size_t(drive::ata::kSectorBytes), 0);
      cmd.sink.bytes = slot.captured.data();
    }
  }
  SimTime arrive = drive_.receive_h2d(now_);
  slot.ts_h2d = ns_to_ticks(arrive);
  count_event(FISRIG_EVENT_H2D, arrive);
  drive_.submit(cmd, arrive);
  if (capture && !pio_in_.empty()) slot.captured = pio_in_;
  // IDENTIFY and log pages land in RAM where the descriptor said.
  if (data_in_to_ram && off < data_window_.size())
    std::memcpy(data_window_.data() + off, pio_in_.data(),
                std::min<size_t>(pio_in_.size(), data_window_.size() - off));
}

// ---- completions ----

void EngineModel::complete(uint8_t s, fisrig_cpl_record r) {
  r.slot = s;
  cq_[cq_tail_++ & (kCqEntries - 1)] = r;
}

void EngineModel::deliver(const drive::Completion& c) {
  uint8_t s = uint8_t(c.user_tag & 0xFF);
  Slot& slot = slots_[s];
  if (!slot.busy || slot.generation != (c.user_tag >> 8)) return;  // timed out earlier
  fisrig_cpl_record r{};
  r.user_tag = slot.desc.user_tag;
  r.status = c.status;
  r.error = c.error;
  r.result = c.aborted_by_ncq_error ? FISRIG_RESULT_NCQ_ABORTED
             : c.ok()               ? FISRIG_RESULT_OK
                                    : FISRIG_RESULT_ATA_ERROR;
  put_lba(r.lba, c.lba);
  // What moved in Data FISes, as the gateware counts it (engine_if.h): a DSM's range list
  // (its blocks), not the LBAs it trimmed, which is what the Drive's sectors say.
  // TODO(issue 13): a failed command's partial data (a UNC read's good sectors) counts 0 here.
  bool dsm = c.command == drive::ata::kDataSetManagement || c.command == drive::ata::kSendFpdmaQueued;
  uint32_t moved = !c.ok() || !c.t_data_end ? 0 : dsm ? sectors_of(slot.desc) : c.sectors;
  r.sectors = moved;
  r.data_dwords = moved * (drive::ata::kSectorBytes / 4);
  r.ts_submit = slot.ts_submit;
  r.ts_h2d = slot.ts_h2d;
  r.ts_accept = c.queued ? ns_to_ticks(c.t_accept) : 0;
  r.ts_setup = c.t_data_start ? ns_to_ticks(c.t_data_start) : 0;
  r.ts_data_first = r.ts_setup;
  r.ts_data_last = c.t_data_end ? ns_to_ticks(c.t_data_end) : 0;
  r.ts_status = ns_to_ticks(c.t_complete);
  if (capture_ && r.result == FISRIG_RESULT_OK && !slot.captured.empty()) {
    std::fwrite(slot.captured.data(), 1, slot.captured.size(), capture_);
    slot.captured.clear();
  }
  if (c.queued) count_event(FISRIG_EVENT_D2H, c.t_accept);
  if (c.t_data_start) {
    count_event(c.queued ? FISRIG_EVENT_DMA_SETUP : FISRIG_EVENT_DATA, c.t_data_start);
    if (c.queued) count_event(FISRIG_EVENT_DATA, c.t_data_start);
  }
  count_event(c.queued ? FISRIG_EVENT_SDB : FISRIG_EVENT_D2H, c.t_complete);
  slot.busy = false;
  --busy_slots_;
  if (nonqueued_slot_ == s) nonqueued_slot_ = -1;
  complete(s, r);
}

void EngineModel::lose_outstanding(SimTime t, uint8_t result) {
  for (uint8_t s = 0; s < FISRIG_ENGINE_SLOTS; ++s) {
    Slot& slot = slots_[s];
    if (!slot.busy) continue;
    fisrig_cpl_record r{};
    r.user_tag = slot.desc.user_tag;
    r.result = result;
    r.ts_submit = slot.ts_submit;
    r.ts_h2d = slot.ts_h2d;
    r.ts_status = ns_to_ticks(t);
    slot.busy = false;
    complete(s, r);
  }
  busy_slots_ = 0;
  nonqueued_slot_ = -1;
}

SimTime EngineModel::next_deadline() const {
  SimTime d = drive::kNever;
  for (const Slot& s : slots_)
    if (s.busy) d = std::min(d, s.deadline);
  return d;
}

// ---- the power controller and the link ----

void EngineModel::power(const fisrig_cmd_desc& d) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.ts_submit = now_ticks();
  switch (d.command) {
    case FISRIG_POWER_OFF:
      drive_.power_off(now_);
      lose_outstanding(now_, FISRIG_RESULT_LINK_LOST);
      r.ts_status = now_ticks();
      break;
    case FISRIG_POWER_ON:
      drive_.power_on(now_);
      r.ts_status = ns_to_ticks(drive_.ready_at());  // link up, signature received
      break;
    case FISRIG_POWER_OFF_AT_EVENT:
      armed_ = Armed{true, d.features, std::max<uint32_t>(1, d.count), ticks_to_ns(d.timeout_ticks), drive::kNever};
      r.ts_status = now_ticks();
      break;
    default:
      r.result = FISRIG_RESULT_REFUSED;
  }
  complete(0, r);
}

void EngineModel::link(const fisrig_cmd_desc& d) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.ts_submit = now_ticks();
  if (d.command == FISRIG_LINK_COMRESET) {
    drive_.comreset(now_);
    lose_outstanding(now_, FISRIG_RESULT_LINK_LOST);
    now_ = std::max(now_, drive_.ready_at());
  } else if (d.command == FISRIG_LINK_WAIT_UP) {
    uint64_t timeout = d.timeout_ticks ? d.timeout_ticks : kDefaultTimeoutTicks;
    if (drive_.powered()) {
      now_ = std::max(now_, drive_.ready_at());
    } else {
      now_ += ticks_to_ns(timeout);
      r.result = FISRIG_RESULT_TIMEOUT;
    }
  } else {
    r.result = FISRIG_RESULT_REFUSED;
  }
  r.ts_status = now_ticks();
  complete(0, r);
}

void EngineModel::count_event(uint16_t event, SimTime at) {
  if (!armed_.on || armed_.event != event || !armed_.left) return;
  if (--armed_.left == 0) armed_.cut_at = at + armed_.delay;
}

void EngineModel::cut_if_due(SimTime t) {
  if (armed_.cut_at > t) return;
  SimTime cut = std::max(armed_.cut_at, now_);
  armed_ = Armed{};
  now_ = cut;
  drive_.power_off(cut);
  lose_outstanding(cut, FISRIG_RESULT_LINK_LOST);
  fisrig_cpl_record r{};
  r.user_tag = FISRIG_USER_TAG_EVENT;
  r.result = FISRIG_RESULT_LINK_LOST;
  r.ts_submit = r.ts_status = ns_to_ticks(cut);
  complete(0, r);
}

// ---- time ----

// Handles the earliest event (at `next`): one at a time, so that the VM reaps and refills
// the queue between completions as the firmware does.
void EngineModel::process_next_event(SimTime next) {
  if (next == armed_.cut_at) {
    cut_if_due(next);
  } else if (next == drive_.next_completion_time()) {
    drive::Completion c;
    drive_.pop_completion(c);
    now_ = std::max(now_, c.t_complete);
    deliver(c);
  } else {
    // A slot past its timeout: report it; a late answer from the drive is ignored.
    now_ = std::max(now_, next);
    for (uint8_t s = 0; s < FISRIG_ENGINE_SLOTS; ++s) {
      Slot& slot = slots_[s];
      if (!slot.busy || slot.deadline > now_) continue;
      fisrig_cpl_record r{};
      r.user_tag = slot.desc.user_tag;
      r.result = FISRIG_RESULT_TIMEOUT;
      r.ts_submit = slot.ts_submit;
      r.ts_h2d = slot.ts_h2d;
      r.ts_status = now_ticks();
      slot.busy = false;
      --busy_slots_;
      if (nonqueued_slot_ == s) nonqueued_slot_ = -1;
      complete(s, r);
    }
  }
  issue_waiting();
}

void EngineModel::wait(uint64_t until_ticks) {
  SimTime target = ticks_to_ns(until_ticks);
  SimTime next = std::min({drive_.next_completion_time(), next_deadline(), armed_.cut_at});
  if (next <= target) {
    process_next_event(next);
    return;
  }
  drive_.idle_until(target);
  now_ = std::max(now_, target);
}

}  // namespace fisrig::model
