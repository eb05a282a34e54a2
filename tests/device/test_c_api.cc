// The C API the litex_sim module uses, and the cost of an idle cycle.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "fisrig/device/device_c.h"
#include "host_link.h"
#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;

TEST(DeviceCApi, BuildsFromAProfileAndFaultsAndLinksUp) {
  char err[256] = "untouched";
  void* dev = fisrig_device_new("tiny-1gb", "r_err_rate=0.25,unc=1000+8,4096+1,busy_us=5,boot_us=1500", err, sizeof err);
  ASSERT_NE(dev, nullptr) << err;
  auto* sd = static_cast<device::SataDevice*>(dev);
  EXPECT_DOUBLE_EQ(sd->link_faults().r_err_rate, 0.25);
  EXPECT_DOUBLE_EQ(sd->drive().config().faults.r_err_rate, 0.0);  // applied on the wire only
  ASSERT_EQ(sd->drive().config().faults.unc.size(), 2u);
  EXPECT_EQ(sd->drive().config().faults.unc[1].first, 4096u);
  EXPECT_EQ(sd->drive().config().faults.busy_ns, 5000u);
  EXPECT_EQ(sd->drive().config().faults.boot_ns, 1'500'000u);  // instead of power.boot_ns

  // The host model on the C calls: OOB and link up.
  sd->link_faults().r_err_rate = 0;
  HostLink host;
  fisrig_pins_out out{};
  for (int i = 0; i < 200000 && !fisrig_device_link_up(dev); ++i) {
    fisrig_pins_in in{};
    host.clock(out, in);
    in.power = FISRIG_PINS_ON;
    fisrig_device_clock(dev, &in, &out);
  }
  EXPECT_EQ(fisrig_device_link_up(dev), 1);
  EXPECT_GT(fisrig_device_cycles(dev), 1000u);

  char buf[8192];
  size_t n = fisrig_device_stats_string(dev, buf, sizeof buf);
  std::string stats(buf);
  EXPECT_EQ(n, stats.size());
  EXPECT_NE(stats.find("cycles "), std::string::npos);
  EXPECT_NE(stats.find("link_ups 1\n"), std::string::npos);
  EXPECT_NE(stats.find("drive.commands 0\n"), std::string::npos);
  char tiny_buf[8];
  EXPECT_EQ(fisrig_device_stats_string(dev, tiny_buf, sizeof tiny_buf), n);
  EXPECT_EQ(std::string(tiny_buf).size(), 7u);
  FILE* f = tmpfile();
  ASSERT_NE(f, nullptr);
  fisrig_device_stats(dev, f);
  EXPECT_EQ(size_t(ftell(f)), n);
  fclose(f);
  fisrig_device_free(dev);
}

TEST(DeviceCApi, RefusesABadProfileOrKnobWithAMessage) {
  char err[256];
  EXPECT_EQ(fisrig_device_new("no-such-drive", nullptr, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("no-such-drive"), std::string::npos) << err;
  EXPECT_EQ(fisrig_device_new("tiny-1gb", "r_err_rate=2", err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("r_err_rate"), std::string::npos) << err;
  EXPECT_EQ(fisrig_device_new("tiny-1gb", "frobnicate=1", err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("frobnicate"), std::string::npos) << err;
  EXPECT_EQ(fisrig_device_new("tiny-1gb", "1000+8", err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("key=value"), std::string::npos) << err;
  char small[4];
  EXPECT_EQ(fisrig_device_new(nullptr, nullptr, small, sizeof small), nullptr);
  EXPECT_EQ(std::string(small).size(), 3u);
}

TEST(DeviceSpeed, AnIdleLinkedCycleCostsAFewNanoseconds) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  r.run(100);  // the signature's R_OK
  // The device alone, linked and idle, fed what an idle host sends (SYNC, ALIGN pairs).
  fisrig_pins_in in{};
  in.power = FISRIG_PINS_ON;
  in.tx_charisk = 1;
  fisrig_pins_out out{};
  constexpr uint64_t kCycles = 5'000'000;
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < kCycles; ++i) {
    in.tx_data = (i & 255) < 2 ? link::prim::kAlign : link::prim::kSync;
    r.dev.clock(in, out);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double ns = s * 1e9 / kCycles;
  std::printf("idle cycle: %.1f ns (%.1f M cycles/s)\n", ns, 1e-6 * kCycles / s);
  EXPECT_TRUE(r.dev.link_up());
  EXPECT_EQ(r.dev.link_state(), device::DeviceLink::State::kIdle);
  EXPECT_LT(ns, 100.0);  // the SoC simulation wants >= 1 M cycles/s in all; the device is a small part
}
