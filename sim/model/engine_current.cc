// The engine model's current sampler (current_sampler.h) on the SATA drive.
#include "engine_model.h"

namespace fisrig::model {

void EngineModel::sample(const fisrig_cmd_desc& d, fisrig_cpl_record& r) {
  sampler_.descriptor(d, now_ticks(), r, sense(), push_current());
  if (sampler_.on) drive_.current_ma(now_);  // the drive keeps its NAND activity from here on
}

void EngineModel::sample_through(SimTime t) { sampler_.through(t, sense(), push_current()); }

}  // namespace fisrig::model
