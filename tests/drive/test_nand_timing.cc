// The NAND's times: each page type its own (a page's index within its block says its type,
// in the shadow order), and the spreads around them drawn from the drive's seed, the same
// for the same seed and nothing at all for a profile that sets none.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "drive_helpers.h"
#include "fisrig/ssd/nand.h"

using namespace fisrig;
using namespace fisrig::test;
using drive::NandBackend;
using drive::NandGeometry;
using drive::NandTiming;
using drive::nand_page_type;

namespace {

NandGeometry geometry(uint32_t pages_per_block = 256) {
  NandGeometry g;
  g.channels = 2;
  g.dies_per_channel = 2;
  g.pages_per_block = pages_per_block;
  return g;
}

// consumer-256gb's MLC: lower and upper pages.
NandTiming mlc() {
  NandTiming t;
  t.bits_per_cell = 2;
  t.page_read_ns = {d_us(43), d_us(57)};
  t.page_program_ns = {d_us(850), d_us(1750)};
  t.erase_ns = d_us(3000);
  return t;
}

// A program's array time (tPROG) on a die of its own, so nothing queues ahead of it.
SimTime program_ns(NandBackend& n, uint32_t page, uint32_t block = 0, uint32_t die = 0) {
  n.reset_time(0);
  n.program(die, 0, 0, page, block);
  return n.last_program_ns();
}
SimTime read_ns(NandBackend& n, uint32_t page, uint32_t die = 0) {
  n.reset_time(0);
  return n.read(die, 0, 0, page);
}
SimTime erase_ns(NandBackend& n, uint32_t block, uint32_t die = 0) {
  n.reset_time(0);
  return n.erase(die, 0, block);
}

}  // namespace

// MLC's shadow order: L0 L1 U0 L2 U1 ... L(n-1) U(n-2) U(n-1); TLC's: L0 L1 M0 L2 M1 U0 ...
// Every word line has each of its pages once.
TEST(NandTiming, PageTypesFollowTheShadowOrder) {
  std::vector<uint32_t> mlc8, tlc9;
  for (uint32_t p = 0; p < 8; ++p) mlc8.push_back(nand_page_type(p, 8, 2));
  for (uint32_t p = 0; p < 9; ++p) tlc9.push_back(nand_page_type(p, 9, 3));
  EXPECT_EQ(mlc8, (std::vector<uint32_t>{0, 0, 1, 0, 1, 0, 1, 1}));
  EXPECT_EQ(tlc9, (std::vector<uint32_t>{0, 0, 1, 0, 1, 2, 1, 2, 2}));
  for (uint32_t p = 0; p < 256; ++p) EXPECT_EQ(nand_page_type(p, 256, 1), 0u);
  std::vector<uint32_t> count(2);
  for (uint32_t p = 0; p < 256; ++p) ++count[nand_page_type(p, 256, 2)];
  EXPECT_EQ(count, (std::vector<uint32_t>{128, 128}));
  EXPECT_EQ(nand_page_type(256 + 2, 256, 2), 1u);  // the next block starts over
}

// Each page type takes its own time: programs and reads of lower and upper pages.
TEST(NandTiming, EachPageTypeTakesItsTime) {
  NandBackend n(geometry(), mlc(), 7);
  for (uint32_t p : {0u, 1u, 3u, 5u, 253u}) {
    EXPECT_EQ(n.page_type(p), 0u) << p;
    EXPECT_EQ(program_ns(n, p), d_us(850)) << p;
    EXPECT_EQ(read_ns(n, p), d_us(43)) << p;
  }
  for (uint32_t p : {2u, 4u, 6u, 255u}) {
    EXPECT_EQ(n.page_type(p), 1u) << p;
    EXPECT_EQ(program_ns(n, p), d_us(1750)) << p;
    EXPECT_EQ(read_ns(n, p), d_us(57)) << p;
  }
  // The program's durable time is its transfer and its array time.
  n.reset_time(0);
  EXPECT_EQ(n.program(1, 16384, d_us(10), 2), d_us(10) + SimTime(16384 * 1e3 / 200 + 0.5) + d_us(1750));
}

