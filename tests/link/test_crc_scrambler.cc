// The link layer's CRC and scrambler against the Serial ATA specification's own examples.
#include <gtest/gtest.h>

#include "fisrig/link/crc.h"
#include "fisrig/link/scrambler.h"

using namespace fisrig::link;

// The specification's CRC example: a Register H2D FIS and the running CRC after each dword.
TEST(LinkCrc, SpecificationExample) {
  const uint32_t fis[] = {0x00308027, 0xE1234567, 0x00000000, 0x00000002, 0x00000000};
  const uint32_t running[] = {0x11E353FD, 0x0F656DA7, 0x3D14369C, 0x92D0D681, 0x319FFF6F};
  uint32_t crc = kCrcInit;
  for (int i = 0; i < 5; ++i) {
    crc = crc_step(crc, fis[i]);
    EXPECT_EQ(crc, running[i]) << "after dword " << i;
  }
  EXPECT_EQ(crc_of(fis, 5), 0x319FFF6Fu);
}

// The specification: "the first Dword output of any implementation must equal C2D2768Dh".
TEST(LinkScrambler, SpecificationFirstDwords) {
  Scrambler s;
  EXPECT_EQ(s.next(), 0xC2D2768Du);
  EXPECT_EQ(s.next(), 0x1F26B368u);
  EXPECT_EQ(s.next(), 0xA508436Cu);
}

TEST(LinkScrambler, PeriodAndReset) {
  Scrambler s;
  uint32_t first = s.next();
  for (uint32_t i = 1; i < Scrambler::kPeriod; ++i) s.next();
  EXPECT_EQ(s.next(), first);  // 65535 dwords later it starts over
  s.reset();
  EXPECT_EQ(s.next(), 0xC2D2768Du);
}

TEST(LinkScrambler, ScramblingTwiceIsIdentity) {
  Scrambler tx, rx;
  for (uint32_t i = 0; i < 5000; ++i) {
    uint32_t d = i * 2654435761u;
    EXPECT_EQ(rx.scramble(tx.scramble(d)), d);
  }
}
