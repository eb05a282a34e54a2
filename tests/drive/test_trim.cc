// DATA SET MANAGEMENT TRIM, non-queued and queued: what reads back, what space frees,
// and what a bad range list does (nothing).
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {
std::vector<uint32_t> words_of(Drive& d, uint64_t lba, uint32_t n, SimTime& now) {
  std::vector<uint32_t> w(n);
  EXPECT_TRUE(exec(d, read_dma(lba, n, w.data()), now).ok());
  return w;
}

// Writes every LBA once, 1 MiB at a time; returns the time it took.
SimTime fill(Drive& d, SimTime& now, uint32_t word) {
  SimTime t0 = now;
  for (uint64_t lba = 0; lba + 2048 <= d.user_sectors(); lba += 2048)
    EXPECT_TRUE(exec(d, write_dma(lba, 2048, word), now).ok());
  exec(d, simple(ata::kFlushCacheExt), now);
  return now - t0;
}

RangeList whole_drive(const Drive& d) {
  RangeList r(8);
  uint64_t lba = 0;
  for (uint32_t i = 0; i < 512 && lba < d.user_sectors(); ++i) {
    uint16_t n = uint16_t(std::min<uint64_t>(0xFFFF, d.user_sectors() - lba));
    r.add(i, lba, n);
    lba += n;
  }
  return r;
}
}  // namespace

TEST(Trim, TrimmedSectorsReadZerosAndFreeSpace) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 256, 9), now).ok());
  exec(d, simple(ata::kFlushCacheExt), now);
  uint64_t valid_before = d.ssd().ftl().valid_slots();
  RangeList r;
  r.add(0, 64, 64).add(1, 200, 3);  // two whole-page runs... and a partial page
  Completion c = exec(d, trim(r), now);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.sectors, 67u);
  auto w = words_of(d, 0, 256, now);
  for (uint32_t s = 0; s < 256; ++s) {
    bool trimmed = (s >= 64 && s < 128) || (s >= 200 && s < 203);
    EXPECT_EQ(w[s], trimmed ? 0u : 9u) << "sector " << s;
  }
  std::vector<uint8_t> bytes(512);
  ASSERT_TRUE(exec(d, read_dma(70, 1, nullptr, bytes.data()), now).ok());
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), 512);
  // 64 sectors = 8 whole pages leave the mapping; the partial page stays mapped.
  EXPECT_EQ(valid_before - d.ssd().ftl().valid_slots(), 8u);
  EXPECT_EQ(d.ssd().stats().sectors_trimmed, 67u);
}

TEST(Trim, QueuedTrimThroughSendFpdma) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(800, 16, 4), now).ok());
  RangeList r;
  r.add(0, 800, 16);
  Completion c = exec(d, trim_queued(5, r), now);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c.queued);
  EXPECT_EQ(c.tag, 5);
  EXPECT_GT(c.t_accept, c.t_arrive);  // released with a D2H before the ranges moved
  for (uint32_t v : words_of(d, 800, 16, now)) EXPECT_EQ(v, 0u);
}

TEST(Trim, BadRangeListIsAbortedAndTrimsNothing) {
  Drive d(tiny());
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 8, 3), now).ok());
  RangeList r;
  r.add(0, 0, 8).add(1, d.user_sectors() - 4, 8);  // the second runs past the end
  Completion c = exec(d, trim(r), now);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.error, ata::kErrorAbrt);
  EXPECT_EQ(words_of(d, 0, 8, now)[0], 3u);

  RangeList big(d.config().identity.dsm_max_blocks + 1);
  big.add(0, 0, 8);
  c = exec(d, trim(big), now);
  EXPECT_EQ(c.error, ata::kErrorAbrt);  // more blocks than IDENTIFY word 105 allows
  EXPECT_EQ(words_of(d, 0, 8, now)[0], 3u);

  AtaCommand not_trim = trim(r);
  not_trim.features = 0;  // DSM without the TRIM bit
  EXPECT_EQ(exec(d, not_trim, now).error, ata::kErrorAbrt);
}

