// The device's link layer: collisions, HOLD/HOLDA both ways, CONT both ways, aborts.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "fisrig/device/link_layer.h"
#include "fisrig/link/crc.h"
#include "fisrig/link/framing.h"
#include "rig.h"
#include "wire_groups.h"

using namespace fisrig;
using namespace fisrig::test;
using device::DeviceLink;
using link::LinkWord;
using link::primitive;
namespace prim = link::prim;

namespace {
// The device's link layer alone, driven dword by dword.
struct LinkBench {
  device::DeviceCounters counters;
  device::LinkFaults faults;
  DeviceLink link{counters, faults};
  std::vector<LinkWord> out;
  DeviceLink::Events last;
  std::vector<std::vector<uint32_t>> received;
  int sent = 0, sent_ok = 0;
  LinkBench() { link.enable(true); }
  LinkWord step(const LinkWord& in) {
    last = {};
    LinkWord o = link.clock(true, in, last);
    if (last.received && last.rx_ok) received.emplace_back(link.rx_fis(), link.rx_fis() + link.rx_len());
    if (last.sent) ++sent, sent_ok += last.sent_ok;
    out.push_back(o);
    return o;
  }
  // The last dword that is not an ALIGN.
  LinkWord last_non_align() const {
    for (auto it = out.rbegin(); it != out.rend(); ++it)
      if (!(it->k && it->data == prim::kAlign)) return *it;
    return {};
  }
};
}  // namespace

TEST(DeviceLink, TheDeviceWinsAnXRdyCollision) {
  LinkBench b;
  for (int i = 0; i < 4; ++i) b.step(primitive(prim::kSync));
  b.link.frame().dw[0] = 0x1234A134;
  b.link.frame().n = 1;
  b.link.load();
  for (int i = 0; i < 300; ++i) {
    b.step(primitive(prim::kXRdy));  // the host wants to send too
    ASSERT_NE(b.out.back(), primitive(prim::kRRdy)) << i;
  }
  EXPECT_EQ(b.link.state(), DeviceLink::State::kSendXrdy);
  // The host backs off and answers R_RDY: SOF, the FIS, its CRC, EOF, WTRM.
  while (b.link.state() != DeviceLink::State::kWaitResult) b.step(primitive(prim::kRRdy));
  link::FrameReceiver rx;
  bool ended = false;
  for (auto& w : b.out) ended |= rx.push(w);
  ASSERT_TRUE(ended);
  EXPECT_TRUE(rx.frame().crc_ok);
  EXPECT_EQ(rx.frame().fis, std::vector<uint32_t>{0x1234A134});
  for (int i = 0; i < 4; ++i) b.step(primitive(prim::kRIp));
  EXPECT_EQ(wire_groups(b.out).back(), "WTRM*");
  EXPECT_EQ(b.sent, 0);
  b.step(primitive(prim::kROk));
  EXPECT_EQ(b.sent_ok, 1);
  EXPECT_EQ(b.counters.fis_sent[0x34], 1u);
}

TEST(DeviceLink, TwoSyncsGoBetweenOneFrameAndTheNext) {
  // The receiver leaves R_OK only on SYNC: whatever the ALIGN phase, back-to-back FISes
  // are separated by at least two SYNCs.
  for (int pre = 0; pre < 260; ++pre) {
    LinkBench b;
    for (int i = 0; i < pre; ++i) b.step(primitive(prim::kSync));
    b.link.frame().dw[0] = 0x39;
    b.link.frame().n = 1;
    b.link.load();
    while (b.link.state() != DeviceLink::State::kWaitResult) b.step(primitive(prim::kRRdy));
    while (!b.sent) b.step(primitive(prim::kROk));
    b.link.load();  // the next FIS at once
    size_t from = b.out.size() - 1;  // the cycle R_OK arrived: the device went idle
    for (int i = 0; i < 10 && b.link.state() != DeviceLink::State::kSendXrdy; ++i) b.step(primitive(prim::kROk));
    ASSERT_EQ(b.link.state(), DeviceLink::State::kSendXrdy) << pre;
    size_t syncs = std::count(b.out.begin() + long(from), b.out.end(), primitive(prim::kSync));
    EXPECT_EQ(syncs, 2u) << pre;
  }
}

