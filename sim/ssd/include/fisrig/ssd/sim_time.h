// Simulated time. Every figure the drive reports is on this clock, never the wall clock.
#pragma once

#include <cstdint>

namespace fisrig::drive {

using SimTime = uint64_t;  // nanoseconds since the drive was created

constexpr SimTime kNsPerUs = 1000;
constexpr SimTime kNsPerMs = 1000 * kNsPerUs;
constexpr SimTime kNsPerS = 1000 * kNsPerMs;
constexpr SimTime kNever = ~SimTime{0};

}  // namespace fisrig::drive
