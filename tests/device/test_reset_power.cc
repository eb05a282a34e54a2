// COMRESET in the middle of a command, and power cuts in the middle of NCQ writes.
#include <gtest/gtest.h>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

TEST(DeviceReset, ComresetMidWriteDropsItAndTheLinkComesBack) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  HostCommand w = write_dma(20000, 256, pattern(FISRIG_PATTERN_STAMP, 20000, 256, 5));
  r.engine.issue(&w);
  ASSERT_TRUE(r.run_until([&] { return w.dma_activates == 3; }, 500000));
  r.host.comreset();
  ASSERT_TRUE(r.bring_up());
  EXPECT_TRUE(w.lost);
  EXPECT_EQ(r.dev.counters().comresets, 2u);  // the host's first, at start, and this one
  EXPECT_EQ(r.dev.drive().stats().comresets, 2u);
  EXPECT_EQ(r.dev.counters().link_ups, 2u);
  EXPECT_EQ(r.engine.signatures.size(), 2u);
  EXPECT_TRUE(r.dev.commands().idle());
  // The write never reached the Drive; the drive answers normally.
  EXPECT_EQ(r.dev.drive().ssd().stats().sectors_written, 0u);
  HostCommand rd = read_dma(20000, 256);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.status, 0x40);
  EXPECT_EQ(rd.in, std::vector<uint8_t>(256 * 512, 0));
}

TEST(DeviceReset, ComresetMidNcqReadsAbortsThemAll) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  std::vector<HostCommand> reads;
  for (uint8_t t = 0; t < 8; ++t) reads.push_back(read_fpdma(t, 100000 + t * 256ull, 128));
  for (auto& c : reads) r.engine.issue(&c);
  ASSERT_TRUE(r.run_until([&] { return reads[0].data_fises_in + reads[1].data_fises_in > 0; }, 500000));
  r.host.comreset();
  ASSERT_TRUE(r.bring_up());
  size_t lost = 0;
  for (auto& c : reads) lost += c.lost;
  EXPECT_GT(lost, 0u);
  EXPECT_EQ(r.dev.drive().pending(), 0u);
  HostCommand id = identify();
  ASSERT_TRUE(r.exec(id));
  EXPECT_EQ(id.status, 0x40);
}

