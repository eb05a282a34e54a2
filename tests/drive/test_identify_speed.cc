// IDENTIFY words 76 and 77: every speed up to the drive's fastest, and the speed the link
// negotiated (ACS-3 / SATA 3.x: word 77 bits 3:1 code the current signal speed).
#include <gtest/gtest.h>

#include "drive_helpers.h"

using namespace fisrig;
using namespace fisrig::test;

TEST(IdentifySpeed, Word76ListsEverySpeedUpToTheFastest) {
  for (uint32_t max_gen : {1u, 2u, 3u}) {
    drive::DriveConfig cfg = tiny();
    cfg.interface.max_gen = max_gen;
    Drive d(cfg);
    auto w = d.identify_words();
    EXPECT_EQ(w[76] & 0x000E, (2u << max_gen) - 2) << max_gen;  // bits 1..max_gen
    EXPECT_EQ(w[76] & 0x0100, 0x0100);                           // NCQ
    // Before any link-up (the model target), the link runs at the drive's fastest.
    EXPECT_EQ((w[77] >> 1) & 7, max_gen);
  }
}

TEST(IdentifySpeed, Word77IsTheNegotiatedSpeedNotTheFastest) {
  Drive d(tiny());
  ASSERT_EQ(d.config().interface.max_gen, 3u);
  d.set_link_gen(1);
  auto w = d.identify_words();
  EXPECT_EQ((w[77] >> 1) & 7, 1);   // a Gen1 link
  EXPECT_EQ(w[76] & 0x000E, 0x0E);  // the drive still supports Gen1-Gen3
  EXPECT_EQ(w[77] & (1 << 6), 1 << 6);  // SEND/RECEIVE FPDMA QUEUED
  d.set_link_gen(2);
  EXPECT_EQ((d.identify_words()[77] >> 1) & 7, 2);
  uint8_t sum = 0;
  for (uint16_t x : d.identify_words()) sum = uint8_t(sum + (x & 0xFF) + (x >> 8));
  EXPECT_EQ(sum, 0);  // the integrity word follows
}

TEST(IdentifySpeed, ProfileKeyIsMaxGenAndTheOldNameStillLoads) {
  const std::string base = R"([capacity]
user_gb = 1
[nand]
channels = 4
dies_per_channel = 2
planes_per_die = 2
blocks_per_plane = 128
pages_per_block = 64
page_bytes = 8192
[interface]
)";
  EXPECT_EQ(drive::parse_profile(base + "max_gen = 2\n", "p.toml").interface.max_gen, 2u);
  EXPECT_EQ(drive::parse_profile(base + "gen = 1\n", "p.toml").interface.max_gen, 1u);
  for (const char* bad : {"max_gen = 4\n", "gen = 0\n"}) {
    try {
      drive::parse_profile(base + bad, "p.toml");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const drive::ProfileError& e) {
      EXPECT_EQ(std::string(e.what()), "p.toml:11: 'interface.max_gen': must be 1, 2 or 3");
    }
  }
}

// fisrig-drive identify answers from the config alone (Drive::new_drive_identify_words):
// the same words as a drive built from it, and the same refusal of a config it refuses.
TEST(IdentifyOfANewDrive, IsTheWordsOfTheDriveBuilt) {
  std::vector<drive::DriveConfig> configs;
  for (const std::string& name : drive::builtin_profile_names()) {
    drive::DriveConfig c = drive::load_profile(name);
    if (c.user_bytes() <= (uint64_t{2} << 30)) configs.push_back(c);  // the big ones take a second each to build
  }
  ASSERT_GE(configs.size(), 5u);
  drive::DriveConfig c = tiny();
  c.identity.model = "a model name of forty characters, no les";
  c.identity.serial = "S1";
  c.identity.security_erase_minutes = 600;
  c.identity.dsm_max_blocks = 1;
  configs.push_back(c);
  c = tiny();
  c.cache.enabled = false;
  c.interface.max_gen = 2;
  configs.push_back(c);
  c = tiny();
  c.user_sectors -= 12345;
  configs.push_back(c);
  for (const drive::DriveConfig& cfg : configs)
    EXPECT_EQ(Drive::new_drive_identify_words(cfg), Drive(cfg).identify_words()) << cfg.name;

  c = tiny();
  c.nand.page_bytes = 1000;
  EXPECT_THROW(Drive{c}, drive::ProfileError);
  EXPECT_THROW(Drive::new_drive_identify_words(c), drive::ProfileError);
}
