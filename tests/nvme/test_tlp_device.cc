// The simulated controller at its link's TLP interface (sim/nvme's tlp_device.h), driven
// with TLPs alone as the rig's root port drives it: the firmware's enumeration
// (fisrig/pcie_enum.h) over configuration requests and completions, the controller brought
// up through BAR0's registers (CC.EN written, CSTS read until RDY), the MSI-X table written
// through BAR0, every answer's fields and its time on the link; and what a function must
// refuse (another function, memory space off, outside BAR0, a malformed TLP, a register
// access of three dwords) answered UR or counted, with the device going on after.
#include <gtest/gtest.h>

#include "fisrig/nvme/tlp_device.h"
#include "config_tlp.h"
#include "rig_plan.h"

extern "C" {
#include "fisrig/nvme.h"
#include "fisrig/pcie_enum.h"
}

namespace {

using fisrig::nvme::PciFunction;
using fisrig::nvme::Tlp;
using fisrig::nvme::TlpDevice;
using fisrig::nvme::SimTime;

constexpr uint16_t kRig = 0x0000, kDev = 0x0100;

// The rig's side: sends a TLP at `now` (its bytes' time on the link counted by the caller's
// clock only through the device's answers), takes every answer the device has sent by then.
struct Rig {
  TlpDevice dev{fisrig::drive::load_profile("tiny-1gb")};
  SimTime now = 1000;
  uint8_t tag = 0;
  std::vector<std::pair<SimTime, Tlp>> answers;  // each answer's first byte's time

  void send(const Tlp& t) { dev.receive(fisrig::nvme::encode(t), now); }
  // Everything the device sends by `until`, decoded.
  void drain(SimTime until) {
    std::vector<uint8_t> bytes;
    SimTime start;
    while (dev.transmit(until, bytes, start)) {
      Tlp t;
      ASSERT_TRUE(fisrig::nvme::decode(bytes.data(), bytes.size(), t));
      answers.emplace_back(start, t);
    }
  }
  // A request and its completion (the rig's clock moves to its arrival, 1 us at most).
  Tlp ask(Tlp t) {
    t.requester_id = kRig;
    t.tag = tag++;
    send(t);
    size_t seen = answers.size();
    drain(now + 1000);
    EXPECT_EQ(answers.size(), seen + 1) << "one completion for one request";
    if (answers.size() != seen + 1)
      return Tlp{};
    now = answers.back().first + 100;
    EXPECT_EQ(answers.back().second.tag, t.tag);
    EXPECT_EQ(answers.back().second.requester_id, kRig);
    return answers.back().second;
  }
  static Tlp cfg(bool write, uint16_t target, uint16_t offset, uint32_t value = 0) {
    return fisrig::test::config_request(write, target, offset, 0, value);
  }
  static Tlp mem(bool write, uint64_t address, uint32_t dwords = 1, uint32_t value = 0) {
    Tlp t;
    t.fmt_type = write ? FISRIG_PCIE_TLP_MWR32 : FISRIG_PCIE_TLP_MRD32;
    t.length = uint16_t(dwords);
    t.first_be = 0xF;
    t.last_be = dwords > 1 ? 0xF : 0;
    t.address = address;
    for (uint32_t k = 0; write && k < dwords; ++k)
      fisrig::nvme::append_le32(t.data, value);
    return t;
  }
  uint32_t read32(uint64_t address) {
    Tlp c = ask(mem(false, address));
    EXPECT_EQ(c.fmt_type, FISRIG_PCIE_TLP_CPLD);
    EXPECT_EQ(c.status, FISRIG_PCIE_CPL_SC);
    EXPECT_EQ(c.completer_id, kDev);
    EXPECT_EQ(c.byte_count, 4);
    EXPECT_EQ(c.lower_address, address & 0x7F);
    return c.dword(0);
  }
  void write32(uint64_t address, uint32_t value) {
    send(mem(true, address, 1, value));
    now += 100;
  }

