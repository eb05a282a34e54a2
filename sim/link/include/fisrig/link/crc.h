// The SATA frame CRC: CRC-32 with the IEEE 802.3 polynomial (04C11DB7h), not reflected,
// seeded with 52325032h, over whole dwords with bit 31 first, no final inversion. It
// covers a FIS from its first dword to its last, before scrambling.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fisrig::link {

constexpr uint32_t kCrcPolynomial = 0x04C11DB7u;
constexpr uint32_t kCrcInit = 0x52325032u;

// The running CRC after one more dword.
uint32_t crc_step(uint32_t crc, uint32_t dword);
// The CRC of a whole FIS.
uint32_t crc_of(const uint32_t* dwords, size_t n);

}  // namespace fisrig::link
