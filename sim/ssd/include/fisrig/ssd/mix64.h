// splitmix64's finaliser: a fixed, well-mixed 64-bit draw from a number, for what the
// drive draws from its seed or a page's index.
#pragma once

#include <cstdint>

namespace fisrig::drive {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace fisrig::drive
