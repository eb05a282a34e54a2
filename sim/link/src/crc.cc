#include "fisrig/link/crc.h"

#include <array>

namespace fisrig::link {

namespace {
// The CRC register after shifting one byte through it, for every top byte.
std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b << 24;
    for (int i = 0; i < 8; ++i) r = (r & 0x80000000u) ? (r << 1) ^ kCrcPolynomial : r << 1;
    t[b] = r;
  }
  return t;
}
const std::array<uint32_t, 256> kTable = make_table();
}  // namespace

uint32_t crc_step(uint32_t crc, uint32_t dword) {
  crc ^= dword;
  for (int i = 0; i < 4; ++i) crc = (crc << 8) ^ kTable[crc >> 24];
  return crc;
}

uint32_t crc_of(const uint32_t* dwords, size_t n) {
  uint32_t crc = kCrcInit;
  for (size_t i = 0; i < n; ++i) crc = crc_step(crc, dwords[i]);
  return crc;
}

}  // namespace fisrig::link
