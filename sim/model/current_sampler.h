// The current sampler (engine_if.h FISRIG_POWER_SAMPLE) as the gateware's (engine/current.py),
// for either engine model: a sample at first_tick and every period after it, a record of
// FISRIG_CURRENT_SAMPLES. The samples are taken when their record is due (the clock at its
// last sample) or before the drive's power changes, whichever comes first, each at its own
// tick: the drive's NAND operations are known by then (it books them when it takes a
// command, and an idle drive's when told of the time), so a sample taken late reads what
// it would have then.
#pragma once

#include <algorithm>
#include <cstring>

#include "wire_stamps.h"

extern "C" {
#include "fisrig/engine_if.h"
}

namespace fisrig::model {

struct CurrentSampler {
  bool on = false;
  uint64_t period = FISRIG_CURRENT_PERIOD_TICKS;
  uint64_t first_tick = 0;   // the buffer's first sample
  uint32_t taken = 0;        // samples in the buffer
  uint8_t dropped = 0;       // records dropped since the last one sent
  uint16_t ma[FISRIG_CURRENT_SAMPLES] = {};

  // When the buffer's record is due (its last sample's tick), kNever when off.
  SimTime next_record() const {
    return on ? ticks_to_ns(first_tick + (FISRIG_CURRENT_SAMPLES - 1) * period) : drive::kNever;
  }

  // A POWER SAMPLE descriptor at now_tick (r its record): count 1 starts (again), 0 stops;
  // what was taken before this tick goes out first, as the gateware's stop or restart
  // flushes it (a sample due on this very tick is the restart's first, or not taken).
  // sense(t): the rig's current sense at t (Ssd::sensed_ma); push(record): false when the
  // ring is full (the record is dropped, and the next one says so).
  template <class Sense, class Push>
  void descriptor(const fisrig_cmd_desc& d, uint64_t now_tick, fisrig_cpl_record& r, Sense&& sense, Push&& push) {
    r.ts_status = now_tick;
    if (d.count > 1) {
      r.result = FISRIG_RESULT_REFUSED;
      return;
    }
    if (on) {
      through(ticks_to_ns(now_tick) - 1, sense, push);
      if (taken) write_record(push);
    }
    on = d.count == 1;
    period = d.timeout_ticks ? d.timeout_ticks : FISRIG_CURRENT_PERIOD_TICKS;
    first_tick = now_tick;
    taken = 0;
  }

  // Takes the samples due by t (ticks at or before it), a record each time the buffer fills.
  template <class Sense, class Push>
  void through(SimTime t, Sense&& sense, Push&& push) {
    if (!on) return;
    for (;;) {
      const uint64_t tick = first_tick + taken * period;
      const SimTime at = ticks_to_ns(tick);
      if (at > t) return;
      ma[taken++] = sense(at);
      if (taken == FISRIG_CURRENT_SAMPLES) write_record(push);
    }
  }

  template <class Push>
  void write_record(Push&& push) {
    fisrig_current_record c{};
    c.user_tag = FISRIG_USER_TAG_EVENT;
    c.slot = FISRIG_EVENT_REC_CURRENT;
    c.result = FISRIG_RESULT_OK;
    c.samples = uint8_t(taken);
    std::copy(ma, ma + taken, c.ma);
    c.period_ticks = uint32_t(period);
    c.ts_first = first_tick;
    first_tick += taken * period;
    taken = 0;
    c.dropped = dropped;
    fisrig_cpl_record r;
    static_assert(sizeof r == sizeof c, "engine_if.h");
    std::memcpy(&r, &c, sizeof r);
    if (push(r)) {
      dropped = 0;
    } else if (dropped != 255) {
      ++dropped;
    }
  }
};

}  // namespace fisrig::model
