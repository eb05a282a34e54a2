// The TLP device on the PHY stream's beats through its C API (fisrig/nvme/device_c.h), as the
// Verilator runner will clock it: bad arguments refused with a message, a configuration read
// sent as beats and its completion's beats back at their time, a beat held while the rig is
// not ready, and beats that are not whole dwords counted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fisrig/nvme/device_c.h"
#include "config_tlp.h"
#include "fisrig/nvme/tlp.h"

extern "C" {
#include "fisrig/nvme.h"
}

namespace {

using fisrig::nvme::Tlp;

std::string refusal(const char* profile, const char* faults, unsigned gen, unsigned lanes) {
  char err[256] = "";
  void* d = fisrig_nvme_device_new(profile, faults, gen, lanes, err, sizeof err);
  if (d) fisrig_nvme_device_free(d);
  return d ? "" : err;
}

TEST(NvmeDeviceC, RefusesWhatItCannotBeWithAMessage) {
  EXPECT_EQ(refusal("", nullptr, 2, 4), "no profile given");
  EXPECT_NE(refusal("no-such-profile", nullptr, 2, 4), "");
  EXPECT_NE(refusal("tiny-1gb", "no_such_knob=1", 2, 4).find("no_such_knob"), std::string::npos);
  EXPECT_NE(refusal("tiny-1gb", "busy_rate", 2, 4).find("is not key=value"), std::string::npos);
  EXPECT_NE(refusal("tiny-1gb", nullptr, 3, 4).find("Gen3 x4"), std::string::npos);
  EXPECT_NE(refusal("tiny-1gb", "enable_us=soon", 2, 4).find("enable_us: 'soon'"), std::string::npos);
  EXPECT_EQ(refusal("tiny-1gb", "busy_rate=0.5,busy_us=10,enable_us=5", 2, 8), "");
}

struct Beats {
  void* dev;
  explicit Beats(const char* faults = nullptr) {
    char err[256];
    dev = fisrig_nvme_device_new("tiny-1gb", faults, 2, 4, err, sizeof err);
  }
  ~Beats() { fisrig_nvme_device_free(dev); }
  // Clocks the TLP's beats in, one a beat time, then idles until the device's TLP is out
  // (rig ready whenever `ready(cycle)` says): its bytes, and the cycle of its first beat.
  std::vector<uint8_t> exchange(const std::vector<uint8_t>& tlp, uint64_t& first_cycle,
                                bool (*ready)(uint64_t) = [](uint64_t) { return true; }) {
    auto beats = fisrig::nvme::to_beats(tlp);
    std::vector<std::pair<uint64_t, uint8_t>> got;
    first_cycle = 0;
    fisrig_pcie_beat out{};
    bool took = false;
    for (size_t k = 0; k < beats.size() + 2000; ++k) {
      fisrig_pcie_beat in{};
      if (k < beats.size())
        in = {1, uint8_t(k == 0), uint8_t(k + 1 == beats.size()), beats[k].second, beats[k].first};
      const uint64_t cycle = fisrig_nvme_device_cycles(dev);
      fisrig_nvme_device_clock(dev, &in, took, &out);
      took = out.valid && ready(cycle);  // taken at the next edge
      if (took) {
        if (out.first) first_cycle = cycle;
        got.emplace_back(out.dat, out.be);
        if (out.last) break;
      }
    }
    std::vector<uint8_t> bytes;
    EXPECT_TRUE(fisrig::nvme::from_beats(got, bytes));
    return bytes;
  }
};

std::vector<uint8_t> cfg_read(uint16_t offset) {
  return fisrig::nvme::encode(fisrig::test::config_request(false, 0x0100, offset, 9));
}

TEST(NvmeDeviceC, AConfigReadsCompletionComesBackAsBeatsAtItsTime) {
  Beats b;
  uint64_t first = 0;
  std::vector<uint8_t> bytes = b.exchange(cfg_read(0), first);
  Tlp c;
  ASSERT_TRUE(fisrig::nvme::decode(bytes.data(), bytes.size(), c));
  EXPECT_EQ(c.fmt_type, FISRIG_PCIE_TLP_CPLD);
  EXPECT_EQ(c.tag, 9);
  EXPECT_EQ(c.dword(0), FISRIG_NVME_SIM_VENDOR_ID | FISRIG_NVME_SIM_DEVICE_ID << 16);
  // Its two beats in at the edge of cycle 1 (4 ns), due 250 ns after (254 ns): presented
  // from the first edge at or after that, cycle 64 (256 ns).
  EXPECT_EQ(first, 64u);
  EXPECT_EQ(fisrig_nvme_device_now_ns(b.dev), 4 * fisrig_nvme_device_cycles(b.dev));
}

TEST(NvmeDeviceC, ABeatWaitsForTheRigAndBrokenBeatsAreCounted) {
  Beats b;
  uint64_t first = 0;
  // The rig not ready until cycle 100: the completion's first beat goes then, whole.
  std::vector<uint8_t> bytes = b.exchange(cfg_read(8), first, [](uint64_t c) { return c >= 100; });
  Tlp c;
  ASSERT_TRUE(fisrig::nvme::decode(bytes.data(), bytes.size(), c));
  EXPECT_EQ(c.dword(0) >> 8, FISRIG_PCI_CLASS_NVME);
  EXPECT_EQ(first, 100u);
  fisrig_pcie_beat in{1, 1, 1, 0x03, 0x1234}, out{};
  fisrig_nvme_device_clock(b.dev, &in, 1, &out);
  char stats[512];
  fisrig_nvme_device_stats_string(b.dev, stats, sizeof stats);
  EXPECT_NE(std::string(stats).find("beats_not_whole_dwords 1\n"), std::string::npos) << stats;
  EXPECT_NE(std::string(stats).find("tlps_in 1\n"), std::string::npos) << stats;  // the broken one is no TLP
}

TEST(NvmeDeviceC, WithTheRailsOffNothingIsAnsweredAndOnAgainItSaysNotReady) {
  Beats b;
  fisrig_nvme_device_power(b.dev, 0);
  uint64_t first = 0;
  EXPECT_TRUE(b.exchange(cfg_read(0), first).empty());  // 2,000 beat times and no answer
  fisrig_nvme_device_power(b.dev, 1);
  std::vector<uint8_t> bytes = b.exchange(cfg_read(0), first);
  Tlp c;
  ASSERT_TRUE(fisrig::nvme::decode(bytes.data(), bytes.size(), c));
  EXPECT_EQ(c.status, FISRIG_PCIE_CPL_CRS);  // tiny-1gb's SSD takes its boot to be up
  char stats[512];
  fisrig_nvme_device_stats_string(b.dev, stats, sizeof stats);
  EXPECT_NE(std::string(stats).find("while_off 1\n"), std::string::npos) << stats;
}

}  // namespace
