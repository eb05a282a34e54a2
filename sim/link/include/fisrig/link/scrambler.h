// The SATA link scrambler: an LFSR with G(x) = x^16 + x^15 + x^13 + x^4 + 1, seeded
// FFFFh at every SOF, whose output is XORed into each FIS dword (CRC included) and into
// the junk that follows CONT. Bits come out most significant stage first and fill a
// dword from bit 0 up, so the first dword is C2D2768Dh, as the specification requires.
// The dword sequence repeats every 65535 dwords.
#pragma once

#include <cstdint>

namespace fisrig::link {

class Scrambler {
 public:
  static constexpr uint32_t kPeriod = 65535;  // dwords

  Scrambler() { reset(); }
  void reset() { index_ = 0; }  // at SOF (data) or at CONT (junk)
  uint32_t next();              // the next mask dword
  uint32_t scramble(uint32_t dword) { return dword ^ next(); }  // also unscrambles

 private:
  uint32_t index_ = 0;
};

}  // namespace fisrig::link
