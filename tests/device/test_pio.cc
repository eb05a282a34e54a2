// PIO data-in (IDENTIFY, READ LOG EXT), PIO data-out (SECURITY) and non-data commands.
#include <gtest/gtest.h>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

namespace {
std::string ata_string(const std::vector<uint8_t>& b, int first_word, int words) {
  std::string s;
  for (int i = 0; i < words; ++i) {
    s += char(b[2 * (first_word + i) + 1]);  // first character in the high byte
    s += char(b[2 * (first_word + i)]);
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
uint64_t words_u64(const std::vector<uint8_t>& b, int first_word, int words) {
  uint64_t v = 0;
  for (int i = words - 1; i >= 0; --i) v = v << 16 | (b[2 * (first_word + i)] | b[2 * (first_word + i) + 1] << 8);
  return v;
}
}  // namespace

TEST(DevicePio, IdentifyIsOnePioSetupAndOneDataFis) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  size_t fises = r.engine.fis_types.size();
  HostCommand c = identify();
  ASSERT_TRUE(r.exec(c));
  EXPECT_EQ(c.status, 0x40);  // the PIO Setup's E_Status ended it: no D2H
  EXPECT_EQ(c.pio_setups, 1u);
  EXPECT_EQ(c.data_fises_in, 1u);
  std::vector<uint8_t> types(r.engine.fis_types.begin() + long(fises), r.engine.fis_types.end());
  EXPECT_EQ(types, (std::vector<uint8_t>{0x5F, 0x46}));
  ASSERT_EQ(c.in.size(), 512u);
  const auto& cfg = r.dev.drive().config();
  EXPECT_EQ(ata_string(c.in, 27, 20), cfg.identity.model);
  EXPECT_EQ(ata_string(c.in, 10, 10), cfg.identity.serial);
  EXPECT_EQ(words_u64(c.in, 100, 4), cfg.user_sectors);  // LBA48 capacity
  EXPECT_EQ(words_u64(c.in, 75, 1), 31u);                // queue depth 32
  // The integrity word: all 512 bytes sum to zero.
  uint8_t sum = 0;
  for (uint8_t b : c.in) sum = uint8_t(sum + b);
  EXPECT_EQ(sum, 0);
  EXPECT_EQ(r.dev.counters().fis_sent[0x5F], 1u);
  EXPECT_EQ(r.dev.counters().commands, 1u);
}

TEST(DevicePio, ReadLogExtServesTheDirectoryAndAbortsAMissingPage) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  HostCommand dir = read_log(0x00);
  ASSERT_TRUE(r.exec(dir));
  ASSERT_EQ(dir.in.size(), 512u);
  EXPECT_EQ(dir.status, 0x40);
  EXPECT_EQ(dir.in[0], 1);         // GPL version
  EXPECT_EQ(dir.in[2 * 0x10], 1);  // log 10h: one page
  EXPECT_EQ(dir.in[2 * 0x11], 1);

  // Two pages of a one-page log: aborted, with a D2H and no data phase.
  HostCommand bad = read_log(0x10, 2);
  ASSERT_TRUE(r.exec(bad));
  EXPECT_EQ(bad.status, 0x41);
  EXPECT_EQ(bad.error, 0x04);
  EXPECT_EQ(bad.pio_setups, 0u);
  EXPECT_TRUE(bad.in.empty());
}

TEST(DevicePio, SecurityEraseTakesThePasswordBlockAndErases) {
  drive::DriveConfig cfg = tiny();
  cfg.timing.erase_ns = 20000;  // 128 superblocks one after another: keep the test short
  Rig r(cfg);
  ASSERT_TRUE(r.bring_up());
  HostCommand w = write_dma(64, 8, pattern(FISRIG_PATTERN_STAMP, 64, 8, 3));
  ASSERT_TRUE(r.exec(w));
  ASSERT_EQ(w.status, 0x40);

  HostCommand pw;
  pw.command = ata::kSecuritySetPassword;
  pw.out.assign(512, 0);
  pw.out[2] = 'p';
  ASSERT_TRUE(r.exec(pw));
  EXPECT_EQ(pw.status, 0x40);
  EXPECT_EQ(pw.pio_setups, 1u);  // PIO Setup (host to device), our Data FIS, D2H
  EXPECT_EQ(pw.out_sent, 512u);
  EXPECT_TRUE(r.dev.drive().identify_words()[128] & 0x0002);  // security enabled

  HostCommand prep;
  prep.command = ata::kSecurityErasePrepare;
  ASSERT_TRUE(r.exec(prep));
  EXPECT_EQ(prep.status, 0x40);
  HostCommand erase;
  erase.command = ata::kSecurityEraseUnit;
  erase.out = pw.out;
  ASSERT_TRUE(r.exec(erase, 20'000'000));
  EXPECT_EQ(erase.status, 0x40);
  EXPECT_EQ(erase.out_sent, 512u);

  HostCommand rd = read_dma(64, 8);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.in, std::vector<uint8_t>(8 * 512, 0));
}

TEST(DevicePio, NonDataCommandsAndUnknownOpcodes) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  HostCommand flush;
  flush.command = ata::kFlushCacheExt;
  ASSERT_TRUE(r.exec(flush));
  EXPECT_EQ(flush.status, 0x40);
  HostCommand cache_off;
  cache_off.command = ata::kSetFeatures;
  cache_off.features = ata::kFeatureDisableWriteCache;
  ASSERT_TRUE(r.exec(cache_off));
  EXPECT_EQ(cache_off.status, 0x40);
  EXPECT_FALSE(r.dev.drive().write_cache_enabled());
  HostCommand unknown;
  unknown.command = 0xB0;  // SMART: not implemented
  ASSERT_TRUE(r.exec(unknown));
  EXPECT_EQ(unknown.status, 0x41);
  EXPECT_EQ(unknown.error, 0x04);
}
