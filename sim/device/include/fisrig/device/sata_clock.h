// The SATA clock the device side runs on: one cycle per dword, 150 MHz (Gen3), and the
// Drive's nanosecond clock. Cycle n starts at n * 20 / 3 ns.
#pragma once

#include <cstdint>

#include "fisrig/ssd/sim_time.h"

namespace fisrig::device {

using drive::SimTime;

constexpr uint64_t kNeverCycle = ~uint64_t{0};

constexpr SimTime cycle_ns(uint64_t cycle) { return cycle * 20 / 3; }
// The first cycle that starts at or after t.
constexpr uint64_t first_cycle_at(SimTime t) { return t == drive::kNever ? kNeverCycle : (t * 3 + 19) / 20; }
constexpr uint64_t us_cycles(double us) { return uint64_t(us * 150.0 + 0.5); }

}  // namespace fisrig::device