TEST(DeviceLink, ReceivesThroughContJunkAndHoldAndAnswersHolda) {
  LinkBench b;
  std::vector<uint32_t> fis(300);
  std::mt19937 rng(5);
  for (auto& d : fis) d = rng();
  fis[0] = 0x46;
  // The host: X_RDY with CONT, SOF, data, a HOLD run with CONT and junk, data, EOF, WTRM.
  link::ContEncoder tx;
  std::vector<LinkWord> wire;
  for (int i = 0; i < 8; ++i) tx.push(prim::kXRdy, wire);
  for (auto& w : wire) b.step(w);
  EXPECT_EQ(wire_groups(b.out).back(), "R_RDY*");
  std::vector<LinkWord> frame = link::frame(fis);
  wire.clear();
  tx.push(prim::kSof, wire);
  for (size_t i = 1; i + 1 < frame.size(); ++i) {
    if (i == 100)
      for (int h = 0; h < 40; ++h) tx.push(prim::kHold, wire);
    tx.data(frame[i], wire);
  }
  tx.push(prim::kEof, wire);
  for (auto& w : wire) b.step(w);
  for (int i = 0; i < 4; ++i) b.step(primitive(prim::kWtrm));
  // R_RDY, R_IP, HOLDA (with CONT) while the host held, R_IP again, then R_OK.
  std::vector<std::string> groups = wire_groups(b.out);
  std::vector<std::string> tail(groups.end() - 4, groups.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"R_IP*", "HOLDA*", "R_IP*", "R_OK*"}));
  EXPECT_EQ(b.counters.r_ok_sent, 1u);
  ASSERT_EQ(b.received.size(), 1u);
  EXPECT_EQ(b.received[0], fis);
  for (int i = 0; i < 3; ++i) b.step(primitive(prim::kSync));
  EXPECT_EQ(b.link.state(), DeviceLink::State::kIdle);
}

TEST(DeviceLink, SyncAbortsAFrameAndOversizeFramesGetRErr) {
  LinkBench b;
  b.step(primitive(prim::kXRdy));
  b.step(primitive(prim::kSof));
  for (int i = 0; i < 10; ++i) b.step(LinkWord{uint32_t(i), false});
  b.step(primitive(prim::kSync));
  EXPECT_EQ(b.counters.frames_aborted, 1u);
  EXPECT_EQ(b.link.state(), DeviceLink::State::kIdle);

  std::vector<uint32_t> huge(device::fis::kMaxFisDwords + 5, 0x46);
  std::vector<LinkWord> f = link::frame(huge);
  b.step(primitive(prim::kXRdy));
  for (auto& w : f) b.step(w);
  b.step(primitive(prim::kWtrm));
  EXPECT_EQ(b.last_non_align(), primitive(prim::kRErr));
  EXPECT_EQ(b.counters.r_err_sent, 1u);
  EXPECT_TRUE(b.received.empty());
}

TEST(DeviceLink, HostHoldMidDataFisGetsHoldaAndTheFisResumes) {
  HostLinkOptions o;
  o.rx_hold_after = 300;
  o.rx_hold_cycles = 500;
  Rig r(tiny(), o);
  ASSERT_TRUE(r.bring_up());
  auto data = pattern(FISRIG_PATTERN_STAMP, 50, 16, 2);
  HostCommand w = write_dma(50, 16, data);
  ASSERT_TRUE(r.exec(w));
  HostCommand rd = read_dma(50, 16);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.in, data);
  EXPECT_EQ(rd.data_fises_in, 1u);
  EXPECT_EQ(rd.bad_crc_fises_in, 0u);
  EXPECT_EQ(r.dev.counters().holds_received, 1u);  // one HOLD run, in the read's Data FIS
  EXPECT_GE(r.dev.counters().holda_cycles_sent, 450u);
  EXPECT_GE(r.host.counters.holda_from_device, 450u);
}

TEST(DeviceLink, ContBothWaysAndAPausingHost) {
  // A host that sends repeated primitives as CONT and junk, and pauses its Data FISes
  // with HOLD: the device answers HOLDA and takes the rest.
  HostLinkOptions o;
  o.cont = true;
  o.tx_pause_after = 200;
  o.tx_pause_cycles = 400;
  Rig r(tiny(), o);
  r.host.capture = true;
  ASSERT_TRUE(r.bring_up());
  auto data = pattern(FISRIG_PATTERN_LFSR, 7000, 48, 9);
  HostCommand w = write_dma(7000, 48, data);
  ASSERT_TRUE(r.exec(w));
  EXPECT_EQ(w.status, 0x40);
  EXPECT_GT(r.host.counters.holda_from_device, 3 * 350u);  // three Data FISes, each paused
  HostCommand rd = read_dma(7000, 48);
  ASSERT_TRUE(r.exec(rd));
  EXPECT_EQ(rd.in, data);
  EXPECT_GT(r.host.counters.conts_received, 10u);  // the device's CONTs
  EXPECT_GT(r.dev.counters().conts_received, 10u);  // the host's
  EXPECT_EQ(r.dev.counters().rx_crc_errors, 0u);
  EXPECT_EQ(r.dev.counters().protocol_errors, 0u);
  // Everything the device sent reads as whole primitive runs and frames.
  for (const std::string& g : wire_groups(r.host.captured)) EXPECT_NE(g, "?");
}
