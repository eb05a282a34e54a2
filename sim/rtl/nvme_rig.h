// The NVMe rig core in Verilator (hw/fisrig_hw/nvme/nvme_core.py) against the simulated
// controller at its TLP interface, clocked a beat time (4 ns, Gen2 x4) a cycle, and the
// firmware's part played around it: the enumeration with the firmware's own pcie_enum.c
// through the root port's config requester, the controller enabled through the BAR window
// on the engine's admin queues, the I/O queue pairs made with admin descriptors through the
// engine. Both runners use it: nvme_core_runner.cpp (scripts of descriptors) and
// nvme_rig_runner.cpp (a compiled program on the firmware core's VM).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "Vnvme_core.h"
#include "fisrig/nvme/device_c.h"

extern "C" {
#include "fisrig/engine_if.h"
#include "fisrig/nvme.h"
#include "fisrig/pcie_enum.h"
}

namespace fisrig::rtl {

constexpr uint32_t kBar0Window = 0x40000000u, kBar0WindowBytes = 0x10000000u;
constexpr uint64_t kCyclesPerUs = 250;  // a 4 ns beat

struct Rig {
  Vnvme_core top;
  void* dev = nullptr;
  fisrig_pcie_beat out{};  // the device's beat on rx
  uint64_t cycle = 0, max_cycles = 0;
  bool wire = false;
  bool rails = true;  // the device's, as last told
  std::string tx_beats, rx_beats;
  uint64_t tx_first = 0, rx_first = 0;
  std::vector<uint32_t> rec;
  std::deque<fisrig_cpl_record> records;

  static void beat_text(std::string& s, uint64_t dat, unsigned be) {
    char b[32];
    std::snprintf(b, sizeof b, "%s%016llx:%02x", s.empty() ? "" : ",", (unsigned long long)dat, be);
    s += b;
  }

  // One cycle: the device and the core clocked at one edge.
  bool step() {
    if (cycle >= max_cycles) return false;
    top.sys_clk = 0;
    top.eval();
    fisrig_pcie_beat in{};
    const bool tx_last = top.tx_valid && top.tx_ready && top.tx_last;
    if (top.tx_valid && top.tx_ready) {
      in.valid = 1, in.first = top.tx_first, in.last = top.tx_last, in.be = top.tx_be, in.dat = top.tx_dat;
      if (wire) {
        if (top.tx_first) tx_beats.clear(), tx_first = top.now;
        beat_text(tx_beats, top.tx_dat, top.tx_be);
        if (top.tx_last) std::printf("tlp down %llu %llu %s\n", (unsigned long long)tx_first, (unsigned long long)top.now, tx_beats.c_str());
      }
    }
    const bool took = out.valid && top.rx_ready;
    if (took && wire) {
      if (out.first) rx_beats.clear(), rx_first = top.now;
      beat_text(rx_beats, out.dat, out.be);
      if (out.last) std::printf("tlp up %llu %llu %s\n", (unsigned long long)rx_first, (unsigned long long)top.now, rx_beats.c_str());
    }
    if (top.cpl_valid && top.cpl_ready) {
      rec.push_back(top.cpl_data);
      if (top.cpl_last && rec.size() == sizeof(fisrig_cpl_record) / 4) {
        fisrig_cpl_record r;
        std::memcpy(&r, rec.data(), sizeof r);
        rec.clear();
        records.push_back(r);
      }
      if (top.cpl_last) rec.clear();
    }
    if (bool(top.rails_on) != rails) {  // the engine's cut, on its tick, or its POWER ON
      rails = top.rails_on;
      fisrig_nvme_device_power(dev, rails);
      std::printf("rails %d %llu\n", int(rails), (unsigned long long)top.now);
    }
    fisrig_nvme_device_clock(dev, &in, took, &out);
    top.sys_clk = 1;
    top.eval();
    top.rx_valid = out.valid, top.rx_first = out.first, top.rx_last = out.last, top.rx_be = out.be, top.rx_dat = out.dat;
    // The link's framing of each TLP the rig sends (STP, sequence number, LCRC, END: 8 bytes
    // below 8 GT/s, pcie_link.h's kFraming) takes the beat after its last: the hard block
    // adds it, the PHY stream does not carry it. (The device paces its own TLPs so.)
    top.tx_ready = !tx_last;
    ++cycle;
    return true;
  }
  bool run(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i)
      if (!step()) return false;
    return true;
  }

