// DMA data in and out: pattern, literal and zero data round trips, TRIM, errors.
#include <gtest/gtest.h>

#include <random>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = uint8_t(rng());
  return b;
}

struct DmaTest : ::testing::Test {
  Rig r;
  void SetUp() override { ASSERT_TRUE(r.bring_up()); }
  HostCommand write(uint64_t lba, uint16_t n, std::vector<uint8_t> data) {
    HostCommand c = write_dma(lba, n, std::move(data));
    EXPECT_TRUE(r.exec(c));
    EXPECT_EQ(c.status, 0x40);
    return c;
  }
  HostCommand read(uint64_t lba, uint16_t n) {
    HostCommand c = read_dma(lba, n);
    EXPECT_TRUE(r.exec(c));
    EXPECT_EQ(c.status, 0x40);
    return c;
  }
};
}  // namespace

TEST_F(DmaTest, StampRoundTripIsStoredAsOneWord) {
  auto data = pattern(FISRIG_PATTERN_STAMP, 1000, 128, 0x1234, 50);
  HostCommand w = write(1000, 128, data);
  EXPECT_EQ(w.dma_activates, 8u);  // 64 KiB as 8 KiB Data FISes, each asked for
  EXPECT_EQ(w.out_sent, 128u * 512);
  uint32_t word = r.dev.drive().ssd().content().word(1000);
  EXPECT_NE(word, drive::kLiteralWord);
  EXPECT_NE(word, drive::kZeroWord);
  EXPECT_EQ(r.dev.drive().ssd().content().word(1127), word);
  EXPECT_EQ(r.dev.drive().ssd().content().literal_sectors(), 0u);
  HostCommand rd = read(1000, 128);
  EXPECT_EQ(rd.data_fises_in, 8u);
  EXPECT_EQ(rd.in, data);
  EXPECT_EQ(r.dev.drive().ssd().stats().sectors_written, 128u);
  EXPECT_EQ(r.dev.drive().ssd().stats().sectors_read, 128u);
}

TEST_F(DmaTest, LfsrRoundTripAndFuaWrite) {
  auto data = pattern(FISRIG_PATTERN_LFSR, 5555, 24, 0xCAFE);
  HostCommand w = write_dma(5555, 24, data, true);
  ASSERT_TRUE(r.exec(w));
  EXPECT_EQ(w.status, 0x40);
  EXPECT_EQ(w.command, ata::kWriteDmaFuaExt);
  HostCommand rd = read(5555, 24);
  EXPECT_EQ(rd.in, data);
  const device::PatternCodec::Entry* e = r.dev.codec().entry(r.dev.drive().ssd().content().word(5560));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, device::PatternCodec::Kind::kLfsr);
  EXPECT_EQ(e->data_word, 0xCAFEu);
}

TEST_F(DmaTest, LiteralAndMixedDataRoundTrip) {
  auto data = random_bytes(40 * 512, 9);
  write(2048, 40, data);
  EXPECT_EQ(r.dev.drive().ssd().content().word(2050), drive::kLiteralWord);
  EXPECT_EQ(read(2048, 40).in, data);

  // Half pattern, half random in one command: stored as literal bytes, read back exact.
  auto mixed = pattern(FISRIG_PATTERN_STAMP, 4096, 16, 1);
  auto tail = random_bytes(16 * 512, 10);
  mixed.insert(mixed.end(), tail.begin(), tail.end());
  write(4096, 32, mixed);
  EXPECT_EQ(read(4096, 32).in, mixed);
  // A read spanning literal, pattern and never-written sectors.
  write(4128, 8, pattern(FISRIG_PATTERN_LFSR, 4128, 8, 2));
  HostCommand span = read(4090, 50);
  std::vector<uint8_t> want(6 * 512, 0);
  want.insert(want.end(), mixed.begin(), mixed.end());
  auto lfsr = pattern(FISRIG_PATTERN_LFSR, 4128, 8, 2);
  want.insert(want.end(), lfsr.begin(), lfsr.end());
  want.resize(50 * 512, 0);
  EXPECT_EQ(span.in, want);
}

