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
  EXPECT_GT(d.ssd().stats().last_power_loss.pages_reverted, 0u);
}

// Power-loss protection: the same cut right after the write loses nothing and tears
// nothing, the buffer drained on the capacitors.
TEST(CachePower, PowerLossProtectionKeepsWhatWasAcknowledged) {
  drive::DriveConfig cfg = tiny();
  cfg.power.plp = true;
  Drive d(cfg);
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(100, 8, 1), now).ok());
  exec(d, simple(ata::kFlushCacheExt), now);
  ASSERT_TRUE(exec(d, write_dma(100, 8, 2), now).ok());
  ASSERT_TRUE(exec(d, write_dma(4096, 256, 3), now).ok());  // more than a program unit
  cycle(d, now);
  EXPECT_EQ(word_at(d, 100, now), 2u);
  EXPECT_EQ(word_at(d, 4096 + 255, now), 3u);
  EXPECT_EQ(d.ssd().stats().last_power_loss.pages_reverted, 0u);
  EXPECT_EQ(d.ssd().stats().last_power_loss.pages_torn, 0u);
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
  EXPECT_EQ(d.ssd().stats().last_power_loss.pages_reverted, 0u);
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
  EXPECT_GT(d.ssd().stats().last_power_loss.pages_torn, 0u);
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
  EXPECT_EQ(uint64_t(unc), d.ssd().stats().last_power_loss.pages_torn);
}

TEST(CachePower, CommandsWhilePoweredOffAreNotAnswered) {
  Drive d(tiny());
  SimTime now = 0;
  d.power_off(now);
  Completion c = d.execute(read_dma(0, 8), now + 10);
  EXPECT_EQ(c.t_complete, drive::kNever);
  EXPECT_EQ(d.stats().ignored_while_off, 1u);
}

// ---- what survives a cut, in order, and the lies (PowerConfig; docs/power-loss.md) ----

namespace {

// Writes to 64 pages in 64 KiB pieces, then the cut at `at_ns` after the first write went in.
struct Buffered {
  Drive d;
  SimTime now = 0;
  SimTime first_write_end = 0;
  explicit Buffered(drive::DriveConfig cfg, uint32_t writes = 8) : d(cfg) {
    for (uint32_t i = 0; i < writes; ++i) {
      Completion c = exec(d, write_dma(uint64_t(i) * 128, 128, 100 + i), now);
      EXPECT_TRUE(c.ok());
      if (!i) first_write_end = c.t_complete;
    }
  }
  std::vector<uint32_t> after_cut(SimTime at) {
    d.power_off(at);
    now = at + drive::kNsPerMs;
    d.power_on(now);
    now = d.ready_at();
    std::vector<uint32_t> words;
    for (uint64_t lba = 0; lba < 8 * 128 + 8; lba += 8) words.push_back(word_at(d, lba, now));
    return words;
  }
};

drive::DriveConfig honest() {
  drive::DriveConfig c = tiny();
  c.power.torn_reads_unc = false;
  return c;
}

}  // namespace

// An honest drive keeps a prefix: once one buffered page is lost, nothing written after
// it survives, whatever its own program had finished.
TEST(CachePower, HonestDriveKeepsAPrefixOfWhatItWasTold) {
  Buffered b(honest());
  auto words = b.after_cut(b.now);  // right after the last write: most of it still buffered
  bool lost = false;
  for (uint32_t w : words) {
    if (w == 0) lost = true;
    if (lost) {  // braces: EXPECT_EQ is an if/else of its own (-Wdangling-else)
      EXPECT_EQ(w, 0u) << "a page survived a page lost before it";
    }
  }
  EXPECT_TRUE(lost);
  EXPECT_EQ(b.d.ssd().stats().last_power_loss.pages_reordered, 0u);
}

// A FUA write is acknowledged durable: it stays even behind a lost buffered page.
TEST(CachePower, HonestDriveKeepsFuaWritesBehindLostPages) {
  Drive d(honest());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 8, 1), now).ok());  // buffered, never flushed
  AtaCommand fua = write_dma(800, 8, 2);
  fua.command = ata::kWriteDmaFuaExt;
  ASSERT_TRUE(exec(d, fua, now).ok());
  cycle(d, now);
  EXPECT_EQ(word_at(d, 800, now), 2u);
}

