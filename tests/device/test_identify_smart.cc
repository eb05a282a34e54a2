// What IDENTIFY and SMART say over the pins: word 77 is the speed the link came up at (a
// Gen1 link says Gen1), word 76 no faster than the device negotiates; SMART READ DATA is
// PIO data-in, RETURN STATUS's answer is in the D2H's LBA.
#include <gtest/gtest.h>

#include "rig.h"

using namespace fisrig;
using namespace fisrig::test;
using device::DeviceOob;
namespace prim = link::prim;
namespace smart = drive::smart;

namespace {

// A host at `host_gen` on the device's pins: COMWAKE when asked, ALIGNs while the device
// sends its own, then SYNC, each on the host's dword cycles. True once the device's link
// is up.
bool link_up_at(device::SataDevice& dev, int host_gen, uint64_t max_cycles) {
  const uint64_t period = device::cycles_per_dword(host_gen);
  for (uint64_t cycle = 0; cycle < max_cycles && !dev.link_up(); ++cycle) {
    fisrig_pins_in in{};
    in.power = FISRIG_PINS_ON;
    in.dword_gap = cycle % period != 0;
    in.tx_comwake = dev.oob_state() == DeviceOob::State::kAwaitComwake;
    bool aligning = dev.oob_state() == DeviceOob::State::kSendAlign;
    bool linked = dev.oob_state() == DeviceOob::State::kLinked;
    in.tx_idle = !(aligning || linked);
    in.tx_charisk = 1;
    in.tx_data = linked ? prim::kSync : prim::kAlign;
    fisrig_pins_out out{};
    dev.clock(in, out);
  }
  return dev.link_up();
}

HostCommand smart_cmd(uint8_t sub) {
  HostCommand c;
  c.command = drive::ata::kSmart;
  c.features = sub;
  c.lba = uint64_t{smart::kKey} << 8;
  return c;
}

}  // namespace

TEST(DeviceIdentifySpeed, AGen1LinkReportsGen1InWord77) {
  device::SataDevice dev(tiny());
  EXPECT_EQ((dev.drive().identify_words()[77] >> 1) & 7, 3);  // not linked yet: its fastest
  ASSERT_TRUE(link_up_at(dev, 1, 200'000));
  EXPECT_EQ(dev.gen(), 1);
  EXPECT_EQ(dev.counters().link_gen, 1u);
  auto w = dev.drive().identify_words();
  EXPECT_EQ((w[77] >> 1) & 7, 1);   // negotiated: Gen1
  EXPECT_EQ(w[76] & 0x000E, 0x0E);  // supported: Gen1, Gen2, Gen3
}

TEST(DeviceIdentifySpeed, AGen2DeviceAdvertisesNoGen3) {
  device::SataDevice dev(tiny(), 2);  // the max_gen knob
  EXPECT_EQ(dev.drive().identify_words()[76] & 0x000E, 0x06);
  ASSERT_TRUE(link_up_at(dev, 2, 200'000));
  EXPECT_EQ((dev.drive().identify_words()[77] >> 1) & 7, 2);
}

TEST(DeviceSmart, ReadDataIsPioInAndReturnStatusAnswersInTheLba) {
  Rig r;
  ASSERT_TRUE(r.bring_up());
  HostCommand w = write_dma(100, 8, std::vector<uint8_t>(8 * 512, 0x5A));
  ASSERT_TRUE(r.exec(w));
  ASSERT_EQ(w.status, 0x40);

  HostCommand data = smart_cmd(smart::kReadData);
  ASSERT_TRUE(r.exec(data));
  EXPECT_EQ(data.status, 0x40);  // the PIO Setup's E_Status ended it
  EXPECT_EQ(data.pio_setups, 1u);
  EXPECT_EQ(data.data_fises_in, 1u);
  ASSERT_EQ(data.in.size(), 512u);
  uint8_t sum = 0;
  for (uint8_t b : data.in) sum = uint8_t(sum + b);
  EXPECT_EQ(sum, 0);
  // Attribute 241 (host LBAs written) somewhere in the table: the 8 sectors above.
  bool found = false;
  for (size_t i = 0; i < 30; ++i) {
    const uint8_t* e = &data.in[2 + 12 * i];
    if (e[0] != smart::kHostSectorsWritten) continue;
    found = true;
    EXPECT_EQ(e[5] | e[6] << 8, 8);
  }
  EXPECT_TRUE(found);

  HostCommand status = smart_cmd(smart::kReturnStatus);
  ASSERT_TRUE(r.exec(status));
  EXPECT_EQ(status.status, 0x40);
  EXPECT_EQ(status.lba_out, 0xC24F00u);

  // Disabled, READ DATA fails with a D2H and no data.
  HostCommand off = smart_cmd(smart::kDisableOperations);
  ASSERT_TRUE(r.exec(off));
  EXPECT_EQ(off.status, 0x40);
  HostCommand refused = smart_cmd(smart::kReadData);
  ASSERT_TRUE(r.exec(refused));
  EXPECT_EQ(refused.status, 0x41);
  EXPECT_EQ(refused.error, drive::ata::kErrorAbrt);
  EXPECT_EQ(refused.data_fises_in, 0u);
}
