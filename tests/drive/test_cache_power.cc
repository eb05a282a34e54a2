// The volatile write cache, FLUSH, FUA and power loss: what survives a cut, and what a
// drive that lies about FLUSH loses.
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {

uint32_t word_at(Drive& d, uint64_t lba, SimTime& now) {
  uint32_t w = 0;
  Completion c = exec(d, read_dma(lba, 1, &w), now);
  EXPECT_TRUE(c.ok());
  return w;
}

void cycle(Drive& d, SimTime& now) {
  d.power_off(now);
  now += drive::kNsPerMs;
  d.power_on(now);
  now = d.ready_at();
}

}  // namespace

// The cut comes right after the write completes: long before a NAND program finishes.
TEST(CachePower, AcknowledgedButUnflushedWritesAreLost) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(100, 8, 1), now).ok());
  exec(d, simple(ata::kFlushCacheExt), now);
  ASSERT_TRUE(exec(d, write_dma(100, 8, 2), now).ok());
  cycle(d, now);
  EXPECT_EQ(word_at(d, 100, now), 1u);
  EXPECT_GT(d.stats().last_power_loss.pages_reverted, 0u);
}

TEST(CachePower, FlushedWritesSurvive) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(100, 8, 2), now).ok());
  Completion f = exec(d, simple(ata::kFlushCacheExt), now);
  ASSERT_TRUE(f.ok());
  EXPECT_GT(f.t_complete - f.t_arrive, d.config().timing.program_ns);  // it waited for NAND
  cycle(d, now);
  EXPECT_EQ(word_at(d, 100, now), 2u);
  EXPECT_EQ(d.stats().last_power_loss.pages_reverted, 0u);
}

TEST(CachePower, FuaWritesAreDurableAtCompletion) {
  Drive d(tiny());
  SimTime now = 0;
  AtaCommand fua = write_dma(300, 8, 5);
  fua.command = ata::kWriteDmaFuaExt;
  ASSERT_TRUE(exec(d, fua, now).ok());
  Completion q = exec(d, write_fpdma(3, 400, 8, 6, true), now);
  ASSERT_TRUE(q.ok());
  cycle(d, now);
  EXPECT_EQ(word_at(d, 300, now), 5u);
  EXPECT_EQ(word_at(d, 400, now), 6u);
}

TEST(CachePower, WriteCacheOffMakesWritesDurableAndSlower) {
  Drive on(tiny()), off(tiny());
  SimTime t_on = 0, t_off = 0;
  ASSERT_TRUE(exec(off, simple(ata::kSetFeatures, ata::kFeatureDisableWriteCache), t_off).ok());
  EXPECT_FALSE(off.write_cache_enabled());
  EXPECT_EQ(off.identify_words()[85] & (1 << 5), 0);  // IDENTIFY says so too
  SimTime start_on = t_on, start_off = t_off;
  Completion a = exec(on, write_dma(0, 8, 1), t_on);
  Completion b = exec(off, write_dma(0, 8, 1), t_off);
  EXPECT_LT(a.t_complete - start_on, d_us(100));
  EXPECT_GT(b.t_complete - start_off, on.config().timing.program_ns);
  cycle(off, t_off);
  EXPECT_EQ(word_at(off, 0, t_off), 1u);
  ASSERT_TRUE(exec(off, simple(ata::kSetFeatures, ata::kFeatureEnableWriteCache), t_off).ok());
  EXPECT_TRUE(off.write_cache_enabled());
}

TEST(CachePower, DriveThatLiesAboutFlushLosesFlushedData) {
  drive::DriveConfig cfg = tiny();
  cfg.cache.flush_honest = false;
  Drive d(cfg);
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(100, 8, 7), now).ok());
  Completion f = exec(d, simple(ata::kFlushCacheExt), now);
  ASSERT_TRUE(f.ok());
  EXPECT_LT(f.t_complete - f.t_arrive, d_us(20));  // returned at once
  cycle(d, now);
  EXPECT_EQ(word_at(d, 100, now), 0u);
}

// Cut while a program is under way: those pages read UNC; outstanding commands vanish.
TEST(CachePower, CutMidProgramTearsPagesAndDropsCommands) {
  Drive d(tiny());
  SimTime now = 0;
  // Enough queued data to fill program units on every die.
  for (uint8_t tag = 0; tag < 32; ++tag) d.submit(write_fpdma(tag, uint64_t(tag) * 256, 256, 10 + tag), now);
  Completion first;
  ASSERT_TRUE(d.pop_completion(first));
  // Half-way through the first NAND programs.
  SimTime cut = first.t_complete + d.config().timing.program_ns / 2;
  d.power_off(cut);
  // What completed before the cut is still there to take; nothing after it is.
  while (d.pop_completion(first)) EXPECT_LE(first.t_complete, cut);
  EXPECT_GT(d.stats().dropped_at_power_loss, 0u);
  EXPECT_GT(d.stats().last_power_loss.pages_torn, 0u);
  now = cut + drive::kNsPerMs;
  d.power_on(now);
  now = d.ready_at();
  int unc = 0;
  for (uint64_t lba = 0; lba < 32 * 256; lba += 8) {
    Completion c = exec(d, read_dma(lba, 8), now);
    if (!c.ok()) {
      EXPECT_EQ(c.error, ata::kErrorUnc);
      EXPECT_EQ(c.lba, lba);
      ++unc;
    }
  }
  EXPECT_EQ(uint64_t(unc), d.stats().last_power_loss.pages_torn);
}

TEST(CachePower, CommandsWhilePoweredOffAreNotAnswered) {
  Drive d(tiny());
  SimTime now = 0;
  d.power_off(now);
  Completion c = d.execute(read_dma(0, 8), now + 10);
  EXPECT_EQ(c.t_complete, drive::kNever);
  EXPECT_EQ(d.stats().ignored_while_off, 1u);
}