  // The data window's dword port (the CPU's, between the controller's writes): a dword
  // written in a cycle, one read a cycle after its address.
  void window_write(uint32_t dword, uint32_t value) {
    top.win_adr = dword, top.win_dat_w = value, top.win_we = 1;
    step();
    top.win_we = 0;
  }
  uint32_t window_read(uint32_t dword) {
    top.win_adr = dword;
    step();
    top.sys_clk = 0;
    top.eval();
    return top.win_dat_r;
  }

  // The firmware's side of the config requester and the window.
  unsigned config(bool we, uint8_t bus, uint8_t dev_, uint8_t fn, uint16_t offset, uint32_t wdata, uint32_t* rdata) {
    top.cfg_we = we, top.cfg_bus = bus, top.cfg_device = dev_, top.cfg_function = fn;
    top.cfg_register = offset >> 2, top.cfg_wdata = wdata, top.cfg_start = 1;
    step();
    top.cfg_start = 0;
    while (!top.cfg_done)
      if (!step()) return FISRIG_PCIE_CPL_NONE;
    if (rdata) *rdata = top.cfg_rdata;
    const unsigned status = top.cfg_status;
    step();  // the requester back in IDLE, ready for the next
    return status;
  }
  bool bus(bool we, uint32_t address, uint32_t wdata, uint32_t* rdata) {
    top.wb_cyc = 1, top.wb_stb = 1, top.wb_we = we, top.wb_adr = address >> 2, top.wb_sel = 0xF, top.wb_dat_w = wdata;
    bool acked = false;
    while (!acked) {
      top.sys_clk = 0;
      top.eval();
      acked = top.wb_ack;
      if (acked && rdata) *rdata = top.wb_dat_r;
      if (!step()) return false;
    }
    top.wb_cyc = 0, top.wb_stb = 0;
    return true;
  }

  static unsigned cfg_read(void* ctx, uint8_t b, uint8_t d, uint8_t f, uint16_t off, uint32_t* v) {
    return static_cast<Rig*>(ctx)->config(false, b, d, f, off, 0, v);
  }
  static unsigned cfg_write(void* ctx, uint8_t b, uint8_t d, uint8_t f, uint16_t off, uint32_t v) {
    return static_cast<Rig*>(ctx)->config(true, b, d, f, off, v, nullptr);
  }
  static void mem_write(void* ctx, uint64_t address, uint32_t value) {
    static_cast<Rig*>(ctx)->bus(true, uint32_t(address), value, nullptr);
  }
  static void delay_us(void* ctx, uint32_t us) { static_cast<Rig*>(ctx)->run(us * kCyclesPerUs); }

  // Each entry offered until taken.
  bool feed(const fisrig_cmd_desc& d) {
    top.desc_valid = 1;
    std::memcpy(top.desc_raw.data(), &d, sizeof d);
    bool taken = false;
    while (!taken) {
      top.sys_clk = 0;
      top.eval();
      taken = top.desc_ready;
      if (!step()) return false;
    }
    top.desc_valid = 0;
    return true;
  }
};

inline fisrig_cmd_desc entry(const void* p) {
  fisrig_cmd_desc d;
  std::memcpy(&d, p, sizeof d);
  return d;
}

// An admin command through the engine, its data (if any) the engine's own map (OWN_PRP).
inline bool admin(Rig& rig, uint32_t tag, fisrig_nvme_sqe s, fisrig_cpl_record& r) {
  fisrig_nvme_desc_head h{};
  h.protocol = FISRIG_PROTO_NVME;
  h.nvme_flags = FISRIG_NVME_DESC_OWN_PRP;
  h.user_tag = tag;
  uint8_t raw[96];
  std::memcpy(raw, &h, 32);
  std::memcpy(raw + 32, &s, 64);
  for (int k = 0; k < 3; ++k)
    if (!rig.feed(entry(raw + 32 * k))) return false;
  while (rig.records.empty())
    if (!rig.step()) return false;
  r = rig.records.front();
  rig.records.pop_front();
  return true;
}

