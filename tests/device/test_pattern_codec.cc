// The pattern codec: received sectors to the Drive's content words and back.
#include <gtest/gtest.h>

#include <random>

#include "fisrig/device/pattern_codec.h"
#include "fisrig/link/crc.h"
#include "rig.h"

using namespace fisrig;
using device::PatternCodec;
using PK = drive::WritePayload::Kind;

namespace {
std::array<uint32_t, 128> sector(int kind, uint64_t lba, uint32_t word, uint8_t pct) {
  std::array<uint32_t, 128> s{};
  fisrig_pattern_sector(kind, lba, word, pct, s.data());
  return s;
}
}  // namespace

TEST(PatternCodec, Xorshift32InverseUndoesOneStep) {
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    uint32_t x = rng() | 1;
    EXPECT_EQ(PatternCodec::xorshift32_inverse(fisrig_xorshift32(x)), x);
  }
}

TEST(PatternCodec, StampCrcStepIsTheLinksSataCrc) {
  // pattern.h steps the CRC four bits at a time by a table of its own (the firmware has no
  // link library): it must be the link's CRC, which tests/link holds to LiteSATA's.
  std::mt19937 rng(11);
  for (int i = 0; i < 100000; ++i) {
    uint32_t crc = rng(), dword = rng();
    ASSERT_EQ(fisrig_crc32_step(crc, dword), link::crc_step(crc, dword)) << std::hex << crc << " " << dword;
  }
}

TEST(PatternCodec, ZerosStampAndLfsrSectorsBecomeWords) {
  PatternCodec codec;
  auto z = sector(FISRIG_PATTERN_ZEROS, 5, 0, 0);
  EXPECT_EQ(codec.classify(5, z.data()), (PatternCodec::Content{PK::kZeros, 0, 0}));

  // A STAMP sector gives its data_word and compress_pct back; the next LBA of the same
  // write is the same word.
  auto st = sector(FISRIG_PATTERN_STAMP, 0x123456789AULL, 77, 40);
  PatternCodec::Content c = codec.classify(0x123456789AULL, st.data());
  ASSERT_EQ(c.kind, PK::kWord);
  EXPECT_EQ(c.compress_pct, 40);
  const PatternCodec::Entry* e = codec.entry(c.word);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, PatternCodec::Kind::kStamp);
  EXPECT_EQ(e->data_word, 77u);
  auto st2 = sector(FISRIG_PATTERN_STAMP, 0x123456789BULL, 77, 40);
  EXPECT_EQ(codec.classify(0x123456789BULL, st2.data()), c);

  // LFSR: the seed comes back from dword 0, data_word from the seed.
  for (uint32_t word : {0u, 1u, 0xDEADBEEFu, 0xA5A5A5A5u ^ 42u}) {
    auto l = sector(FISRIG_PATTERN_LFSR, 42, word, 100);
    PatternCodec::Content lc = codec.classify(42, l.data());
    ASSERT_EQ(lc.kind, PK::kWord) << word;
    EXPECT_EQ(lc.compress_pct, 100);
    std::array<uint32_t, 128> back{};
    codec.expand(lc.word, 42, nullptr, back.data());
    EXPECT_EQ(back, l) << word;
  }
  EXPECT_EQ(codec.dictionary_size(), 5u);  // one STAMP, four LFSR words
}

TEST(PatternCodec, AnythingElseIsLiteral) {
  PatternCodec codec;
  // A STAMP sector at the wrong LBA (misdirected), one flipped bit, random bytes.
  auto st = sector(FISRIG_PATTERN_STAMP, 100, 9, 100);
  EXPECT_EQ(codec.classify(101, st.data()).kind, PK::kLiteral);
  auto l = sector(FISRIG_PATTERN_LFSR, 100, 9, 100);
  l[77] ^= 4;
  EXPECT_EQ(codec.classify(100, l.data()).kind, PK::kLiteral);
  std::array<uint32_t, 128> r{};
  std::mt19937 rng(3);
  for (auto& d : r) d = rng();
  EXPECT_EQ(codec.classify(100, r.data()).kind, PK::kLiteral);
  EXPECT_EQ(codec.dictionary_size(), 0u);
  // Literal sectors read back from their bytes.
  std::array<uint32_t, 128> back{};
  codec.expand(drive::kLiteralWord, 100, reinterpret_cast<const uint8_t*>(r.data()), back.data());
  EXPECT_EQ(back, r);
}

TEST(PatternCodec, ExpandRegeneratesEveryStampCompressibility) {
  PatternCodec codec;
  for (uint8_t pct : {0, 1, 50, 99, 100}) {
    auto st = sector(FISRIG_PATTERN_STAMP, 1 << 20, 5, pct);
    PatternCodec::Content c = codec.classify(1 << 20, st.data());
    ASSERT_EQ(c.kind, PK::kWord);
    std::array<uint32_t, 128> back{};
    codec.expand(c.word, 1 << 20, nullptr, back.data());
    EXPECT_EQ(back, st) << int(pct);
  }
  // A word the codec never made reads as the Drive's own signature bytes.
  std::array<uint32_t, 128> sig{};
  codec.expand(12345, 7, nullptr, sig.data());
  uint8_t want[512];
  drive::signature_bytes(12345, 7, want);
  EXPECT_EQ(std::memcmp(sig.data(), want, 512), 0);
}
