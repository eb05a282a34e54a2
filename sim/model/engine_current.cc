// The engine model's current sampler, as the gateware's (engine/current.py).
#include "engine_model.h"

#include <algorithm>
#include <cstring>

namespace fisrig::model {

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

}  // namespace fisrig::model
