// Completions out of the Drive, and the status FISes that end commands: Register D2H
// for non-queued commands, Set Device Bits for queued ones (several tags at once, or ERR).
#include "fisrig/device/command_layer.h"

namespace fisrig::device {

namespace ata = drive::ata;
using drive::Completion;
using drive::SimTime;

// ---- completions ----

SimTime CommandLayer::status_due(const Completion& c) const {
  SimTime len = drive_.link_timing().fis_ns(c.queued ? drive::fis_dwords::kSetDeviceBits : drive::fis_dwords::kRegD2H);
  return c.t_complete > len ? c.t_complete - len : 0;
}

// Completions are taken up to one D2H's length ahead, each due at its status FIS's start.
void CommandLayer::pop_completions(SimTime now) {
  const SimTime lead = drive_.link_timing().fis_ns(drive::fis_dwords::kRegD2H);
  while (drive_.next_completion_time() <= now + lead) {
    Completion c;
    drive_.pop_completion(c);
    uint8_t idx = uint8_t(c.user_tag & 0xFF);
    if (idx >= kSlots) continue;
    Slot& s = slots_[idx];
    if (s.phase == Phase::kFree || s.generation != uint32_t(c.user_tag >> 8)) continue;  // stale
    s.popped = true;
    s.popped_ns = std::max(now, status_due(c));
    s.done = c;
    // The queue halts: queued writes that have not had their data yet never will.
    if (c.queued && !c.ok()) drop_unsubmitted_queued();
    status_push(idx);
  }
}

// The error SDB ends every outstanding queued command (the host counts them aborted and
// retries them): none of them moves data or sends status any more, and the log read that
// follows finds the queue empty.
void CommandLayer::abort_queue() {
  for (uint8_t t = 0; t < kNonQueued; ++t) free_slot(t);
  if (active_ >= 0 && active_ != kNonQueued) active_ = -1;
  uint32_t kept = 0;
  for (uint32_t i = 0; i < status_len_; ++i) {
    uint8_t idx = status_[(status_head_ + i) % status_.size()];
    if (idx == kNonQueued) status_[(status_head_ + kept++) % status_.size()] = idx;
  }
  status_len_ = kept;
}

void CommandLayer::drop_unsubmitted_queued() {
  for (uint8_t t = 0; t < kNonQueued; ++t)
    if (slots_[t].phase == Phase::kAwaitData) free_slot(t);
}

void CommandLayer::on_sent(bool ok) {
  wake_ = 0;
  if (ok) {
    retries_ = 0;
    return;
  }
  // Data FISes are not sent again: the command's outcome is already decided.
  if (!last_was_data_ && retries_ < kMaxRetransmits) {
    ++retries_;
    resend_ = true;
  }
}

bool CommandLayer::build_status(TxFrame& out, SimTime now, bool coalesce) {
  while (status_len_) {
    uint8_t idx = status_[status_head_];
    Slot& s = slots_[idx];
    const Completion& c = s.done;
    bool queued = idx != kNonQueued;
    if (s.popped_ns > now) return false;  // its status FIS is not due yet
    if (coalesce && queued && c.ok() && s.popped_ns + kSdbCoalesceNs > now) return false;
    auto pop = [&] {
      status_head_ = (status_head_ + 1) % status_.size();
      --status_len_;
      free_slot(idx);
    };
    if (queued && c.aborted_by_ncq_error) {
      pop();  // no FIS: the host learns it from the error SDB
      continue;
    }
    bool data_owed = is_data_in(s.proto) && !s.data_done && c.t_data_start;
    if (data_owed) return false;  // its data goes first
    if (!queued) {
      pop();
      if (s.proto == Protocol::kPioIn && c.ok() && s.data_started) continue;  // E_Status ended it
      out.n = fis::reg_d2h(out.dw, c.status, c.error, true, c.ok() && !c.lba_is_output ? 0 : c.lba);
      return true;
    }
    if (!c.ok()) {
      pop();
      halted_ = true;
      ++counters_.ncq_errors;
      abort_queue();
      out.n = fis::set_device_bits(out.dw, c.status, c.error, 0);
      ++counters_.sdb_sent;
      return true;
    }
    // Every completed tag at the head whose data is done, in one SDB.
    uint32_t sactive = 0;
    while (status_len_) {
      idx = status_[status_head_];
      const Slot& t = slots_[idx];
      if (idx == kNonQueued || !t.done.ok() || (is_data_in(t.proto) && !t.data_done && t.done.t_data_start)) break;
      sactive |= 1u << idx;
      ++counters_.sdb_tags;
      pop();
    }
    out.n = fis::set_device_bits(out.dw, ata::kStatusDrdy, 0, sactive);
    ++counters_.sdb_sent;
    return true;
  }
  return false;
}

}  // namespace fisrig::device
