#include "nvme_engine.h"

#include <algorithm>
#include <cstring>

namespace fisrig::model {

namespace {

constexpr uint32_t kBlock = 512;
// The opcode's data direction (NVMe's standard opcodes, bits 1:0): to the controller, from it.
bool to_controller(uint8_t opcode) { return opcode & 1u; }
bool from_controller(uint8_t opcode) { return opcode & 2u; }

drive::DriveConfig checked(drive::DriveConfig cfg) {
  cfg.validate();
  return cfg;
}

}  // namespace

NvmeEngineModel::NvmeEngineModel(drive::DriveConfig cfg)
    : host_(checked(std::move(cfg))),
      sq_(kSqEntries),
      cq_(kCqEntries),
      window_(kDataWindowBytes),
      slots_(kSlots) {
  io_queues_ = uint16_t(std::min<uint32_t>(host_.ctrl.profile().io_queue_pairs, kMaxIoQueues));
  queue_entries_ = uint16_t(std::min<uint32_t>(host_.ctrl.profile().max_queue_entries, kMaxQueueEntries));
  for (uint32_t s = kSlots; s-- > 0;) free_.push_back(s);
  now_ = host_.now;
  up_ = bring_up();
}

fisrig_engine_ops NvmeEngineModel::ops() {
  fisrig_engine_ops o{};
  o.ctx = this;
  o.sq = sq_.data();
  o.sq_entries = kSqEntries;
  o.cq = cq_.data();
  o.cq_entries = kCqEntries;
  o.data_window = window_.data();
  o.data_window_bytes = uint32_t(window_.size());
  o.doorbell = &NvmeEngineModel::c_doorbell;
  o.sq_head = &NvmeEngineModel::c_sq_head;
  o.cq_tail = &NvmeEngineModel::c_cq_tail;
  o.cq_consumed = &NvmeEngineModel::c_cq_consumed;
  o.now = &NvmeEngineModel::c_now;
  o.wait = &NvmeEngineModel::c_wait;
  return o;
}

bool NvmeEngineModel::bring_up() {
  nvme::Controller& ctrl = host_.ctrl;
  host_.now = now_;
  host_.enable();
  // CSTS.RDY within CAP.TO (the SSD may still be booting after a power on), polled each
  // ms; a cut armed for a time before the queues are made falls there, mid-boot: the
  // controller never comes up (no LINK_UP), and the next POWER ON boots it again.
  const SimTime limit = now_ + SimTime(ctrl.config().timeout_500ms) * 500 * drive::kNsPerMs;
  while (!ctrl.ready() && host_.now < limit && host_.now < cut_at_) {
    host_.now = std::min(host_.now + drive::kNsPerMs, cut_at_);
    ctrl.run_until(host_.now);
  }
  bool ok = ctrl.ready() && host_.now < cut_at_ && host_.make_io_queues(io_queues_, queue_entries_) == 0;
  nvme::NvmeCompletion c;
  while (ctrl.pop_completion(c)) {  // the engine's own admin commands
  }
  if (cut_at_ <= host_.now) {  // before the queues were made, or while they were
    cut(cut_at_, cut_trigger_tick_);
    return false;
  }
  now_ = std::max(now_, host_.now);
  if (ok) {
    fisrig_cpl_record up{};
    up.user_tag = FISRIG_USER_TAG_EVENT;
    up.slot = FISRIG_EVENT_REC_LINK_UP;
    up.ts_submit = up.ts_status = now_ticks();
    push(up);
  }
  return ok;
}

void NvmeEngineModel::reset_controller() {
  host_.ctrl.write32(FISRIG_NVME_REG_CC, 0, now_);  // CC.EN 0: every queue and command gone
  lose_all(FISRIG_RESULT_LINK_LOST);
  up_ = host_.ctrl.ssd().powered() && bring_up();
}

void NvmeEngineModel::push(const fisrig_cpl_record& r) {
  if (cq_tail_ - cq_head_ < kCqEntries && held_.empty()) {
    cq_[cq_tail_++ % kCqEntries] = r;
  } else {
    held_.push_back(r);
  }
}

void NvmeEngineModel::end_desc(uint32_t user_tag, uint8_t result, uint64_t ts_submit) {
  fisrig_cpl_record r{};
  r.user_tag = user_tag;
  r.result = result;
  r.ts_submit = ts_submit;
  r.ts_status = std::max(ts_submit, now_ticks());
  push(r);
}

void NvmeEngineModel::end_nvme_at_once(const fisrig_nvme_desc_head& h, uint8_t result, uint64_t ts_submit) {
  fisrig_nvme_cpl_record r{};
  r.user_tag = h.user_tag;
  r.result = result;
  r.qid = h.qid;
  r.ts_submit = ts_submit;
  r.ts_cqe = std::max(ts_submit, now_ticks());
  push_as(r);
}

void NvmeEngineModel::doorbell(uint32_t tail) {
  // What is due by now first: done already where the last run_events ended at now with
  // nothing due and nothing left to take, and nothing has moved since.
  if (!(settled_.at == now_ && settled_.next > now_ && !host_.ctrl.has_completions())) run_until(now_);
  settled_ = {};
  while (sq_head_ != tail) {
    const fisrig_cmd_desc& d = sq_[sq_head_ % kSqEntries];
    const uint64_t ts = now_ticks();
    if (d.protocol == FISRIG_PROTO_NVME) {
      if (tail - sq_head_ < FISRIG_NVME_DESC_ENTRIES) break;  // the rest is not written yet
      fisrig_nvme_desc_head h;
      fisrig_nvme_sqe s;
      std::memcpy(&h, &d, sizeof h);
      std::memcpy(&s, &sq_[(sq_head_ + 1) % kSqEntries], sizeof d);
      std::memcpy(reinterpret_cast<uint8_t*>(&s) + sizeof d, &sq_[(sq_head_ + 2) % kSqEntries], sizeof d);
      sq_head_ += FISRIG_NVME_DESC_ENTRIES;
      start(h, s, ts);
      continue;
    }
    ++sq_head_;
    ring_started();  // what came before it goes first
    if (d.protocol == FISRIG_PROTO_POWER) power(d, ts);
    else if (d.protocol == FISRIG_PROTO_LINK) link(d, ts);
    else end_desc(d.user_tag, FISRIG_RESULT_REFUSED, ts);  // a SATA command: this engine has no SATA
  }
  ring_started();
  count_tlps();
}

void NvmeEngineModel::start(const fisrig_nvme_desc_head& h, fisrig_nvme_sqe s, uint64_t ts) {
  // What the engine refuses puts nothing on the link (engine_if.h's REFUSED); with the
  // controller down, a command ends LINK_LOST as a SATA one does with the link down.
  const bool ram = h.data_source == FISRIG_DATA_RAM;
  if (h.qid > io_queues_ || h.data_bytes > FISRIG_NVME_DATA_MAX || h.data_source > FISRIG_DATA_LFSR ||
      (ram && uint64_t(h.data_word) + h.data_bytes > window_.size()) || free_.empty())
    return end_nvme_at_once(h, FISRIG_RESULT_REFUSED, ts);
  if (!up_) return end_nvme_at_once(h, FISRIG_RESULT_LINK_LOST, ts);
  const uint32_t slot = free_.back();
  free_.pop_back();
  NvmeRigMemory& mem = host_.mem;
  s.cid = uint16_t(slot);
  if (!(h.nvme_flags & FISRIG_NVME_DESC_OWN_PRP) && h.data_bytes) {
    const uint64_t buf = NvmeRigMemory::buffer(slot), pages = (h.data_bytes + 4095) / 4096;
    s.prp1 = buf;
    s.prp2 = pages == 2 ? buf + 4096 : 0;
    if (pages > 2) {
      static thread_local std::vector<uint64_t> list;
      list.resize(pages - 1);
      for (uint64_t i = 1; i < pages; ++i) list[i - 1] = buf + 4096 * i;
      mem.SparseMemory::write(NvmeRigMemory::list(slot), list.data(), list.size() * 8);
      s.prp2 = NvmeRigMemory::list(slot);
    }
  }
  // The slot's buffer: a write's data (a pattern, or bytes from the window); a read's kept
  // where the CPU or a check looks at it, dropped otherwise.
  if (to_controller(s.opcode) && h.data_bytes) {
    if (ram) {
      mem.hold_bytes(slot);
      mem.write(NvmeRigMemory::buffer(slot), window_.data() + h.data_word, h.data_bytes);
    } else {  // NONE sends zeros, as the SATA engine's generator does
      uint8_t src = h.data_source == FISRIG_DATA_NONE ? uint8_t(FISRIG_DATA_ZEROS) : h.data_source;
      mem.hold_pattern(slot, mem.styles.payload(src, h.data_word, h.compress_pct));
    }
  } else if (from_controller(s.opcode) && !ram && !(h.flags & FISRIG_DESC_CHECK) && !capture_) {
    mem.drop_writes(slot);
  } else {
    mem.hold_bytes(slot);
  }
  Slot& sl = slots_[slot];
  sl.busy = true;
  sl.head = h;
  sl.opcode = s.opcode;
  sl.ts_submit = ts;
  sl.ts_doorbell = 0;
  sl.deadline = ts + (h.timeout_ticks ? h.timeout_ticks : FISRIG_DEFAULT_TIMEOUT_TICKS);
  const Deadline due{sl.deadline, ++sl.generation << 8 | slot};
  if (deadlines_in_order_.empty() || deadlines_in_order_.back() <= due) deadlines_in_order_.push_back(due);
  else deadlines_.push(due);
  host_.now = now_;
  host_.put(h.qid, s, true);
  started_.push_back(slot);
}

// The doorbells of the queues the descriptors taken since the last went on, once each.
void NvmeEngineModel::ring_started() {
  if (started_.empty()) return;
  host_.now = now_;
  uint32_t rung = 0;  // a bit per queue (at most kMaxIoQueues + 1)
  for (uint32_t s : started_) {
    uint16_t q = slots_[s].head.qid;
    if (!(rung & 1u << q)) host_.ring(q), rung |= 1u << q;
    slots_[s].ts_doorbell = ns_to_ticks(host_.ctrl.sq_doorbell_at(q));
  }
  started_.clear();
}

uint32_t NvmeEngineModel::earliest_deadline() const {
  auto live = [this](const Deadline& d) {
    const uint32_t s = uint32_t(d.second & 0xFF);
    return slots_[s].busy && slots_[s].generation == d.second >> 8;
  };
  while (!deadlines_in_order_.empty() && !live(deadlines_in_order_.front())) deadlines_in_order_.pop_front();
  while (!deadlines_.empty() && !live(deadlines_.top())) deadlines_.pop();
  const Deadline* first = deadlines_in_order_.empty() ? nullptr : &deadlines_in_order_.front();
  if (!deadlines_.empty() && (!first || deadlines_.top() < *first)) first = &deadlines_.top();
  return first ? uint32_t(first->second & 0xFF) : kSlots;
}

SimTime NvmeEngineModel::next_event() const {
  SimTime t = std::min({host_.ctrl.next_event(), cut_at_, sampler_.next_record()});
  if (tlp_arm_.left && !tlp_ends_.empty()) t = std::min(t, tlp_ends_.top());
  const uint32_t s = earliest_deadline();
  return s < kSlots ? std::min(t, ticks_to_ns(slots_[s].deadline)) : t;
}

SimTime NvmeEngineModel::run_events(SimTime t, SimTime next) {
  for (; next <= t; next = next_event()) step(next);
  now_ = std::max(now_, t);
  // Nothing in the controller is due by t (next is past it), so this run_until fetches and
  // posts nothing; what is left to take is what the last step's own work left behind.
  host_.ctrl.run_until(now_);
  const bool came = collect();
  next = count_tlps() || came ? next_event() : next;
  settled_ = {now_, next};
  return next;
}

void NvmeEngineModel::step(SimTime next) {
  now_ = std::max(now_, next);
  if (next == sampler_.next_record()) sample_through(next);
  host_.ctrl.run_until(now_);
  collect();
  count_tlps();
  if (cut_at_ <= now_) return cut(cut_at_, cut_trigger_tick_);
  const uint32_t s = earliest_deadline();
  if (s < kSlots && ticks_to_ns(slots_[s].deadline) <= now_) {
    // No CQE by its timeout: TIMEOUT, and the controller reset (the rest LINK_LOST).
    end_slot(s, FISRIG_RESULT_TIMEOUT);
    reset_controller();
  }
}

void NvmeEngineModel::sample_through(SimTime t) { sampler_.through(t, sense(), push_current()); }

void NvmeEngineModel::arm_at_tlp(const fisrig_cmd_desc& d, uint64_t ts) {
  static constexpr uint32_t kKind[] = {nvme::Controller::kTlpDoorbell, nvme::Controller::kTlpSqe,
                                       nvme::Controller::kTlpData, nvme::Controller::kTlpCqe};
  tlp_arm_ = {std::max<uint32_t>(1, d.count), d.timeout_ticks, ticks_to_ns(ts)};
  tlp_ends_ = {};
  host_.ctrl.watch_tlps(kKind[d.features - FISRIG_EVENT_DOORBELL]);
}

void NvmeEngineModel::disarm() {
  tlp_arm_.left = 0;
  tlp_ends_ = {};
  host_.ctrl.watch_tlps(0);
}

bool NvmeEngineModel::count_tlps() {
  if (!tlp_arm_.left) return false;
  std::vector<SimTime>& booked = host_.ctrl.watched();
  for (SimTime t : booked)
    if (t >= tlp_arm_.since) tlp_ends_.push(t);
  booked.clear();
  // A booking is never earlier than the time it is made at: what the clock has reached is
  // in the order the TLPs crossed.
  while (!tlp_ends_.empty() && tlp_ends_.top() <= now_) {
    const SimTime end = tlp_ends_.top();
    tlp_ends_.pop();
    if (--tlp_arm_.left) continue;
    cut_trigger_tick_ = ns_to_ticks(end);
    cut_at_ = std::max(end, ticks_to_ns(cut_trigger_tick_ + tlp_arm_.delay_ticks));
    disarm();
    break;
  }
  return true;
}

bool NvmeEngineModel::collect() {
  if (!host_.ctrl.has_completions()) return false;
  nvme::NvmeCompletion c;
  uint32_t reaped = 0;  // a bit per queue with CQEs to take
  bool came = false;
  while (host_.ctrl.pop_completion(c)) {
    came = true;
    if (c.sqid <= io_queues_) reaped |= 1u << c.sqid;
    if (c.cid >= kSlots || !slots_[c.cid].busy || slots_[c.cid].head.qid != c.sqid) continue;
    finish(c.cid, c);
  }
  for (; reaped; reaped &= reaped - 1) {
    const uint16_t q = uint16_t(__builtin_ctz(reaped));
    fisrig_nvme_cqe e{};
    bool any = false;
    while (host_.reap(q, e, false)) any = true;
    if (any) host_.ring_cq(q);
  }
  return came;
}

void NvmeEngineModel::finish(uint32_t s, const nvme::NvmeCompletion& c) {
  const Slot& sl = slots_[s];
  const fisrig_nvme_desc_head& h = sl.head;
  fisrig_nvme_cpl_record r{};
  r.user_tag = h.user_tag;
  r.slot = uint8_t(s);
  r.status = c.status;
  r.dw0 = c.dw0;
  r.qid = h.qid;
  r.data_dwords = uint32_t(c.bytes / 4);
  r.blocks = uint32_t(c.bytes / kBlock);
  r.ts_submit = sl.ts_submit;
  r.ts_doorbell = ns_to_ticks(c.t_doorbell);
  r.ts_sqe = ns_to_ticks(c.t_fetch);
  r.ts_irq = c.t_irq ? ns_to_ticks(c.t_irq) : 0;
  r.ts_data_first = c.t_data_first ? ns_to_ticks(c.t_data_first) : 0;
  r.ts_data_last = c.t_data_last ? ns_to_ticks(c.t_data_last) : 0;
  r.ts_cqe = ns_to_ticks(c.t_cqe);
  r.result = c.ok() ? FISRIG_RESULT_OK : FISRIG_RESULT_ATA_ERROR;
  const bool own_prp = h.nvme_flags & FISRIG_NVME_DESC_OWN_PRP;
  // A command whose status says success but that moved other than its buffer: what moved counts.
  if (r.result == FISRIG_RESULT_OK && !own_prp && (to_controller(sl.opcode) || from_controller(sl.opcode)) &&
      h.data_bytes && c.bytes != h.data_bytes)
    r.result = FISRIG_RESULT_LENGTH;
  if (from_controller(sl.opcode) && c.bytes && !own_prp) {
    buffer_.resize(c.bytes);
    host_.mem.read(NvmeRigMemory::buffer(s), buffer_.data(), c.bytes);
    if (r.result == FISRIG_RESULT_OK && (h.flags & FISRIG_DESC_CHECK) && h.data_source > FISRIG_DATA_RAM) {
      // Each block against what the pattern put there (the command's SLBA on).
      uint8_t want[kBlock];
      for (uint32_t b = 0; b < r.blocks; ++b) {
        const uint64_t lba = c.slba + b;
        drive::WritePayload p = host_.mem.styles.payload(h.data_source, h.data_word, h.compress_pct);
        if (p.kind == drive::WritePayload::Kind::kZeros) std::memset(want, 0, kBlock);
        else host_.mem.styles.render(p.word, lba, want);
        if (std::memcmp(want, buffer_.data() + uint64_t(b) * kBlock, kBlock)) ++r.check_errors;
      }
      if (r.check_errors) r.result = FISRIG_RESULT_CHECK_FAILED;
    }
    if (h.data_source == FISRIG_DATA_RAM)
      std::memcpy(window_.data() + h.data_word, buffer_.data(), std::min<uint64_t>(c.bytes, window_.size() - h.data_word));
    if (capture_ && c.ok()) std::fwrite(buffer_.data(), 1, c.bytes, capture_);
  }
  free_slot(s);
  push_as(r);
}

void NvmeEngineModel::free_slot(uint32_t s) {
  slots_[s].busy = false;
  host_.mem.hold_bytes(s);
  free_.push_back(s);
}

void NvmeEngineModel::end_slot(uint32_t s, uint8_t result) {
  const Slot& sl = slots_[s];
  fisrig_nvme_cpl_record r{};
  r.user_tag = sl.head.user_tag;
  r.slot = uint8_t(s);
  r.result = result;
  r.qid = sl.head.qid;
  r.ts_submit = sl.ts_submit;
  r.ts_doorbell = sl.ts_doorbell;
  r.ts_cqe = now_ticks();
  if (s < had_.size()) {  // a cut's: what the controller had of it by then
    const nvme::NvmeCompletion& c = had_[s];
    auto by_now = [&](SimTime t) { return t && t <= now_ ? ns_to_ticks(t) : 0; };
    r.ts_sqe = by_now(c.t_fetch);
    r.ts_data_first = by_now(c.t_data_first);
    r.ts_data_last = by_now(c.t_data_last);
    if (r.ts_data_last) r.data_dwords = uint32_t(c.bytes / 4), r.blocks = uint32_t(c.bytes / kBlock);
  }
  free_slot(s);
  push_as(r);
}

void NvmeEngineModel::lose_all(uint8_t result) {
  for (uint32_t s = 0; s < kSlots; ++s)
    if (slots_[s].busy) end_slot(s, result);
  nvme::NvmeCompletion c;
  while (host_.ctrl.pop_completion(c)) {  // a reset's or a cut's leftovers
  }
}

void NvmeEngineModel::cut(SimTime t, uint64_t trigger_tick) {
  cut_at_ = drive::kNever;
  disarm();
  now_ = std::max(now_, t);
  fisrig_nvme_cut_record r{};
  r.user_tag = FISRIG_USER_TAG_EVENT;
  r.slot = FISRIG_EVENT_REC_POWER_CUT;
  r.result = FISRIG_RESULT_LINK_LOST;
  r.ts_submit = r.ts_status = now_ticks();
  r.ts_trigger = trigger_tick;
  // What the controller had of each command in flight by now (its bookings past now had not
  // happened): the cut's counts, and the stamps of each LINK_LOST record after it.
  had_.assign(kSlots, nvme::NvmeCompletion{});
  for (const nvme::NvmeCompletion& c : host_.ctrl.fetched())
    if (c.cid < kSlots && slots_[c.cid].busy && slots_[c.cid].head.qid == c.sqid) had_[c.cid] = c;
  for (uint32_t s = 0; s < kSlots; ++s) {
    if (!slots_[s].busy) continue;
    const nvme::NvmeCompletion& c = had_[s];
    r.cmds_sent += slots_[s].ts_doorbell != 0;
    r.cmds_fetched += c.t_fetch && c.t_fetch <= now_;
    r.cmds_data += c.t_data_first && c.t_data_first <= now_;
    r.cmds_done += c.t_cqe && c.t_cqe <= now_;
  }
  sample_through(now_);  // the samples up to the cut, with the power it still had
  host_.ctrl.power_off(now_);
  push_as(r);
  lose_all(FISRIG_RESULT_LINK_LOST);
  had_.clear();
  up_ = false;
}

void NvmeEngineModel::power(const fisrig_cmd_desc& d, uint64_t ts) {
  switch (d.command) {
    case FISRIG_POWER_OFF:
      end_desc(d.user_tag, FISRIG_RESULT_OK, ts);
      if (host_.ctrl.ssd().powered()) cut(now_, ts);
      return;
    case FISRIG_POWER_ON:
      end_desc(d.user_tag, FISRIG_RESULT_OK, ts);
      if (!host_.ctrl.ssd().powered()) {
        sample_through(now_);
        host_.ctrl.power_on(now_);
        up_ = bring_up();  // a LINK_UP record once the controller is ready and the queues made
      }
      return;
    case FISRIG_POWER_SAMPLE: {
      fisrig_cpl_record r{};
      r.user_tag = d.user_tag;
      r.result = FISRIG_RESULT_OK;
      r.ts_submit = ts;
      sampler_.descriptor(d, now_ticks(), r, sense(), push_current());
      if (sampler_.on) host_.ctrl.ssd().current_ma(now_);  // the SSD keeps its NAND activity from here on
      return push(r);
    }
    case FISRIG_POWER_OFF_AT_EVENT:
      if (d.features == FISRIG_EVENT_TIME) {
        cut_at_ = ticks_to_ns(ts + d.timeout_ticks);
        cut_trigger_tick_ = ts;
        return end_desc(d.user_tag, FISRIG_RESULT_OK, ts);
      }
      if (d.features >= FISRIG_EVENT_DOORBELL && d.features <= FISRIG_EVENT_CQE) {
        arm_at_tlp(d, ts);
        return end_desc(d.user_tag, FISRIG_RESULT_OK, ts);
      }
      break;  // a SATA FIS has no NVMe meaning
    default:
      break;
  }
  end_desc(d.user_tag, FISRIG_RESULT_REFUSED, ts);
}

void NvmeEngineModel::link(const fisrig_cmd_desc& d, uint64_t ts) {
  switch (d.command) {
    case FISRIG_LINK_COMRESET:
      reset_controller();
      return end_desc(d.user_tag, up_ ? FISRIG_RESULT_OK : FISRIG_RESULT_LINK_LOST, ts);
    case FISRIG_LINK_WAIT_UP: {
      if (!up_) run_until(ticks_to_ns(ts + (d.timeout_ticks ? d.timeout_ticks : FISRIG_DEFAULT_TIMEOUT_TICKS)));
      return end_desc(d.user_tag, up_ ? FISRIG_RESULT_OK : FISRIG_RESULT_TIMEOUT, ts);
    }
    default:
      return end_desc(d.user_tag, FISRIG_RESULT_REFUSED, ts);
  }
}

void NvmeEngineModel::c_doorbell(void* ctx, uint32_t tail) { static_cast<NvmeEngineModel*>(ctx)->doorbell(tail); }
uint32_t NvmeEngineModel::c_sq_head(void* ctx) { return static_cast<NvmeEngineModel*>(ctx)->sq_head_; }
uint32_t NvmeEngineModel::c_cq_tail(void* ctx) { return static_cast<NvmeEngineModel*>(ctx)->cq_tail_; }
void NvmeEngineModel::c_cq_consumed(void* ctx, uint32_t head) {
  auto* e = static_cast<NvmeEngineModel*>(ctx);
  e->cq_head_ = head;
  while (!e->held_.empty() && e->cq_tail_ - e->cq_head_ < kCqEntries) {
    e->cq_[e->cq_tail_++ % kCqEntries] = e->held_.front();
    e->held_.pop_front();
  }
}
uint64_t NvmeEngineModel::c_now(void* ctx) { return static_cast<NvmeEngineModel*>(ctx)->now_ticks(); }
// Until a record is waiting or the clock reaches `until`: the engine's events run in order.
void NvmeEngineModel::c_wait(void* ctx, uint64_t until) {
  auto* e = static_cast<NvmeEngineModel*>(ctx);
  const SimTime end = ticks_to_ns(until);
  SimTime next = e->next_event();
  while (e->cq_tail_ == e->cq_head_) {
    if (next > end || next == drive::kNever) {
      e->run_events(std::max(e->now_, end), next);
      return;
    }
    next = e->run_events(std::max(e->now_, next), next);
  }
}

}  // namespace fisrig::model