// A profile that sets none of the new keys: every page takes read_us / program_us, every
// erase erase_us, whatever the seed, and no draw is taken.
TEST(NandTiming, WithoutTheNewKeysEveryTimeIsNominalWhateverTheSeed) {
  NandTiming t;  // read 50 us, program 1.3 ms, erase 3 ms
  NandBackend a(geometry(), t, 1), b(geometry(), t, 0xDEADBEEF);
  for (uint32_t p = 0; p < 256; ++p) {
    EXPECT_EQ(program_ns(a, p, p), d_us(1300));
    EXPECT_EQ(program_ns(b, p, p), d_us(1300));
    EXPECT_EQ(read_ns(a, p), d_us(50));
    EXPECT_EQ(erase_ns(b, p), d_us(3000));
  }
  // Page types without their own times (bits_per_cell alone) are still the one time.
  t.bits_per_cell = 2;
  NandBackend c(geometry(), t, 3);
  EXPECT_EQ(program_ns(c, 2), d_us(1300));
  EXPECT_EQ(read_ns(c, 2), d_us(50));
}

// A block's factor: its own speed, the same on every die of its superblock and at every
// program of its pages and erase, bounded by the spread, and the lower page (spread 0)
// untouched. The erase's follows the block too.
TEST(NandTiming, ABlocksSpreadIsItsOwnOnEveryDie) {
  NandTiming t = mlc();
  t.block_spread_pct = {0, 45};
  t.erase_spread_pct = 20;
  NandBackend n(geometry(), t, 11);
  std::set<SimTime> upper, erases;
  double sum = 0;
  const uint32_t blocks = 2000;
  for (uint32_t b = 0; b < blocks; ++b) {
    SimTime u = program_ns(n, 2, b, 0);
    for (uint32_t die = 1; die < 4; ++die) EXPECT_EQ(program_ns(n, 4, b, die), u);
    EXPECT_EQ(program_ns(n, 0, b, 3), d_us(850));  // lower page: no spread
    EXPECT_GE(u, d_us(1750) * 0.55 - 1);
    EXPECT_LE(u, d_us(1750) * 1.45 + 1);
    upper.insert(u);
    sum += double(u);
    SimTime e = erase_ns(n, b, 0);
    EXPECT_EQ(erase_ns(n, b, 2), e);
    EXPECT_GE(e, d_us(3000) * 0.8 - 1);
    EXPECT_LE(e, d_us(3000) * 1.2 + 1);
    erases.insert(e);
    EXPECT_EQ(program_ns(n, 2, b, 1), u);  // erased again, it is the same block
  }
  EXPECT_GT(upper.size(), blocks * 9 / 10);
  EXPECT_GT(erases.size(), blocks * 9 / 10);
  EXPECT_NEAR(sum / blocks / d_us(1750), 1.0, 0.02);  // triangular: the mean is the nominal
}

