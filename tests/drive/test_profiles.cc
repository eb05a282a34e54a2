// Profiles a user writes: refused with the key and the line when wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fisrig/ssd/config.h"

using namespace fisrig::drive;

namespace {
const char* kGood = R"([identity]
model = "x"
[capacity]
user_gb = 1
[nand]
channels = 4
dies_per_channel = 2
planes_per_die = 2
blocks_per_plane = 128
pages_per_block = 64
page_bytes = 8192
)";

ProfileError refusal(const std::string& text) {
  try {
    parse_profile(text, "p.toml");
  } catch (const ProfileError& e) {
    return e;
  }
  ADD_FAILURE() << "profile was accepted";
  return ProfileError("", "", 0, "");
}
}  // namespace

TEST(Profiles, GoodProfileParses) {
  DriveConfig c = parse_profile(kGood, "p.toml");
  EXPECT_EQ(c.nand.channels, 4u);
  EXPECT_EQ(c.user_sectors, 1953120u);
  EXPECT_NEAR(c.over_provisioning(), 0.0737, 0.001);
}

TEST(Profiles, UnknownKeyIsNamedWithItsLine) {
  ProfileError e = refusal(std::string(kGood) + "[cache]\nmegabytes = 4\n");
  EXPECT_EQ(e.key(), "cache.megabytes");
  EXPECT_EQ(e.line(), 13);
  EXPECT_NE(std::string(e.what()).find("p.toml:13: 'cache.megabytes': unknown key"), std::string::npos);
}

TEST(Profiles, WrongTypeIsNamed) {
  ProfileError e = refusal(std::string(kGood) + "[cache]\nenabled = \"yes\"\n");
  EXPECT_EQ(e.key(), "cache.enabled");
  EXPECT_EQ(e.why(), "expected true or false");
}

TEST(Profiles, ImpossibleGeometryIsNamed) {
  std::string g = kGood;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = g;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_EQ(refusal(with("page_bytes = 8192", "page_bytes = 6000")).key(), "nand.page_bytes");
  EXPECT_EQ(refusal(with("channels = 4", "channels = 0")).key(), "nand.channels");
  ProfileError small = refusal(with("blocks_per_plane = 128", "blocks_per_plane = 100"));
  EXPECT_EQ(small.key(), "nand.blocks_per_plane");  // raw NAND below the user capacity
  EXPECT_EQ(small.line(), 9);
  EXPECT_EQ(refusal(with("user_gb = 1", "user_gb = 0")).key(), "capacity.user_gb");
}

TEST(Profiles, OverProvisioningSetsTheUserCapacityFromTheNand) {
  // The same NAND at each spare: the user capacity is its raw bytes over 1 + op_pct/100,
  // in whole 4 KiB pages, whatever user_gb said.
  for (double pct : {7.0, 12.5, 28.0}) {
    std::string text = kGood;
    text.replace(text.find("user_gb = 1"), 11, "user_gb = 1\nop_pct = " + std::to_string(pct));
    DriveConfig c = parse_profile(text, "p.toml");
    EXPECT_EQ(c.user_sectors % 8, 0u);
    EXPECT_NEAR(c.over_provisioning(), pct / 100, 0.0001) << pct;
  }
  std::string bad = kGood;
  bad.replace(bad.find("user_gb = 1"), 11, "op_pct = 0");
  ProfileError e = refusal(bad);
  EXPECT_EQ(e.key(), "capacity.op_pct");
  EXPECT_EQ(e.line(), 4);
}

TEST(Profiles, SyntaxErrorHasItsLine) {
  ProfileError e = refusal("[nand]\nchannels = = 4\n");
  EXPECT_EQ(e.line(), 2);
}

TEST(Profiles, FaultKnobsAreCheckedByName) {
  FaultKnobs k;
  EXPECT_THROW(k.set("crc_rate", "0.1"), std::invalid_argument);
  EXPECT_THROW(k.set("busy_rate", "2"), std::invalid_argument);
  EXPECT_THROW(k.set("busy_rate", "often"), std::invalid_argument);
  EXPECT_THROW(k.set("unc", "100-200"), std::invalid_argument);
  k.set("unc", "100+8,4096+1");
  ASSERT_EQ(k.unc.size(), 2u);
  EXPECT_EQ(k.unc[1].first, 4096u);
  ProfileError e = refusal(std::string(kGood) + "[faults]\nbusy_rate = 3\n");
  EXPECT_EQ(e.key(), "faults.busy_rate");
}