TEST_F(DmaTest, ZerosAreStoredAsZeros) {
  write(300, 16, pattern(FISRIG_PATTERN_STAMP, 300, 16, 5));
  write(300, 16, std::vector<uint8_t>(16 * 512, 0));
  EXPECT_EQ(r.dev.drive().ssd().content().word(300), drive::kZeroWord);
  EXPECT_EQ(read(300, 16).in, std::vector<uint8_t>(16 * 512, 0));
  EXPECT_EQ(r.dev.codec().dictionary_size(), 1u);
}

TEST_F(DmaTest, TrimThenReadZeros) {
  auto data = pattern(FISRIG_PATTERN_STAMP, 10000, 64, 8);
  write(10000, 64, data);
  HostCommand t = trim({{10008, 16}, {10040, 8}});
  ASSERT_TRUE(r.exec(t));
  EXPECT_EQ(t.status, 0x40);
  EXPECT_EQ(t.dma_activates, 1u);  // one block of ranges
  EXPECT_EQ(r.dev.drive().ssd().stats().sectors_trimmed, 24u);
  HostCommand rd = read(10000, 64);
  std::vector<uint8_t> want = data;
  std::fill(want.begin() + 8 * 512, want.begin() + 24 * 512, 0);
  std::fill(want.begin() + 40 * 512, want.begin() + 48 * 512, 0);
  EXPECT_EQ(rd.in, want);

  // More range blocks than the drive takes: aborted without a data phase.
  HostCommand big = trim({{0, 1}});
  big.count = 64;
  ASSERT_TRUE(r.exec(big));
  EXPECT_EQ(big.status, 0x41);
  EXPECT_EQ(big.error, 0x04);
  EXPECT_EQ(big.dma_activates, 0u);
}

TEST_F(DmaTest, OutOfRangeFailsIdnfWithoutData) {
  uint64_t end = r.dev.drive().user_sectors();
  HostCommand w = write_dma(end - 4, 8, std::vector<uint8_t>(8 * 512, 1));
  ASSERT_TRUE(r.exec(w));
  EXPECT_EQ(w.status, 0x41);
  EXPECT_EQ(w.error, 0x10);
  EXPECT_EQ(w.dma_activates, 0u);
  HostCommand rd = read_dma(end - 4, 8);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.error, 0x10);
  EXPECT_EQ(rd.data_fises_in, 0u);
  EXPECT_EQ(rd.lba_out, end - 4);
}

TEST_F(DmaTest, UncReadSendsTheGoodSectorsThenTheError) {
  auto data = pattern(FISRIG_PATTERN_STAMP, 700, 40, 4);
  write(700, 40, data);
  r.dev.drive().faults().unc.push_back({725, 2});
  HostCommand rd = read_dma(700, 40);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.status, 0x41);
  EXPECT_EQ(rd.error, 0x40);
  EXPECT_EQ(rd.lba_out, 725u);
  ASSERT_EQ(rd.in.size(), 25u * 512);  // sectors 700..724
  EXPECT_TRUE(std::equal(rd.in.begin(), rd.in.end(), data.begin()));
  EXPECT_EQ(rd.data_fises_in, 2u);  // 16 + 9 sectors
}

TEST_F(DmaTest, TheWriteCompletesNoEarlierThanTheDriveSays) {
  // A write through (FUA) waits for NAND programming: far longer than the transfer.
  auto data = pattern(FISRIG_PATTERN_STAMP, 64, 8, 11);
  HostCommand w = write_dma(64, 8, data, true);
  ASSERT_TRUE(r.exec(w));
  uint64_t took = w.done_cycle - w.h2d_cycle;
  EXPECT_GT(took, device::us_cycles(1000));  // program_us = 1300 in tiny-1gb
}