TEST(Trim, WholeDriveTrimMakesGcFree) {
  Drive d(tiny());
  SimTime now = 0;
  fill(d, now, 1);
  ASSERT_TRUE(exec(d, trim(whole_drive(d)), now).ok());
  EXPECT_EQ(d.ssd().ftl().valid_slots(), 0u);
  d.ssd().ftl().reset_counters();
  fill(d, now, 2);
  EXPECT_EQ(d.ssd().ftl().counters().gc_slots, 0u);  // every victim was empty: nothing to copy
}


// gc.serial_erase (blocking-gc-256gb, fill-delete-fill's SSD1 and SSD2): a refill without
// TRIM reclaims every superblock in the write path, each erased one die at a time while
// the host waits; with TRIM and a pause, idle GC has erased them all beforehand. A drive
// that erases each die beside the others' programs pays only each die's own erase (3 ms
// in 88 ms of programs here; 3 in 354 on the 256 GB drives).
TEST(Trim, WithoutTrimARefillWaitsForSeriallyErasedSuperblocks) {
  const std::string blocking =
      "base = \"tiny-1gb\"\n[gc]\nserial_erase = true\nbackground_target_free_pct = 100\n"
      "background_max_valid_pct = 0\nbackground_idle_ms = 50\n";
  Drive d(drive::parse_profile(blocking, "blocking.toml"));
  SimTime now = 0;
  SimTime first = fill(d, now, 1);
  ASSERT_TRUE(exec(d, trim(whole_drive(d)), now).ok());
  now += d_us(1'000'000);  // a second's pause: idle GC erases the empty superblocks
  d.idle_until(now);
  SimTime with_trim = fill(d, now, 2);
  SimTime without_trim = fill(d, now, 3);
  EXPECT_LT(with_trim, first * 101 / 100);
  // 8 dies x 3 ms of erase for every 8 MiB superblock, each taking 8 x 88 ms to program
  // on 8 dies at once: about 27% more.
  EXPECT_GT(without_trim, with_trim * 120 / 100);
  EXPECT_LT(without_trim, with_trim * 135 / 100);

  Drive good(tiny());
  now = 0;
  SimTime good_first = fill(good, now, 1);
  EXPECT_LT(fill(good, now, 2), good_first * 105 / 100);
}

// controller.trim_keeps_mapped_pct (sandforce-240gb-fw502): a TRIM reads back zeros, yet
// about that share of the pages stays mapped, the same ones at every TRIM, so their reads
// still go to the flash.
TEST(Trim, BrokenTrimReadsZerosButLeavesPagesMapped) {
  Drive d(drive::parse_profile("base = \"tiny-1gb\"\n[controller]\ntrim_keeps_mapped_pct = 50\n", "fw.toml"));
  SimTime now = 0;
  ASSERT_TRUE(exec(d, write_dma(0, 8192, 7), now).ok());  // 1,024 pages
  exec(d, simple(ata::kFlushCacheExt), now);
  RangeList r;
  r.add(0, 0, 8192);
  ASSERT_TRUE(exec(d, trim(r), now).ok());
  uint64_t kept = d.ssd().ftl().valid_slots();
  EXPECT_GT(kept, 1024u * 45 / 100);
  EXPECT_LT(kept, 1024u * 55 / 100);
  ASSERT_TRUE(exec(d, trim(r), now).ok());
  EXPECT_EQ(d.ssd().ftl().valid_slots(), kept);  // trimming again changes nothing
  uint64_t reads = d.ssd().nand().counters().page_reads;
  for (uint32_t v : words_of(d, 0, 8192, now)) ASSERT_EQ(v, 0u);
  EXPECT_GT(d.ssd().nand().counters().page_reads, reads);  // the kept pages cost NAND reads

  Drive fixed(tiny());
  now = 0;
  ASSERT_TRUE(exec(fixed, write_dma(0, 8192, 7), now).ok());
  exec(fixed, simple(ata::kFlushCacheExt), now);
  ASSERT_TRUE(exec(fixed, trim(r), now).ok());
  EXPECT_EQ(fixed.ssd().ftl().valid_slots(), 0u);
}