TEST(CachePower, ReorderingDriveKeepsLaterPagesAndLosesEarlierOnes) {
  drive::DriveConfig c = honest();
  c.power.reorders = true;
  Buffered b(c);
  auto words = b.after_cut(b.now);
  bool lost_before_kept = false, lost = false;
  for (uint32_t w : words) {
    if (w == 0) lost = true;
    else if (lost) lost_before_kept = true;
  }
  EXPECT_TRUE(lost_before_kept);
  EXPECT_GT(b.d.ssd().stats().last_power_loss.pages_reordered, 0u);
}

TEST(CachePower, MisdirectingDrivePutsItsLastPagesOnePageOn) {
  drive::DriveConfig c = honest();
  c.power.misdirected_pages = 1;
  Drive d(c);
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(80, 8, 3), now).ok());
  ASSERT_TRUE(exec(d, simple(ata::kFlushCacheExt), now).ok());
  d.idle_until(now + drive::kNsPerMs);  // retired: durable before the cut
  cycle(d, now);
  EXPECT_EQ(word_at(d, 88, now), 3u);  // the page after it holds it
  EXPECT_EQ(word_at(d, 80, now), 0u);  // its own page what it held before
  EXPECT_EQ(d.ssd().stats().last_power_loss.pages_misdirected, 1u);
}

TEST(CachePower, DriveThatLosesAMapSegmentReadsZerosAcrossIt) {
  drive::DriveConfig c = honest();
  c.power.loses_map_segment = true;
  Drive d(c);
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 8, 4), now).ok());
  ASSERT_TRUE(exec(d, write_dma(4096, 8, 5), now).ok());  // the same 4 MiB segment
  ASSERT_TRUE(exec(d, write_dma(8192, 8, 6), now).ok());  // the next: untouched
  ASSERT_TRUE(exec(d, simple(ata::kFlushCacheExt), now).ok());
  ASSERT_TRUE(exec(d, write_dma(16, 8, 7), now).ok());
  ASSERT_TRUE(exec(d, simple(ata::kFlushCacheExt), now).ok());
  cycle(d, now);
  EXPECT_EQ(word_at(d, 0, now), 0u);
  EXPECT_EQ(word_at(d, 4096, now), 0u);
  EXPECT_EQ(word_at(d, 8192, now), 6u);
  EXPECT_EQ(d.ssd().stats().last_power_loss.pages_unmapped, 1024u);
}

TEST(CachePower, BitErrorsMarkPagesMadeDurableJustBeforeTheCut) {
  drive::DriveConfig c = honest();
  c.power.bit_errors_ns = 2 * drive::kNsPerMs;
  Drive d(c);
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 8, 8), now).ok());
  ASSERT_TRUE(exec(d, simple(ata::kFlushCacheExt), now).ok());
  now += 100 * drive::kNsPerMs;  // long durable
  d.idle_until(now);
  ASSERT_TRUE(exec(d, write_dma(64, 8, 9), now).ok());
  ASSERT_TRUE(exec(d, simple(ata::kFlushCacheExt), now).ok());
  cycle(d, now);
  EXPECT_EQ(word_at(d, 0, now), 8u);
  uint32_t w = word_at(d, 64, now);
  EXPECT_TRUE(drive::is_damaged(w));
  EXPECT_EQ(w & ~drive::kDamagedBit, 9u);
  EXPECT_EQ(d.ssd().stats().last_power_loss.pages_damaged, 1u);
}

TEST(CachePower, DyingDriveNeverComesReadyAfterItsCuts) {
  drive::DriveConfig c = honest();
  c.power.dies_after_cycles = 2;
  Drive d(c);
  SimTime now = 0;
  cycle(d, now);
  EXPECT_NE(d.ready_at(), drive::kNever);
  d.power_off(now);
  d.power_on(now + drive::kNsPerMs);
  EXPECT_EQ(d.ready_at(), drive::kNever);
  EXPECT_EQ(d.execute(read_dma(0, 8), now + 2 * drive::kNsPerMs).t_complete, drive::kNever);
}
