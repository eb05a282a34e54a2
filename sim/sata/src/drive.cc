// Command intake, queueing rules, NCQ error handling, power and reset. The per-command
// data paths live in drive_rw.cc, the other command handlers in drive_commands.cc.
#include "fisrig/sata/drive.h"

#include <algorithm>

#include "drive_ctx.h"

namespace fisrig::drive {

namespace {
bool is_queued(uint8_t op) {
  return op == ata::kReadFpdmaQueued || op == ata::kWriteFpdmaQueued || op == ata::kSendFpdmaQueued;
}
}  // namespace

Drive::Drive(DriveConfig config)
    : ssd_(std::move(config)),
      link_(cfg().interface),
      rng_(cfg().faults.seed),
      link_gen_(cfg().interface.max_gen),
      own_wire_(cfg().interface) {}

void Drive::push(const Completion& c) {
  pending_.push(c);
  ssd_.busy_until(c.t_complete);
}

bool Drive::pop_completion(Completion& out) { return pending_.pop(out); }

SimTime Drive::next_completion_time() const { return pending_.next_time(); }

Completion Drive::execute(const AtaCommand& cmd, SimTime t) {
  uint64_t seq = pending_.next_seq();
  submit(cmd, t);
  Completion out{};
  // Only this command's completion is taken; others stay pending in order.
  if (pending_.take(seq, out)) return out;
  out.command = cmd.command;
  out.user_tag = cmd.user_tag;
  out.t_arrive = t;
  out.t_complete = kNever;  // never answered: powered off or hung
  return out;
}

void Drive::submit(const AtaCommand& cmd, SimTime t) {
  ++stats_.commands;
  if (!ssd_.powered()) {
    ++stats_.ignored_while_off;
    return;
  }
  if (ssd_.hung()) {
    ++stats_.ignored_while_hung;
    return;
  }
  const FaultKnobs& faults = cfg().faults;
  if (faults.hang_after_commands && commands_seen_ >= faults.hang_after_commands) {
    ssd_.set_hung(true);
    pending_.drop_after(t);  // whatever was still in flight never answers either
    ++stats_.ignored_while_hung;
    return;
  }
  if (faults.link_drop_after_commands && commands_seen_ >= faults.link_drop_after_commands) {
    // The drive resets its port: this command and what was in flight are lost (as by a
    // COMRESET, the cache kept), and it is back as after one.
    ++stats_.link_drops;
    reset_port(t);
    link_drop_at_ = t;
    return;
  }
  ++commands_seen_;
  t = std::max(t, ready_at_);
  // Hosts submit in time order; one that sends its own H2D (receive_h2d) may have more
  // H2Ds to send from its now, which is earlier than this arrival.
  link_.retire_before(std::min(t, host_now_));
  if (coalesce_sdb_) own_wire_.retire_before(t);
  ssd_.arrive(t);

  Ctx c{cmd};
  c.c.user_tag = cmd.user_tag;
  c.c.command = cmd.command;
  c.c.t_arrive = t;
  c.queued = is_queued(cmd.command);
  c.c.queued = c.queued;
  c.c.tag = c.queued ? uint8_t((cmd.count >> 3) & 0x1F) : 0;
  c.t = t;

  if (c.queued) {
    if (nonqueued_busy_until_ > t) {
      fail(c, ata::kErrorAbrt, 0);  // queued command while a non-queued one runs
      return finish(c);
    }
    if (t >= ncq_error_at_) {
      c.c.aborted_by_ncq_error = true;  // the queue is halted until log 10h is read
      fail(c, ata::kErrorAbrt, 0);
      // No FIS of its own (the error SDB told the host): its tag is free at once, so the
      // host's log read is not taken for an intruder.
      c.c.t_complete = t;
      return finish(c);
    }
    // The device accepts the command with a D2H that clears BSY (the device side sent it
    // already when the data phase is done).
    c.t = c.c.t_accept = cmd.data_phase_done ? t
                         : cmd.release_sent  ? t + link_.fis_ns(fis_dwords::kRegD2H)
                                             : send_fis(t, fis_dwords::kRegD2H);
    if (tag_busy_until_[c.c.tag] > t) {
      fail(c, ata::kErrorAbrt, 0);  // tag already in use: an NCQ error
      return finish(c);
    }
  } else {
    c.c.t_accept = t;
    bool ncq_busy = false;
    for (SimTime b : tag_busy_until_) ncq_busy |= b > t;
    if (ncq_busy || nonqueued_busy_until_ > t) {
      // A non-queued command with NCQ commands outstanding aborts them all.
      fail(c, ata::kErrorAbrt, 0);
      c.abort_queue = ncq_busy;
      return finish(c);
    }
  }

  // Firmware time per command, serialised on the controller.
  SimTime overhead = cmd.data_phase_done ? 0 : cfg().controller.command_overhead_ns;
  if (chance(faults.busy_rate)) overhead += faults.busy_ns;
  c.t = ssd_.run_firmware(c.t, overhead);
  dispatch(c);
  if (chance(faults.latency_outlier_rate)) {
    // The status goes out late (PIO commands have already set their ending time).
    if (c.c.t_complete) c.c.t_complete += faults.latency_outlier_ns;
    else c.t += faults.latency_outlier_ns;
  }
  finish(c);
}

void Drive::apply_moves(const std::vector<LinkTiming::Move>& moves) {
  const LinkTiming::Mover mv(moves);
  pending_.update_all([&](Completion& c) {
    mv(c.t_accept);
    mv(c.t_data_start);
    mv(c.t_data_fis);
    mv(c.t_data_end);
    mv(c.t_complete);
  });
  for (BookedSdb* b : {&last_sdb_, &deferred_sdb_}) mv(b->start), mv(b->end);
  for (SimTime& t : tag_busy_until_) mv(t);
  mv(nonqueued_busy_until_);
  if (ncq_error_at_ != kNever) mv(ncq_error_at_);
  ssd_.retime(mv);
  if (fis_log_)
    for (DataFis& f : *fis_log_) mv(f.start), mv(f.end);
}

void Drive::share_pushed_statuses() {
  const SimTime sdb = link_.fis_ns(fis_dwords::kSetDeviceBits);
  const SimTime setup = link_.fis_ns(fis_dwords::kDmaSetup);
  // The queued commands whose statuses are still to go, in wire order.
  struct Booked {
    uint8_t tag;
    SimTime data_start, complete;
    bool holds;  // a read whose data phase can hold a status (one Data FIS)
  };
  std::vector<Booked> run;
  SimTime after = host_now_;  // statuses from here on may be taken back
  for (;;) {
    run.clear();
    pending_.update_all([&](Completion& c) {
      if (c.queued && c.ok() && !c.aborted_by_ncq_error && c.t_complete > after)
        run.push_back(Booked{c.tag, c.t_data_start, c.t_complete,
                             own_due_[c.tag] != kNever && c.t_data_start &&
                                 uint64_t(c.sectors) * ata::kSectorBytes <= kSdbHoldMaxPhaseBytes});
    });
    std::sort(run.begin(), run.end(), [](const Booked& a, const Booked& b) { return a.complete < b.complete; });
    size_t i = 0;
    for (; i + 1 < run.size(); ++i) {
      const Booked &st = run[i], &rd = run[i + 1];
      const SimTime st_start = st.complete - sdb;
      // The status alone on the wire, the read's DMA Setup right after it, due on the
      // device side's wire by the time the status would start, the status young enough.
      if (!shares_sdb_[st.tag] && !shares_sdb_[rd.tag] && rd.holds && rd.data_start - setup == st.complete &&
          own_due_[rd.tag] <= st_start && st_start < own_status_[st.tag] + kSdbCoalesceNs)
        break;
    }
    if (i + 1 >= run.size()) return;
    const Booked st = run[i], rd = run[i + 1];
    std::vector<LinkTiming::Move> moves;
    link_.pull(st.complete - sdb, sdb, moves);
    if (moves.empty()) return;
    apply_moves(moves);  // the read and what followed it back to back come an SDB earlier
    const SimTime shared = LinkTiming::moved(moves, rd.complete);
    pending_.update_all([&](Completion& c) {
      if (c.queued && c.tag == st.tag && c.t_complete == st.complete - sdb) c.t_complete = shared;
    });
    tag_busy_until_[st.tag] = std::max(tag_busy_until_[st.tag], shared);
    shares_sdb_[st.tag] = shares_sdb_[rd.tag] = true;
    if (last_sdb_.n && last_sdb_.end == shared) last_sdb_.n = 0;  // no longer one status's
    pulls_.push_back(std::move(moves));
    after = shared;
  }
}

void Drive::fail(Ctx& c, uint8_t error, uint64_t lba) {
  c.c.status = ata::kStatusDrdy | ata::kStatusErr;
  c.c.error = error;
  c.c.lba = lba;
  c.failed = true;
}

SimTime Drive::send_queued_setup(SimTime ready, uint64_t bytes, SimTime due) {
  BookedSdb& s = last_sdb_;
  // Only a short data phase that would otherwise go after the status holds it back: one
  // that fits in a gap before it goes first anyway. It holds it if the device side takes
  // it as due by then (a read's: on its own wire, own_wire_).
  SimTime setup_ns = link_.fis_ns(fis_dwords::kDmaSetup);
  if (due == kNever) due = ready;
  if (coalesce_sdb_ && s.n && !deferred_sdb_.n && bytes <= kSdbHoldMaxPhaseBytes &&
      s.end == link_.free_at() && due <= s.start &&
      s.start < s.oldest_due + kSdbCoalesceNs && link_.first_fit(ready, setup_ns) >= s.start) {
    link_.unreserve_tail(s.start);
    deferred_sdb_ = s;
    s.n = 0;
  }
  return send_fis(ready, fis_dwords::kDmaSetup);
}

bool Drive::settle_deferred_sdb(Ctx& c) {
  BookedSdb d = deferred_sdb_;
  deferred_sdb_.n = 0;
  // When the data phase is over, the taken-back status goes at once (it is old now), and
  // the command's own in it if that is due within a D2H's length (the device side takes
  // completions that far ahead).
  SimTime at = std::max(c.c.t_data_end, d.start);
  SimTime len = link_.fis_ns(fis_dwords::kSetDeviceBits);
  bool with_c = c.queued && !c.failed && !c.c.t_complete && ncq_error_at_ == kNever &&
                c.t <= at + link_.fis_ns(fis_dwords::kRegD2H);
  SimTime end = send_fis(at, fis_dwords::kSetDeviceBits);
  for (uint32_t i = 0; i < d.n; ++i)
    if (const Completion* w = pending_.retime(d.seqs[i], end)) {
      tag_busy_until_[w->tag] = std::max(tag_busy_until_[w->tag], end);
      shares_sdb_[w->tag] = true;
    }
  if (with_c) {
    c.c.t_complete = end;
    d.seqs[d.n++] = pending_.next_seq();  // finish pushes it next
  }
  last_sdb_ = d;
  last_sdb_.start = end - len, last_sdb_.end = end;
  return with_c;
}

void Drive::finish(Ctx& c) {
  const bool shared = deferred_sdb_.n && settle_deferred_sdb(c);
  bool own_status = !c.c.t_complete;
  if (own_status) {
    // Status only: a D2H (non-queued) or Set Device Bits (queued).
    c.c.t_complete = send_fis(c.t, c.queued ? fis_dwords::kSetDeviceBits : fis_dwords::kRegD2H);
  }
  // On the device side's own wire every queued command's status is an SDB of its own,
  // after its data there.
  if (coalesce_sdb_ && c.queued && (own_status || shared)) {
    const SimTime sdb = link_.fis_ns(fis_dwords::kSetDeviceBits);
    own_status_[c.c.tag] = own_wire_.reserve(c.own_t == kNever ? c.t : c.own_t, sdb) - sdb;
    own_due_[c.c.tag] = c.own_due;
    shares_sdb_[c.c.tag] = shared;
  }
  if (!c.failed) c.c.status = ata::kStatusDrdy;
  else ++stats_.errors;
  if (c.queued) {
    if (!c.c.aborted_by_ncq_error && c.c.t_complete > ncq_error_at_) {
      // Overtaken by an earlier error, whatever its own outcome: aborted when the error was
      // reported (a failure of its own would otherwise keep its tag busy past the log read).
      c.c.status = ata::kStatusDrdy | ata::kStatusErr;
      c.c.error = ata::kErrorAbrt;
      c.c.t_complete = ncq_error_at_;
      c.c.aborted_by_ncq_error = true;
      ++stats_.ncq_aborted;
    } else if (c.failed && !c.c.aborted_by_ncq_error) {
      raise_ncq_error(c.c);
    }
    tag_busy_until_[c.c.tag] = std::max(tag_busy_until_[c.c.tag], c.c.t_complete);
  } else {
    nonqueued_busy_until_ = c.c.t_complete;
    if (c.abort_queue) raise_ncq_error(c.c);  // when its own error goes out
  }
  if (coalesce_sdb_ && own_status && c.queued && !c.failed && !c.c.aborted_by_ncq_error) {
    last_sdb_.end = c.c.t_complete;
    last_sdb_.start = last_sdb_.oldest_due = c.c.t_complete - link_.fis_ns(fis_dwords::kSetDeviceBits);
    last_sdb_.n = 1;
    last_sdb_.seqs[0] = pending_.next_seq();  // pushed next
  }
  push(c.c);
}

void Drive::raise_ncq_error(const Completion& failed) {
  SimTime at = failed.t_complete;
  if (at >= ncq_error_at_) return;  // already halted earlier
  ++stats_.ncq_errors;
  ncq_error_at_ = at;
  ncq_log_ = NcqErrorLog{true, !failed.queued, failed.tag, failed.status, failed.error,
                         failed.lba, uint16_t(failed.sectors)};
  // Every queued command still outstanding at that point is aborted with it; so is one a
  // later error (timed ahead, before this one was known) had aborted already: it ends at
  // this error now, or it would hold its tag busy past the host's log read, which the
  // drive would then abort (the queue halted until the later error's time: every command
  // sent meanwhile aborted at once).
  pending_.update_all([&](Completion& c) {
    if (!c.queued || c.t_complete <= at) return;
    if (!c.aborted_by_ncq_error) {
      c.status = ata::kStatusDrdy | ata::kStatusErr;
      c.error = ata::kErrorAbrt;
      c.aborted_by_ncq_error = true;
      ++stats_.ncq_aborted;
    }
    c.t_complete = std::max(at, c.t_arrive);  // one sent into the halted queue ends where it came
    tag_busy_until_[c.tag] = c.t_complete;
  });
}

void Drive::power_off(SimTime t) {
  if (!ssd_.powered()) return;
  ssd_.power_off(t);
  stats_.dropped_at_power_loss += pending_.drop_after(t);
  link_.reset(t);
  own_wire_.reset(t);
  data_phase_end_ = std::min(data_phase_end_, t);
  last_sdb_.n = deferred_sdb_.n = 0;
  tag_busy_until_.fill(0);
  nonqueued_busy_until_ = 0;
  ncq_error_at_ = kNever;
  ncq_log_ = NcqErrorLog{};
  erase_prepared_ = false;
}

void Drive::power_on(SimTime t) {
  if (ssd_.powered()) return;
  ready_at_ = ssd_.power_on(t);
  security_enabled_ = false;
  commands_seen_ = 0;
}

void Drive::comreset(SimTime t) {
  ++stats_.comresets;
  reset_port(t);
}

void Drive::reset_port(SimTime t) {
  pending_.drop_after(t);
  last_sdb_.n = deferred_sdb_.n = 0;
  tag_busy_until_.fill(0);
  nonqueued_busy_until_ = 0;
  ncq_error_at_ = kNever;
  ncq_log_ = NcqErrorLog{};
  ssd_.set_hung(false);
  commands_seen_ = 0;
  erase_prepared_ = false;
  link_.reset(t);
  own_wire_.reset(t);
  data_phase_end_ = std::min(data_phase_end_, t);
  // OOB and the signature D2H take about a millisecond on a real device.
  ready_at_ = std::max(ready_at_, t + kNsPerMs);
}

}  // namespace fisrig::drive
