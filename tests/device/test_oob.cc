// Out-of-band signalling to link up, and the signature FIS, against the LiteSATA-like host.
#include <gtest/gtest.h>

#include "rig.h"
#include "wire_groups.h"

using namespace fisrig;
using namespace fisrig::test;
using device::DeviceOob;
namespace prim = link::prim;

namespace {
// First device cycle at or after `from` where pred holds; trace.size() if none.
template <class P>
size_t find_cycle(const std::vector<P>& trace, size_t from, bool (*pred)(const P&)) {
  for (size_t i = from; i < trace.size(); ++i)
    if (pred(trace[i])) return i;
  return trace.size();
}
}  // namespace

TEST(DeviceOob, ComresetComwakeAlignThenSignatureWithTheExactSequence) {
  Rig r;
  r.trace = true;
  r.host.capture = true;
  ASSERT_TRUE(r.bring_up());
  r.run(200);

  // The host's COMRESET: the device answers COMINIT 150 cycles after the bursts end, 384 long.
  size_t reset = 0;
  for (size_t i = 0; i < r.trace_in.size(); ++i)
    if (r.trace_in[i].tx_cominit) reset = i;
  size_t cominit = find_cycle<fisrig_pins_out>(r.trace_out, reset, [](const fisrig_pins_out& o) { return o.rx_cominit != 0; });
  EXPECT_EQ(cominit, reset + FISRIG_COMRESET_CYCLES + DeviceOob::kCominitDelay);
  size_t cominit_end = find_cycle<fisrig_pins_out>(r.trace_out, cominit, [](const fisrig_pins_out& o) { return !o.rx_cominit; });
  EXPECT_EQ(cominit_end - cominit, FISRIG_COMRESET_CYCLES);

  // COMWAKE for COMWAKE, then ALIGNs with the transmitter out of idle.
  size_t wake = find_cycle<fisrig_pins_in>(r.trace_in, cominit_end, [](const fisrig_pins_in& i) { return i.tx_comwake != 0; });
  ASSERT_LT(wake, r.trace_in.size());
  size_t comwake = find_cycle<fisrig_pins_out>(r.trace_out, wake, [](const fisrig_pins_out& o) { return o.rx_comwake != 0; });
  EXPECT_EQ(comwake, wake + FISRIG_COMWAKE_CYCLES + DeviceOob::kComwakeDelay);
  size_t align = find_cycle<fisrig_pins_out>(r.trace_out, comwake, [](const fisrig_pins_out& o) { return !o.rx_idle; });
  EXPECT_EQ(align - comwake, FISRIG_COMWAKE_CYCLES);
  for (size_t i = comwake; i < align; ++i) ASSERT_TRUE(r.trace_out[i].rx_comwake && r.trace_out[i].rx_idle) << i;

  // ALIGN only, until the host's first ALIGN reaches the device; from then on SYNC.
  size_t host_align = find_cycle<fisrig_pins_in>(
      r.trace_in, align, [](const fisrig_pins_in& i) { return !i.tx_idle && i.tx_charisk == 1 && i.tx_data == prim::kAlign; });
  ASSERT_LT(host_align, r.trace_in.size());
  for (size_t i = align; i < host_align; ++i) {
    ASSERT_EQ(r.trace_out[i].rx_data, prim::kAlign) << i;
    ASSERT_EQ(r.trace_out[i].rx_charisk, 1) << i;
  }
  size_t first_sync = find_cycle<fisrig_pins_out>(r.trace_out, host_align, [](const fisrig_pins_out& o) { return o.rx_data != prim::kAlign; });
  EXPECT_EQ(r.trace_out[first_sync].rx_data, prim::kSync);
  EXPECT_LE(first_sync - host_align, 2u);  // after at most the ALIGN pair that opens the link's stream

  // The link: SYNC until the host is READY, X_RDY until its link layer answers R_RDY,
  // the signature (5 dwords and the CRC), WTRM until R_OK, SYNC.
  std::vector<std::string> want = {"SYNC*", "X_RDY*", "SOF", "D", "D", "D", "D", "D", "D", "EOF", "WTRM*", "SYNC*"};
  EXPECT_EQ(wire_groups(r.host.captured), want);

  ASSERT_EQ(r.engine.signatures.size(), 1u);
  // Register D2H, status 50h, error 01h, LBA 1, count 1, device 0: an ATA device.
  std::vector<uint32_t> sig = {0x01500034u, 1, 0, 1, 0};
  EXPECT_EQ(r.engine.signatures[0], sig);
  EXPECT_EQ(r.dev.counters().link_ups, 1u);
  EXPECT_EQ(r.dev.counters().fis_sent[0x34], 1u);
  EXPECT_EQ(r.host.counters.rx_idle_resets, 0u);
  EXPECT_EQ(r.host.counters.retries, 0u);
  EXPECT_LE(r.host.counters.max_gap_between_aligns, 258u);  // two ALIGNs every 256 dwords
}

