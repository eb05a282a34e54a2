#include "fisrig/link/scrambler.h"

#include <vector>

namespace fisrig::link {

namespace {
constexpr uint16_t kTaps = 0xA011;  // x^15 + x^13 + x^4 + 1; x^16 is the shift out

// The whole period, computed once: the link scrambles every dword it sends.
std::vector<uint32_t> make_sequence() {
  std::vector<uint32_t> seq(Scrambler::kPeriod);
  uint16_t s = 0xFFFF;
  for (uint32_t& d : seq) {
    d = 0;
    for (int bit = 0; bit < 32; ++bit) {
      uint32_t out = s >> 15;
      d |= out << bit;
      s = uint16_t(s << 1);
      if (out) s ^= kTaps;
    }
  }
  return seq;
}
const std::vector<uint32_t> kSequence = make_sequence();
}  // namespace

uint32_t Scrambler::next() {
  uint32_t d = kSequence[index_];
  index_ = index_ + 1 == kPeriod ? 0 : index_ + 1;
  return d;
}

}  // namespace fisrig::link
