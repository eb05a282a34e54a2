// The engine model's rings and event loop: descriptors fetched and issued in the gateware's
// order, completions into the ring, and the clock run from one event to the next.
#include "engine_model.h"

#include "descriptor_fields.h"
#include "host_phy.h"

#include <algorithm>

namespace fisrig::model {

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
    if (link_wait_.on) return;  // the sequencer waits for the link: nothing else is taken
    if (d.protocol == FISRIG_PROTO_POWER) {
      power(d);
    } else if (d.protocol == FISRIG_PROTO_LINK) {
      link(d);
    } else if (d.protocol == FISRIG_PROTO_CAPTURE) {
      capture_desc(d);
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

SimTime EngineModel::next_deadline() const {
  if (!next_deadline_known_) {
    next_deadline_ = *std::min_element(std::begin(deadlines_), std::end(deadlines_));
    next_deadline_known_ = true;
  }
  return next_deadline_;
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
    // The drive reset its port (link_drop_after_commands): it goes quiet, the rig sees its
    // link fall, what was in flight ends LINK_LOST then, and the drive answers the rig's
    // COMRESETs once it is ready again.
    now_ = std::max(now_, next);
    drive_.link_drop_seen();
    quiet_from(next);
    boots_until_ = drive_.ready_at();
  } else if (next == link_fall_at_) {
    now_ = std::max(now_, next);
    link_fell(next);
  } else if (next == link_up_at_) {
    now_ = std::max(now_, next);
    link_came_up(next);
  } else if (link_wait_.on && next == link_wait_.give_up) {
    now_ = std::max(now_, next);
    link_wait_timed_out(next);
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
    comreset_link(now_, host_phy::kTimeoutFallTicks);  // what is sent meanwhile meets a link going through OOB
  }
  issue_waiting();
}

SimTime EngineModel::next_event() const {
  return std::min({drive_.next_completion_time(), next_deadline(), armed_.cut_at, next_due(), loss_at_,
                   drive_.link_drop_at(), next_current_record(), next_link_event()});
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
