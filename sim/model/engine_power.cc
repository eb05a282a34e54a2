// The engine model's power controller and link: cuts, rails, POWER ON and COMRESET, and what
// the slots had on the wire when the link went.
#include "engine_model.h"

#include "descriptor_fields.h"
#include "host_phy.h"

#include <algorithm>
#include <cstring>

namespace fisrig::model {

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
  if (wire_capture_.on()) capture_record(r);
  push_cq(r);
}

void EngineModel::lose_outstanding(SimTime t, uint8_t result) {
  CutMasks m;
  for (uint8_t s = 0; s < FISRIG_ENGINE_SLOTS; ++s) {
    if (!busy(s)) continue;
    fisrig_cpl_record r;
    if (slots_[s].lost) r = slots_[s].lost_as;  // what it had when the drive fell quiet
    else crossed_by(s, t, r, m);
    slots_[s].lost = false;
    free_slot(s);
    r.result = result;
    r.ts_status = ns_to_ticks(t);
    complete(s, r);
  }
  issue_known_ = false;
  recovery_ = Recovery{};  // the held records went out above, LINK_LOST
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
        return wait_for_link(r, d);
      }
      sample_through(now_);
      drive_.power_on(power_back_at(now_));
      // The drive sends COMINIT once it has booted; a link still falling does not come up
      // before the rig has seen it fall (link_fell asks the drive then).
      boots_until_ = drive_.ready_at();
      if (!link_up_ && link_fall_at_ == drive::kNever && boots_until_ != drive::kNever)
        link_up_at_ = ticks_to_ns(host_phy::signature_after(ns_to_ticks(boots_until_)));
      return wait_for_link(r, d);  // its record comes with the signature, or TIMEOUT
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

void EngineModel::link(const fisrig_cmd_desc& d) {
  fisrig_cpl_record r{};
  r.user_tag = d.user_tag;
  r.ts_submit = now_ticks();
  if (d.command == FISRIG_LINK_COMRESET) {
    comreset_link(now_, host_phy::kComresetFallTicks);
    return wait_for_link(r, d);
  }
  if (d.command != FISRIG_LINK_WAIT_UP) r.result = FISRIG_RESULT_REFUSED;
  // The wait's length is itself a result: a link that does not come back within the
  // timeout (the drive powered off, or dead) ends it TIMEOUT then.
  if (d.command == FISRIG_LINK_WAIT_UP && !link_up_) return wait_for_link(r, d);
  r.ts_status = now_ticks();
  complete(0, r);
}

// ---- the link as the rig's PHY sees it (host_phy.h) ----

void EngineModel::link_event(uint8_t code, uint8_t result, uint64_t tick) {
  fisrig_cpl_record r{};
  r.user_tag = FISRIG_USER_TAG_EVENT;
  r.result = result;
  r.ts_submit = r.ts_status = tick;
  complete(code, r);
}

void EngineModel::comreset_link(SimTime t, uint64_t fall_ticks) {
  if (wire_capture_.on()) capture_event(FISRIG_CAPTURE_EVENT_COMRESET, ns_to_ticks(t), FISRIG_CAPTURE_NO_TAG);
  lose_outstanding(t, FISRIG_RESULT_LINK_LOST);
  if (link_up_) link_event(FISRIG_EVENT_REC_LINK_DOWN, FISRIG_RESULT_LINK_LOST, ns_to_ticks(t) + fall_ticks);
  link_up_ = false;
  link_fall_at_ = link_up_at_ = drive::kNever;
  if (!drive_.powered() || boots_until_ == drive::kNever) return;  // nothing answers
  // A booting drive answers when it is ready; another is reset and answers at once.
  uint64_t cominit = ns_to_ticks(t) + fall_ticks + host_phy::kComresetToCominitTicks;
  if (boots_until_ > t) cominit = std::max(ns_to_ticks(boots_until_), ns_to_ticks(t) + FISRIG_COMRESET_CYCLES);
  else drive_.comreset(t);
  link_up_at_ = std::max(ticks_to_ns(host_phy::signature_after(cominit)), drive_.ready_at());
}

void EngineModel::quiet_from(SimTime t) {
  CutMasks m;
  for (uint32_t b = busy_mask_; b; b &= b - 1) {
    Slot& slot = slots_[__builtin_ctz(b)];
    if (!slot.lost) crossed_by(uint8_t(__builtin_ctz(b)), t, slot.lost_as, m);
    slot.lost = true;
  }
  if (link_up_ && link_fall_at_ == drive::kNever)
    link_fall_at_ = ticks_to_ns(ns_to_ticks(t) + host_phy::fall_seen_ticks(int(drive_.link_gen())));
}

void EngineModel::link_fell(SimTime t) {
  link_fall_at_ = drive::kNever;
  link_up_ = false;
  link_event(FISRIG_EVENT_REC_LINK_DOWN, FISRIG_RESULT_LINK_LOST, ns_to_ticks(t));
  lose_outstanding(t, FISRIG_RESULT_LINK_LOST);
  // The rig's PHY sends COMRESET again and again; the drive answers once it has booted.
  if (drive_.powered() && boots_until_ != drive::kNever)
    link_up_at_ = ticks_to_ns(host_phy::signature_after(std::max(ns_to_ticks(boots_until_), ns_to_ticks(t))));
}

void EngineModel::link_came_up(SimTime t) {
  link_up_at_ = drive::kNever;
  link_up_ = true;
  link_event(FISRIG_EVENT_REC_LINK_UP, FISRIG_RESULT_OK, ns_to_ticks(t));
  if (!link_wait_.on) return;
  link_wait_.on = false;
  fisrig_cpl_record r = link_wait_.r;
  r.ts_status = ns_to_ticks(t) + host_phy::kSignatureToOpTicks;
  complete(0, r);
}

void EngineModel::wait_for_link(const fisrig_cpl_record& r, const fisrig_cmd_desc& d) {
  link_wait_.on = true;
  link_wait_.r = r;
  link_wait_.give_up = now_ + ticks_to_ns(timeout_ticks_of(d));
}

void EngineModel::link_wait_timed_out(SimTime t) {
  link_wait_.on = false;
  fisrig_cpl_record r = link_wait_.r;
  r.result = FISRIG_RESULT_TIMEOUT;
  r.ts_status = ns_to_ticks(t);
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
  quiet_from(t);      // before the drive drops their completions
  drive_.power_off(t);
}

SimTime EngineModel::power_back_at(SimTime t) const {
  uint64_t last = 0;
  for (int pin = 0; pin < 4; ++pin)
    if (takes_power(pin)) last = std::max(last, stage_.on_ticks[pin]);
  return ticks_to_ns(ns_to_ticks(t) + last);
}

}  // namespace fisrig::model