inline int bring_up(Rig& rig, unsigned want_queues, unsigned core_queues, unsigned io_entries, unsigned& made) {
  fisrig_pcie_ops ops{&rig, Rig::cfg_read, Rig::cfg_write, Rig::mem_write, Rig::delay_us};
  fisrig_pcie_plan plan{1, 0, 0, kBar0Window, kBar0WindowBytes, 256, FISRIG_NVME_RIG_MSIX, uint16_t(core_queues + 1),
                        1000000};
  fisrig_pcie_function fn{};
  int e = fisrig_pcie_enumerate(&ops, &plan, &fn);
  if (e != FISRIG_PCIE_ENUM_OK) {
    std::printf("bring-up: enumeration: %s\n", fisrig_pcie_enum_why(e));
    return 4;
  }
  rig.top.bar0 = uint32_t(fn.bar0);
  const uint32_t bar = uint32_t(fn.bar0);
  const uint32_t n = FISRIG_NVME_RIG_ADMIN_ENTRIES - 1;
  rig.bus(true, bar + FISRIG_NVME_REG_AQA, n << 16 | n, nullptr);
  rig.bus(true, bar + FISRIG_NVME_REG_ASQ, FISRIG_NVME_RIG_ASQ, nullptr);
  rig.bus(true, bar + FISRIG_NVME_REG_ASQ + 4, 0, nullptr);
  rig.bus(true, bar + FISRIG_NVME_REG_ACQ, FISRIG_NVME_RIG_ACQ, nullptr);
  rig.bus(true, bar + FISRIG_NVME_REG_ACQ + 4, 0, nullptr);
  rig.bus(true, bar + FISRIG_NVME_REG_CC,
          FISRIG_NVME_CC_EN | 6u << FISRIG_NVME_CC_IOSQES_SHIFT | 4u << FISRIG_NVME_CC_IOCQES_SHIFT, nullptr);
  uint32_t csts = 0, cap_lo = 0;
  for (int us = 0; us < 1000000 && !(csts & FISRIG_NVME_CSTS_RDY); us += 10) {
    if (!rig.bus(false, bar + FISRIG_NVME_REG_CSTS, 0, &csts) || !rig.run(10 * kCyclesPerUs)) break;
  }
  if (!(csts & FISRIG_NVME_CSTS_RDY)) {
    std::printf("bring-up: CSTS.RDY never came (CSTS %08x)\n", csts);
    return 4;
  }
  rig.bus(false, bar + FISRIG_NVME_REG_CAP, 0, &cap_lo);
  rig.top.controller_ready = 0;  // its rise says the controller is up (again)
  rig.step();
  rig.top.controller_ready = 1;
  rig.step();
  fisrig_cpl_record r;
  fisrig_nvme_sqe s{};
  s.opcode = FISRIG_NVME_ADMIN_SET_FEATURES;
  s.cdw10 = FISRIG_NVME_FEAT_NUMBER_OF_QUEUES;
  s.cdw11 = (want_queues - 1) << 16 | (want_queues - 1);
  fisrig_nvme_cpl_record* c = reinterpret_cast<fisrig_nvme_cpl_record*>(&r);
  if (!admin(rig, 0, s, r) || c->result != FISRIG_RESULT_OK) {
    std::printf("bring-up: Number of Queues: result %u status %04x\n", c->result, c->status);
    return 4;
  }
  made = std::min({want_queues, (c->dw0 & 0xFFFF) + 1, (c->dw0 >> 16) + 1});
  if ((cap_lo & 0xFFFF) + 1 < io_entries) {
    std::printf("bring-up: the controller's queues hold %u entries, the engine's %u\n", (cap_lo & 0xFFFF) + 1, io_entries);
    return 4;
  }
  for (unsigned q = 1; q <= made; ++q) {
    fisrig_nvme_sqe cq{}, sq{};
    cq.opcode = FISRIG_NVME_ADMIN_CREATE_IO_CQ;
    cq.prp1 = FISRIG_NVME_RIG_IO_QUEUES + q * 0x100000ull;
    cq.cdw10 = (io_entries - 1) << 16 | q;
    cq.cdw11 = q << 16 | 3;  // vector q, interrupts on, physically contiguous
    sq.opcode = FISRIG_NVME_ADMIN_CREATE_IO_SQ;
    sq.prp1 = cq.prp1 + 0x80000;
    sq.cdw10 = (io_entries - 1) << 16 | q;
    sq.cdw11 = q << 16 | 1;
    for (auto* cmd : {&cq, &sq})
      if (!admin(rig, q, *cmd, r) || c->result != FISRIG_RESULT_OK) {
        std::printf("bring-up: creating I/O queue %u: result %u status %04x\n", q, c->result, c->status);
        return 4;
      }
  }
  return 0;
}

}  // namespace fisrig::rtl
