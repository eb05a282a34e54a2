// The SLC cache (cache.slc_gb): sequential writes run at SLC speed until it is full, then
// at the native cells' (the whole-drive fill's fall reviewers chart), and come back fast
// after idle time has folded it into the native cells.
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {

// The tiny drive as TLC, with an SLC cache of 100 MB.
drive::DriveConfig tlc_with_slc(double slc_gb) {
  drive::DriveConfig c = tiny();
  c.timing.bits_per_cell = 3;
  c.timing.page_read_ns = {50 * drive::kNsPerUs, 70 * drive::kNsPerUs, 90 * drive::kNsPerUs};
  c.timing.page_program_ns = {400 * drive::kNsPerUs, 1200 * drive::kNsPerUs, 2400 * drive::kNsPerUs};
  c.timing.slc_program_ns = 150 * drive::kNsPerUs;
  c.cache.slc_gb = slc_gb;
  c.validate();
  return c;
}

// MB/s of `mb` of 128 KiB writes from `lba` on, one at a time.
double write_mbps(Drive& d, uint64_t& lba, uint64_t mb, SimTime& now) {
  const uint32_t n = 256;  // sectors: 128 KiB
  SimTime start = now;
  for (uint64_t i = 0; i < mb * 8; ++i, lba += n) EXPECT_TRUE(exec(d, write_dma(lba, n, 7), now).ok());
  return double(mb) * 1048576.0 * 1e3 / double(now - start);
}

TEST(SlcCache, SequentialWritesFallWhenItIsFullAndComeBackAfterIdle) {
  Drive d(tlc_with_slc(0.1));
  EXPECT_GT(d.ssd().ftl().slc_budget(), 0u);
  SimTime now = 0;
  uint64_t lba = 0;
  double fast = write_mbps(d, lba, 64, now);
  EXPECT_GT(d.ssd().ftl().slc_superblocks(), 0u);
  write_mbps(d, lba, 96, now);  // past the cache's 100 MB
  double slow = write_mbps(d, lba, 64, now);
  EXPECT_GT(fast, 3 * slow) << fast << " MB/s in the cache, " << slow << " past it";
  // Idle folds the cache into the native cells; writes are fast again.
  d.idle_until(now += 20 * drive::kNsPerS);
  EXPECT_EQ(d.ssd().ftl().slc_superblocks(), 0u);
  double again = write_mbps(d, lba, 64, now);
  EXPECT_GT(again, 3 * slow) << again << " MB/s after idle";
  EXPECT_TRUE(d.ssd().ftl().maps_agree());
  // What was written reads back, from SLC or folded.
  uint32_t w = 0;
  EXPECT_TRUE(exec(d, read_dma(256 * 10, 1, &w), now).ok());
  EXPECT_EQ(w, 7u);
}

TEST(SlcCache, WithoutOneTheSameDriveWritesAtItsNativeSpeedThroughout) {
  Drive d(tlc_with_slc(0));
  EXPECT_EQ(d.ssd().ftl().slc_budget(), 0u);
  SimTime now = 0;
  uint64_t lba = 0;
  double first = write_mbps(d, lba, 64, now);
  write_mbps(d, lba, 96, now);
  double later = write_mbps(d, lba, 64, now);
  EXPECT_NEAR(first, later, 0.25 * later);
}

TEST(SlcCache, ItNeedsCellsOfMoreThanOneBit) {
  drive::DriveConfig c = tiny();
  c.cache.slc_gb = 0.1;
  EXPECT_THROW(c.validate(), drive::ProfileError);
}

}  // namespace