TEST(DevicePower, PowerCutMidNcqWritesThenPowerOnAndLinkUpAgain) {
  drive::DriveConfig cfg = tiny();
  cfg.power.boot_ns = 2 * drive::kNsPerMs;
  Rig r(cfg);
  ASSERT_TRUE(r.bring_up());
  // FUA writes: a completed one is on NAND, so it must survive the cut.
  std::vector<HostCommand> writes;
  for (uint8_t t = 0; t < 16; ++t) {
    uint64_t lba = 50000 + t * 64ull;
    HostCommand c = write_fpdma(t, lba, 16, pattern(FISRIG_PATTERN_STAMP, lba, 16, 1000 + t));
    c.device = 0xC0;  // FUA
    writes.push_back(std::move(c));
  }
  for (auto& c : writes) r.engine.issue(&c);
  ASSERT_TRUE(r.run_until([&] { return writes[3].done; }, 3'000'000));
  r.pins = 0;
  r.run(20000);
  EXPECT_FALSE(r.dev.drive().powered());
  EXPECT_EQ(r.dev.counters().power_offs, 1u);
  EXPECT_GE(r.host.counters.rx_idle_resets, 1u);  // the host saw the device go quiet
  uint64_t resets = r.host.counters.comresets;
  r.run(200000);
  EXPECT_FALSE(r.host.connected());
  EXPECT_EQ(r.host.counters.comresets, resets);  // waiting for a COMINIT that does not come
  r.pins = FISRIG_PINS_ON;
  ASSERT_TRUE(r.bring_up(3'000'000));
  EXPECT_EQ(r.dev.counters().power_ons, 1u);
  EXPECT_EQ(r.dev.counters().link_ups, 2u);
  EXPECT_EQ(r.dev.drive().ssd().stats().power_cycles, 1u);
  // The unsolicited COMINIT came once the drive had booted.
  EXPECT_GE(device::cycle_ns(r.cycles), r.dev.drive().ready_at());

  size_t completed = 0;
  for (auto& c : writes) {
    HostCommand rd = read_dma(c.lba, 16);
    ASSERT_TRUE(r.exec(rd));
    auto want = pattern(FISRIG_PATTERN_STAMP, c.lba, 16, 1000 + c.tag);
    if (c.done && !c.lost) {
      ++completed;
      EXPECT_EQ(c.status, 0x40);
      EXPECT_EQ(rd.status, 0x40) << int(c.tag);
      EXPECT_EQ(rd.in, want) << int(c.tag);  // acknowledged FUA data survives
    } else if (rd.status == 0x40) {
      // Cut short: each sector is the old (zeros) or the new data, nothing else.
      for (uint32_t s = 0; s < 16; ++s) {
        std::vector<uint8_t> got(rd.in.begin() + s * 512, rd.in.begin() + (s + 1) * 512);
        std::vector<uint8_t> neu(want.begin() + s * 512, want.begin() + (s + 1) * 512);
        EXPECT_TRUE(got == neu || got == std::vector<uint8_t>(512, 0)) << int(c.tag) << " " << s;
      }
    } else {
      EXPECT_EQ(rd.error, 0x40) << int(c.tag);  // a program torn by the cut reads UNC
    }
  }
  EXPECT_GE(completed, 4u);
  EXPECT_LT(completed, 16u);
}

// The drive's power follows the rails it runs on (its profile's power.rails) and P3: a
// 2.5-inch drive (5 V) keeps running when 12 V and 3.3 V fall, loses power when 5 V falls
// or P3 is asserted, and has it back only once 5 V is on and P3 released.
TEST(DevicePower, TheDriveRunsOnItsRailsAndP3DisablesIt) {
  drive::DriveConfig cfg = tiny();
  cfg.power.boot_ns = 2 * drive::kNsPerMs;
  Rig r(cfg);
  ASSERT_TRUE(r.bring_up());
  r.pins = FISRIG_PINS_5V;  // 12 V and 3.3 V off
  r.run(20000);
  EXPECT_TRUE(r.dev.drive().powered());
  EXPECT_EQ(r.dev.counters().power_offs, 0u);
  r.pins = FISRIG_PINS_ON | FISRIG_PINS_P3;  // Power Disable
  r.run(20000);
  EXPECT_FALSE(r.dev.drive().powered());
  r.pins = FISRIG_PINS_3V3 | FISRIG_PINS_12V;  // P3 released, but 5 V is down
  r.run(20000);
  EXPECT_FALSE(r.dev.drive().powered());
  EXPECT_EQ(r.dev.counters().power_offs, 1u);
  r.pins = FISRIG_PINS_5V;
  ASSERT_TRUE(r.bring_up(3'000'000));
  EXPECT_EQ(r.dev.counters().power_ons, 1u);
  HostCommand rd = read_dma(0, 8);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.status, 0x40);
}

// A 3.5-inch drive's profile says it runs on 5 V and 12 V: 12 V falling cuts it.
TEST(DevicePower, ADriveOnTwelveVoltsLosesPowerWhenTwelveVoltsFalls) {
  drive::DriveConfig cfg = tiny();
  cfg.power.rails = FISRIG_PINS_5V | FISRIG_PINS_12V;
  Rig r(cfg);
  ASSERT_TRUE(r.bring_up());
  r.pins = FISRIG_PINS_5V | FISRIG_PINS_3V3;
  r.run(20000);
  EXPECT_FALSE(r.dev.drive().powered());
  EXPECT_EQ(r.dev.counters().power_offs, 1u);
}