  // fisrig_pcie_ops over TLPs.
  static unsigned cfg_read(void* ctx, uint8_t bus, uint8_t d, uint8_t fn, uint16_t offset, uint32_t* value) {
    Rig& r = *static_cast<Rig*>(ctx);
    Tlp c = r.ask(cfg(false, uint16_t(bus << 8 | d << 3 | fn), offset));
    if (c.status == FISRIG_PCIE_CPL_SC)
      *value = c.dword(0);
    return c.status;
  }
  static unsigned cfg_write(void* ctx, uint8_t bus, uint8_t d, uint8_t fn, uint16_t offset, uint32_t value) {
    Rig& r = *static_cast<Rig*>(ctx);
    return r.ask(cfg(true, uint16_t(bus << 8 | d << 3 | fn), offset, value)).status;
  }
  static void mem_write(void* ctx, uint64_t address, uint32_t value) { static_cast<Rig*>(ctx)->write32(address, value); }
  static void delay(void* ctx, uint32_t us) { static_cast<Rig*>(ctx)->now += SimTime(us) * 1000; }
  fisrig_pcie_ops ops() { return {this, cfg_read, cfg_write, mem_write, delay}; }
};

fisrig_pcie_plan plan() { return fisrig::test::rig_plan(0x4000'0000, 5); }

TEST(TlpDevice, IsEnumeratedByTheFirmwareOverConfigurationTlps) {
  Rig rig;
  rig.dev.function().reset(rig.now + 2'500'000);  // not ready for 2.5 ms after a reset
  fisrig_pcie_ops ops = rig.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
  EXPECT_EQ(f.crs_retries, 3u);
  EXPECT_EQ(f.vendor, FISRIG_NVME_SIM_VENDOR_ID);
  EXPECT_EQ(f.bar0, 0x4000'0000u);
  EXPECT_EQ(f.max_payload, 256);
  // 65 queue pairs' vectors in the table (tiny-1gb's 64 I/O pairs and the admin pair).
  EXPECT_EQ(f.msix_entries, 65);
  for (uint16_t v = 0; v < 5; ++v) {
    PciFunction::MsixMessage m = rig.dev.function().msix(v);
    EXPECT_EQ(m.address, 0x0010'0FF0u);
    EXPECT_EQ(m.data, v);
    EXPECT_FALSE(m.masked);
  }
  // Every answer is a completion to the rig from 1:0.0 (CRS ones among them), none malformed.
  for (const auto& [t, c] : rig.answers) {
    EXPECT_TRUE(c.is_completion());
    EXPECT_EQ(c.completer_id, kDev);
  }
  EXPECT_EQ(rig.dev.malformed(), 0u);
  EXPECT_EQ(rig.dev.unsupported(), 0u);
  // The MSI-X table reads back through BAR0.
  EXPECT_EQ(rig.read32(f.bar0 + PciFunction::kMsixTable + 16 * 3 + FISRIG_PCI_MSIX_ENTRY_DATA), 3u);
}

TEST(TlpDevice, TheControllerComesUpThroughBar0) {
  Rig rig;
  fisrig_pcie_ops ops = rig.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
  const uint64_t bar = f.bar0;
  EXPECT_EQ(rig.read32(bar + FISRIG_NVME_REG_VS), 0x0002'0000u);
  const uint64_t cap = uint64_t(rig.read32(bar + FISRIG_NVME_REG_CAP + 4)) << 32 | rig.read32(bar + FISRIG_NVME_REG_CAP);
  EXPECT_EQ(cap, rig.dev.controller().read64(FISRIG_NVME_REG_CAP));
  rig.write32(bar + FISRIG_NVME_REG_AQA, 31u << 16 | 31u);
  rig.write32(bar + FISRIG_NVME_REG_ASQ, 0x0010'0000);
  rig.write32(bar + FISRIG_NVME_REG_ASQ + 4, 0);
  rig.write32(bar + FISRIG_NVME_REG_ACQ, 0x0010'1000);
  rig.write32(bar + FISRIG_NVME_REG_ACQ + 4, 0);
  const SimTime enabled = rig.now;
  rig.write32(bar + FISRIG_NVME_REG_CC, FISRIG_NVME_CC_EN | 6u << 16 | 4u << 20);
  EXPECT_EQ(rig.read32(bar + FISRIG_NVME_REG_CC) & FISRIG_NVME_CC_EN, FISRIG_NVME_CC_EN);
  SimTime ready = 0;
  for (int k = 0; k < 40 && !ready; ++k) {
    if (rig.read32(bar + FISRIG_NVME_REG_CSTS) & FISRIG_NVME_CSTS_RDY)
      ready = rig.now;
    else
      rig.now += 100'000;
  }
  ASSERT_NE(ready, 0u) << "CSTS.RDY within 4 ms";
  EXPECT_GE(ready - enabled, rig.dev.controller().config().enable_ns);
  EXPECT_EQ(rig.dev.controller().read32(FISRIG_NVME_REG_ASQ), 0x0010'0000u);
}

TEST(TlpDevice, CompletionsGoAtTheirTimeAndBackToBackAtTheLinksRate) {
  Rig rig;
  // Three config reads in at the same time: their completions, due 250 ns after, go one
  // after the other; each is 12 + 4 bytes and 8 of framing at Gen2 x4 (0.5 ns a byte): 12 ns.
  rig.send(Rig::cfg(false, kDev, 0));
  rig.send(Rig::cfg(false, kDev, 8));
  rig.send(Rig::cfg(false, kDev, 0));
  rig.drain(rig.now + 10'000);
  ASSERT_EQ(rig.answers.size(), 3u);
  EXPECT_EQ(rig.answers[0].first, rig.now + 250);
  EXPECT_EQ(rig.answers[1].first, rig.now + 250 + 12);
  EXPECT_EQ(rig.answers[2].first, rig.now + 250 + 24);
  EXPECT_EQ(rig.answers[1].second.dword(0) >> 8, FISRIG_PCI_CLASS_NVME);
  // Nothing is sent before it is due.
  rig.now += 1000;
  rig.send(Rig::cfg(false, kDev, 0));
  std::vector<uint8_t> bytes;
  SimTime start;
  EXPECT_FALSE(rig.dev.transmit(rig.now + 249, bytes, start));
  EXPECT_EQ(rig.dev.next_out(), rig.now + 250);
  EXPECT_TRUE(rig.dev.transmit(rig.now + 250, bytes, start));
}

TEST(TlpDevice, WhatAFunctionMustRefuseIsRefusedAndItGoesOn) {
  Rig rig;
  // Another function below the root port: none there.
  EXPECT_EQ(rig.ask(Rig::cfg(false, 0x0108, 0)).status, FISRIG_PCIE_CPL_UR);
  // BAR0 not placed and memory space off: a read is UR, a write dropped.
  EXPECT_EQ(rig.ask(Rig::mem(false, 0x4000'0000)).status, FISRIG_PCIE_CPL_UR);
  rig.write32(0x4000'0014, 1);
  EXPECT_EQ(rig.dev.unsupported(), 3u);
  fisrig_pcie_ops ops = rig.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
  EXPECT_EQ(rig.dev.controller().read32(FISRIG_NVME_REG_CC), 0u);  // the write before was not taken
  // Past BAR0's end.
  EXPECT_EQ(rig.ask(Rig::mem(false, f.bar0 + PciFunction::kBar0Bytes)).status, FISRIG_PCIE_CPL_UR);
  // Three dwords at once: not a register access.
  Tlp three = rig.ask(Rig::mem(false, f.bar0, 3));
  EXPECT_EQ(three.status, FISRIG_PCIE_CPL_UR);
  EXPECT_EQ(rig.dev.malformed(), 1u);
  // Bytes that are not a TLP.
  rig.dev.receive({0x40, 0, 0, 1, 0, 0}, rig.now);
  EXPECT_EQ(rig.dev.malformed(), 2u);
  // And the device answers on.
  EXPECT_EQ(rig.read32(f.bar0 + FISRIG_NVME_REG_VS), 0x0002'0000u);
  // A 64-bit register as one 8-byte read.
  Tlp cap = rig.ask(Rig::mem(false, f.bar0 + FISRIG_NVME_REG_CAP, 2));
  EXPECT_EQ(cap.status, FISRIG_PCIE_CPL_SC);
  EXPECT_EQ(uint64_t(cap.dword(1)) << 32 | cap.dword(0), rig.dev.controller().read64(FISRIG_NVME_REG_CAP));
  EXPECT_EQ(cap.byte_count, 8);
}

}  // namespace
