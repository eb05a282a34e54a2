// Nothing written is lost or mixed up, whatever GC does: random writes (aligned and not),
// TRIMs and reads against a shadow copy of every sector, on a full drive.
#include <gtest/gtest.h>

#include <random>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {

class Shadowed {
 public:
  explicit Shadowed(drive::DriveConfig cfg) : d_(cfg), shadow_(d_.user_sectors(), 0) {}

  void write(uint64_t lba, uint32_t n, uint32_t word, uint8_t compress = 100) {
    AtaCommand c = write_dma(lba, n, word);
    c.payload.compress_pct = compress;
    ASSERT_TRUE(exec(d_, c, now_).ok());
    std::fill(shadow_.begin() + long(lba), shadow_.begin() + long(lba + n), word);
    sector_ops_ += n;
  }
  void trim(uint64_t lba, uint16_t n) {
    RangeList r;
    r.add(0, lba, n);
    ASSERT_TRUE(exec(d_, test::trim(r), now_).ok());
    std::fill(shadow_.begin() + long(lba), shadow_.begin() + long(lba + n), 0u);
    sector_ops_ += n;
  }
  void check(uint64_t lba, uint32_t n) {
    std::vector<uint32_t> got(n);
    ASSERT_TRUE(exec(d_, read_dma(lba, n, got.data()), now_).ok());
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], shadow_[lba + i]) << "LBA " << lba + i;
    sector_ops_ += n;
  }
  void check_all() {
    for (uint64_t lba = 0; lba < d_.user_sectors(); lba += 4096)
      check(lba, uint32_t(std::min<uint64_t>(4096, d_.user_sectors() - lba)));
  }
  void fill() {
    for (uint64_t lba = 0; lba < d_.user_sectors(); lba += 2048)
      write(lba, uint32_t(std::min<uint64_t>(2048, d_.user_sectors() - lba)), uint32_t(1 + lba / 2048));
  }
  // Mixed random operations, `ops` of them.
  void churn(uint64_t ops, uint64_t seed, bool compress) {
    std::mt19937_64 rng(seed);
    const uint64_t n = d_.user_sectors();
    for (uint64_t i = 0; i < ops; ++i) {
      uint32_t kind = uint32_t(rng() % 100);
      bool aligned = rng() % 4 != 0;
      uint32_t len = aligned ? 8 * uint32_t(1 + rng() % 16) : uint32_t(1 + rng() % 40);
      uint64_t lba = rng() % (n - len);
      if (aligned) lba &= ~7ull;
      if (kind < 80) write(lba, len, uint32_t(1 + rng() % drive::kMaxUserWord), compress ? uint8_t(rng() % 101) : 100);
      else if (kind < 88) trim(lba, uint16_t(len));
      else check(lba, len);
    }
  }

  Drive d_;
  std::vector<uint32_t> shadow_;
  SimTime now_ = 0;
  uint64_t sector_ops_ = 0;
};

}  // namespace

TEST(Integrity, RandomWritesTrimsReadsThroughGc) {
  Shadowed s(tiny());
  s.fill();
  s.churn(300000, 1, false);
  s.check_all();
  EXPECT_TRUE(s.d_.ssd().ftl().maps_agree());
  EXPECT_GT(s.sector_ops_, 5000000u);
  EXPECT_GT(s.d_.ssd().ftl().counters().gc_victims, 50u);
  EXPECT_GT(s.d_.ssd().ftl().counters().write_amplification(), 1.2);
  EXPECT_GT(s.d_.ssd().content().mixed_pages(), 0u);  // unaligned writes left pages in pieces
}

TEST(Integrity, CompressingDriveThroughGc) {
  drive::DriveConfig cfg = tiny();
  cfg.controller.compression = true;
  cfg.controller.compression_slot_bytes = 1024;
  Shadowed s(cfg);
  s.fill();
  s.churn(150000, 2, true);
  s.check_all();
  EXPECT_TRUE(s.d_.ssd().ftl().maps_agree());
  EXPECT_GT(s.d_.ssd().ftl().counters().gc_victims, 10u);
}

TEST(Integrity, LiteralBytesComeBackAsWritten) {
  Drive d(tiny());
  SimTime now = 0;
  std::vector<uint8_t> data(64 * 512);
  std::mt19937 rng(5);
  for (auto& b : data) b = uint8_t(rng());
  AtaCommand w = write_dma(1003, 64, 0);  // unaligned on purpose
  w.payload.kind = drive::WritePayload::Kind::kLiteral;
  w.payload.bytes = data.data();
  ASSERT_TRUE(exec(d, w, now).ok());
  // Overwrite the middle with a pattern, then read all of it back as bytes.
  ASSERT_TRUE(exec(d, write_dma(1010, 4, 77), now).ok());
  std::vector<uint8_t> got(64 * 512);
  std::vector<uint32_t> words(64);
  ASSERT_TRUE(exec(d, read_dma(1003, 64, words.data(), got.data()), now).ok());
  for (uint32_t s = 0; s < 64; ++s) {
    if (s >= 7 && s < 11) {
      EXPECT_EQ(words[s], 77u);
      std::vector<uint8_t> sig(512);
      drive::signature_bytes(77, 1003 + s, sig.data());
      EXPECT_EQ(0, std::memcmp(&got[s * 512], sig.data(), 512)) << "sector " << s;
    } else {
      EXPECT_EQ(words[s], drive::kLiteralWord);
      EXPECT_EQ(0, std::memcmp(&got[s * 512], &data[s * 512], 512)) << "sector " << s;
    }
  }
}