TEST(DeviceOob, LiteSataFiveMillisecondStabilityThenTheSignature) {
  // LiteSATA's PHY control waits 5 ms of stability before it connects its link layer; the
  // device's X_RDY went to CONT and junk long before, and must be seen again.
  HostLinkOptions o;
  o.stability_cycles = 750'000;
  Rig r(tiny(), o);
  ASSERT_TRUE(r.bring_up(1'500'000));
  EXPECT_EQ(r.engine.signatures.size(), 1u);
  EXPECT_GE(r.host.cycle(), 750'000u);
  EXPECT_EQ(r.host.counters.rx_idle_resets, 0u);
  EXPECT_EQ(r.host.counters.connects, 1u);
  EXPECT_GT(r.host.counters.conts_received, 0u);
  EXPECT_LE(r.host.counters.max_gap_between_aligns, 258u);
}

TEST(DeviceOob, TheSignatureWaitsForTheDriveAfterComreset) {
  // COMRESET makes the Drive busy for a millisecond: OOB answers at once, the signature
  // comes when the Drive is ready.
  Rig r;
  ASSERT_TRUE(r.bring_up());
  // The host's own start was a COMRESET too (LiteSATA always begins with one).
  EXPECT_EQ(r.dev.counters().comresets, 1u);
  uint64_t before = r.cycles;
  r.host.comreset();
  ASSERT_TRUE(r.bring_up());
  EXPECT_EQ(r.dev.counters().comresets, 2u);
  EXPECT_EQ(r.dev.drive().stats().comresets, 2u);
  EXPECT_EQ(r.dev.counters().link_ups, 2u);
  EXPECT_GE(device::cycle_ns(r.cycles), r.dev.drive().ready_at());
  EXPECT_GE(r.cycles - before, device::us_cycles(1000));
}

namespace {
// DeviceOob alone against a host at `host_gen` that sends COMWAKE when asked and ALIGNs on
// its dword cycles; returns the cycle the device linked at (0: not within max_cycles) and
// every cycle on which the device's pins carried an ALIGN before that.
struct Negotiation {
  uint64_t linked_at = 0;
  uint64_t align_start = 0;  // the device's first cycle in kSendAlign
  std::vector<uint64_t> aligns_out;
  int gen = 0;
};
Negotiation negotiate(int device_max_gen, int host_gen, uint64_t max_cycles) {
  DeviceOob oob(device_max_gen);
  Negotiation n;
  const uint64_t period = device::cycles_per_dword(host_gen);
  for (uint64_t cycle = 0; cycle < max_cycles; ++cycle) {
    fisrig_pins_in in{};
    in.power = FISRIG_PINS_ON;
    in.dword_gap = cycle % period != 0;
    in.tx_comwake = oob.state() == DeviceOob::State::kAwaitComwake;
    bool aligning = oob.state() == DeviceOob::State::kSendAlign;
    in.tx_idle = !aligning;
    in.tx_charisk = 1;
    in.tx_data = prim::kAlign;
    oob.clock(in, cycle, 0);
    if (oob.linked()) {
      n.linked_at = cycle;
      break;
    }
    if (oob.state() == DeviceOob::State::kSendAlign) {
      if (!n.align_start) n.align_start = cycle;
      fisrig_pins_out out{};
      oob.drive_pins(out);
      if (out.rx_charisk == 1 && out.rx_data == prim::kAlign) n.aligns_out.push_back(cycle);
    }
  }
  n.gen = oob.gen();
  return n;
}
}  // namespace

TEST(DeviceOob, SpeedNegotiationStepsDownEvery54usUntilTheHostsSpeed) {
  // A Gen3 device and a Gen1 host: 54.6 us of Gen3 ALIGNs and 54.6 us of Gen2 ALIGNs the host
  // cannot decode, then Gen1 ALIGNs, which the host answers.
  Negotiation n = negotiate(3, 1, 100'000);
  ASSERT_NE(n.linked_at, 0u);
  EXPECT_EQ(n.gen, 1);
  ASSERT_FALSE(n.aligns_out.empty());
  EXPECT_EQ(n.aligns_out.front() - n.align_start, 2 * FISRIG_ALIGN_TIMEOUT_CYCLES);
  EXPECT_LE(n.linked_at - n.aligns_out.front(), 4u);  // the host's next dword

  Negotiation gen2 = negotiate(3, 2, 100'000);
  EXPECT_EQ(gen2.gen, 2);
  EXPECT_EQ(gen2.aligns_out.front() - gen2.align_start, FISRIG_ALIGN_TIMEOUT_CYCLES);

  Negotiation same = negotiate(2, 2, 100'000);
  EXPECT_EQ(same.gen, 2);
  EXPECT_EQ(same.aligns_out.front(), same.align_start);
}

TEST(DeviceOob, ADeviceSlowerThanAFixedSpeedHostNeverSendsItAnAlign) {
  // LiteSATA's host does not step down: a Gen2 device never links with a Gen3 host.
  Negotiation n = negotiate(2, 3, 100'000);
  EXPECT_EQ(n.linked_at, 0u);
  EXPECT_TRUE(n.aligns_out.empty());
  EXPECT_EQ(n.gen, 1);  // it tried its speeds down to Gen1
}