TEST(Profiles, EveryBuiltInProfileLoads) {
  auto names = builtin_profile_names();
  EXPECT_GE(names.size(), 4u);
  for (const std::string& n : names) {
    DriveConfig c = load_profile(n);
    EXPECT_GT(c.over_provisioning(), 0.05) << n;
  }
  EXPECT_TRUE(load_profile("sandforce-240gb").controller.compression);
  EXPECT_GT(load_profile("enterprise-200gb").over_provisioning(), 0.3);
}

// `base`: a built-in profile this one changes (the plp-* power-loss drives).
TEST(Profiles, BaseProfileIsLoadedFirstAndThenChanged) {
  DriveConfig tiny = load_profile("tiny-1gb");
  DriveConfig c = parse_profile("base = \"tiny-1gb\"\n[power]\nreorders = true\n", "liar.toml");
  EXPECT_EQ(c.user_sectors, tiny.user_sectors);
  EXPECT_EQ(c.nand.channels, tiny.nand.channels);
  EXPECT_TRUE(c.power.reorders);
  EXPECT_FALSE(tiny.power.reorders);
  EXPECT_EQ(c.name, "liar");
  EXPECT_TRUE(load_profile("plp-honest").power.torn_reads_unc == false);
}

TEST(Profiles, BadBaseIsNamedWithItsLine) {
  ProfileError e = refusal("\n\nbase = \"no-such-drive\"\n");
  EXPECT_EQ(e.key(), "base");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.why().find("no built-in profile 'no-such-drive'"), std::string::npos);
  EXPECT_EQ(refusal("base = \"../no-such.toml\"\n").why(), "no profile file ../no-such.toml");
  EXPECT_EQ(refusal("base = 3\n").why(), "expected a built-in profile's name or a profile file");
}

TEST(Profiles, BasesStackAndMayBeFiles) {
  // A profile on a power-loss profile (itself the tiny drive and a change) keeps both changes.
  DriveConfig c = parse_profile("base = \"plp-honest\"\n[capacity]\nop_pct = 20\n", "point.toml");
  EXPECT_FALSE(c.power.torn_reads_unc);
  EXPECT_EQ(c.nand.channels, load_profile("tiny-1gb").nand.channels);
  EXPECT_NEAR(c.over_provisioning(), 0.20, 0.0001);
  // A file base, relative to the profile naming it; one that names itself stops at the depth.
  auto dir = std::filesystem::temp_directory_path() / "fisrig-profile-bases";
  std::filesystem::create_directories(dir);
  std::ofstream((dir / "mine.toml").string()) << "base = \"tiny-1gb\"\n[cache]\nmib = 8\n";
  std::ofstream((dir / "loop.toml").string()) << "base = \"loop.toml\"\n";
  DriveConfig f = parse_profile("base = \"mine.toml\"\n", (dir / "point.toml").string());
  EXPECT_EQ(f.cache.bytes, uint64_t{8} << 20);
  EXPECT_EQ(f.user_sectors, load_profile("tiny-1gb").user_sectors);
  try {
    parse_profile("base = \"loop.toml\"\n", (dir / "point.toml").string());
    ADD_FAILURE() << "a base naming itself was accepted";
  } catch (const ProfileError& e) {
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.why(), "bases stack more than 4 deep");
  }
  std::filesystem::remove_all(dir);
}

TEST(Profiles, TheNvmeSectionIsReadAndChecked) {
  DriveConfig c = parse_profile(std::string(kGood) + "[nvme]\npcie_gen = 4\npcie_lanes = 2\nmdts = 6\n", "p.toml");
  EXPECT_EQ(c.nvme.pcie_gen, 4u);
  EXPECT_EQ(c.nvme.pcie_lanes, 2u);
  EXPECT_EQ(c.nvme.mdts, 6u);
  EXPECT_EQ(c.nvme.max_payload, 256u);  // the default where the profile says nothing
  EXPECT_EQ(refusal(std::string(kGood) + "[nvme]\npcie_gen = 6\n").key(), "nvme.pcie_gen");
  EXPECT_EQ(refusal(std::string(kGood) + "[nvme]\npcie_lanes = 3\n").key(), "nvme.pcie_lanes");
  EXPECT_EQ(refusal(std::string(kGood) + "[nvme]\nmax_payload = 300\n").key(), "nvme.max_payload");
  EXPECT_EQ(refusal(std::string(kGood) + "[nvme]\nmax_queue_entries = 1\n").key(), "nvme.max_queue_entries");
}