// The drive's seed decides every draw: the same seed the same times, another seed others.
TEST(NandTiming, SpreadsAreSeededAndRepeat) {
  NandTiming t = mlc();
  t.block_spread_pct = {0, 45};
  t.erase_spread_pct = 20;
  t.spread_pct = 10;
  auto run = [&](uint64_t seed) {
    NandBackend n(geometry(), t, seed);
    std::vector<SimTime> out;
    for (uint32_t i = 0; i < 500; ++i) {
      out.push_back(program_ns(n, i % 256, i % 37, i % 4));
      out.push_back(read_ns(n, i % 256, i % 4));
      out.push_back(erase_ns(n, i % 37, i % 4));
    }
    return out;
  };
  std::vector<SimTime> a = run(1), b = run(1), c = run(2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != c[i];
  EXPECT_GT(differ, a.size() * 9 / 10);
}

// Per-operation spread: every operation draws its own factor within the bound, around the
// nominal.
TEST(NandTiming, PerOperationSpreadIsBoundedAroundTheNominal) {
  NandTiming t = mlc();
  t.spread_pct = 20;
  NandBackend n(geometry(), t, 5);
  double sum = 0;
  std::set<SimTime> seen;
  for (int i = 0; i < 4000; ++i) {
    SimTime p = program_ns(n, 0);
    EXPECT_GE(p, d_us(850) * 0.8 - 1);
    EXPECT_LE(p, d_us(850) * 1.2 + 1);
    sum += double(p);
    seen.insert(p);
  }
  EXPECT_GT(seen.size(), 3000u);
  EXPECT_NEAR(sum / 4000 / d_us(850), 1.0, 0.01);
}

// A read retry costs its time on the die, for that share of reads.
TEST(NandTiming, ReadRetriesCostTheirTimeForTheirShare) {
  NandTiming t = mlc();
  t.read_retry_ns = d_us(200);
  t.read_retry_pct = 100;
  NandBackend all(geometry(), t, 1);
  EXPECT_EQ(read_ns(all, 0), d_us(43 + 200));
  EXPECT_EQ(read_ns(all, 2), d_us(57 + 200));
  t.read_retry_pct = 10;
  NandBackend some(geometry(), t, 1);
  int retried = 0;
  for (int i = 0; i < 10000; ++i) retried += read_ns(some, 0) == d_us(243);
  EXPECT_NEAR(retried, 1000, 120);
}

TEST(NandTiming, ProfileKeysParseAndAreChecked) {
  const std::string base = "base = \"tiny-1gb\"\n[nand]\n";
  drive::DriveConfig c = drive::parse_profile(base +
                                                  "bits_per_cell = 2\npage_read_us = [43, 57]\n"
                                                  "page_program_us = [850, 1750.5]\nblock_spread_pct = [0, 45]\n"
                                                  "erase_spread_pct = 20\nspread_pct = 3\n"
                                                  "read_retry_pct = 0.1\nread_retry_us = 150\n",
                                              "mlc.toml");
  EXPECT_EQ(c.timing.bits_per_cell, 2u);
  EXPECT_EQ(c.timing.page_read_ns, (std::vector<SimTime>{d_us(43), d_us(57)}));
  EXPECT_EQ(c.timing.page_program_ns, (std::vector<SimTime>{d_us(850), 1750500}));
  EXPECT_EQ(c.timing.block_spread_pct, (std::vector<double>{0, 45}));
  EXPECT_EQ(c.timing.erase_spread_pct, 20);
  EXPECT_EQ(c.timing.spread_pct, 3);
  EXPECT_EQ(c.timing.read_retry_ns, d_us(150));
  EXPECT_EQ(drive::parse_profile(base + "block_spread_pct = 30\n", "one.toml").timing.block_spread_pct,
            (std::vector<double>{30}));
  auto why = [&](const std::string& text) -> std::string {
    try {
      drive::parse_profile(base + text, "bad.toml");
    } catch (const drive::ProfileError& e) {
      return e.key() + ": " + e.why();
    }
    return "accepted";
  };
  EXPECT_EQ(why("page_program_us = [850, 1750]\n"),
            "nand.page_program_us: gives 2 page types' times; nand.bits_per_cell is 1 (one time per page "
            "type, lower page first)");
  EXPECT_EQ(why("bits_per_cell = 5\n"), "nand.bits_per_cell: must be 1 to 4");
  EXPECT_EQ(why("bits_per_cell = 3\nblock_spread_pct = [0, 45]\n").substr(0, 40),
            "nand.block_spread_pct: gives 2 page type");
  EXPECT_EQ(why("spread_pct = 100\n"), "nand.spread_pct: must be 0 or more and below 100");
  EXPECT_EQ(why("page_read_us = []\n").substr(0, 38), "nand.page_read_us: expected a list of ");
  EXPECT_EQ(why("bits_per_cell = 2\npage_read_us = [43, 0]\n"), "nand.page_read_us: a page type's time must be > 0");
}

namespace {

// A drive's completion times for a fixed run: a fill, random writes enough for GC, reads.
std::vector<SimTime> completions(drive::DriveConfig cfg, uint64_t seed) {
  cfg.faults.seed = seed;
  Drive d(cfg);
  SimTime now = 0;
  std::vector<SimTime> out;
  const uint64_t span = d.user_sectors() / 256 * 256;
  uint32_t word = 1;
  for (uint64_t lba = 0; lba < span; lba += 256) out.push_back(exec(d, write_dma(lba, 256, word++), now).t_complete);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 250000; ++i)
    out.push_back(exec(d, write_dma(rng() % (span / 8) * 8, 8, word++), now).t_complete);
  for (int i = 0; i < 2000; ++i) out.push_back(exec(d, read_dma(rng() % (span / 8) * 8, 8), now).t_complete);
  return out;
}

}  // namespace

// Whole drives: consumer-256gb's flash (scaled to 4 GB) runs the same for the same seed and
// otherwise for another; tiny-1gb, which sets none of the new keys, the same whatever the
// seed (its times are today's).
TEST(NandTiming, DrivesRepeatForTheirSeedAndUnchangedProfilesIgnoreIt) {
  drive::DriveConfig consumer = drive::scale_capacity(drive::load_profile("consumer-256gb"), 4);
  std::vector<SimTime> a = completions(consumer, 1), b = completions(consumer, 1), c = completions(consumer, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(completions(drive::load_profile("tiny-1gb"), 1), completions(drive::load_profile("tiny-1gb"), 2));
}
