// The NVMe rig core in Verilator (the root port, the CPU's BAR window and the NVMe queue
// engine: hw/fisrig_hw/nvme/nvme_core.py) against the simulated controller at its TLP
// interface (sim/nvme's device_c.h) on the PHY's beats, a beat time (4 ns, Gen2 x4) a
// cycle. This program plays the firmware: it enumerates the function through the root
// port's config requester with the firmware's own pcie_enum.c, brings the controller up
// through the BAR window on the engine's admin queues, makes the I/O queue pairs with admin
// descriptors through the engine, then feeds it descriptors from a script as the rings do
// and prints every record. Tests and `make bench` drive it through fisrig_bench.nvme_sim.
//
//   Vnvme_core PROFILE FAULTS|- SCRIPT      (FAULTS: device_c.h's knobs)
//
// Script, one item per line, run in order (besides runner_start.h's max_cycles and trace):
//   queues <n>            the I/O queue pairs to make (at most the core's; default all)
//   desc <64 hex digits>  a 32-byte ring entry for the engine (an NVMe descriptor is three)
//   wait                  until every descriptor so far has its record
//   depth <n>             from here on, at most n descriptors without a record (0: no limit),
//                         as a host keeping a queue depth does
//   ram <dword> <hex>...  the data window's dwords from <dword> on, before the bring-up
//   dump <dword> <n>      print n of the window's dwords at the end ("dump <dword> <hex>...")
//   bring_up              enumerate, enable and make the queues again (after a POWER ON, as the
//                         firmware does once the rails are back)
//   wire                  print every TLP from here on, both ways, as it crossed the PHY:
//                         "tlp down|up <tick of its first beat> <of its last> <dat>:<be>,..."
// Prints "up <tick> <io queues>" once the queues are made, "rec <160 hex digits>" per
// record of the script's descriptors (a power cut's event record among them), "rails <0|1>
// <tick>" as the drive's rails fall or rise, then the counters ("cycles", "wall_s",
// "host_instructions", the core's and the device's). Exits 2 on bad arguments, 3 when
// stuck at max_cycles, 4 when the bring-up failed (its line says where).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "Vnvme_core.h"
#include "fisrig/nvme/device_c.h"
#include "instruction_count.h"
#include "runner_start.h"

extern "C" {
#include "fisrig/engine_if.h"
#include "fisrig/nvme.h"
#include "fisrig/pcie_enum.h"
}

namespace {

constexpr uint32_t kBar0Window = 0x40000000u, kBar0WindowBytes = 0x10000000u;
constexpr uint64_t kCyclesPerUs = 250;  // a 4 ns beat

bool parse_hex(const std::string& hex, uint8_t* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned v;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    out[i] = uint8_t(v);
  }
  return true;
}

// The core's build (fisrig_bench.nvme_sim passes its parameters).
constexpr unsigned kQueues = FISRIG_CORE_QUEUES, kIoEntries = FISRIG_CORE_IO_ENTRIES;

struct Item {
  enum Kind { DESC, WAIT, WIRE, DEPTH, BRING_UP } kind;
  fisrig_cmd_desc desc{};
  uint64_t depth = 0;
};

struct Script : fisrig::rtl::ScriptLimits {
  std::deque<Item> items;
  unsigned queues = kQueues;
  std::vector<std::pair<uint32_t, uint32_t>> ram;    // dword, value
  std::vector<std::pair<uint32_t, uint32_t>> dumps;  // dword, count
};

bool read_script(const char* path, Script& s, std::string& why) {
  return fisrig::rtl::read_script_lines(path, why, s, [&s](const std::string& word, std::istringstream& f,
                                                        std::string& problem) {
    if (word == "desc") {
      Item it{Item::DESC};
      std::string hex;
      bool ok = bool(f >> hex) && parse_hex(hex, reinterpret_cast<uint8_t*>(&it.desc), sizeof it.desc);
      s.items.push_back(it);
      return ok;
    }
    if (word == "wait" || word == "wire" || word == "bring_up") {
      s.items.push_back(Item{word == "wait" ? Item::WAIT : word == "wire" ? Item::WIRE : Item::BRING_UP});
      return true;
    }
    if (word == "ram") {
      uint32_t at;
      std::string hex;
      bool ok = bool(f >> at);
      while (ok && f >> hex) s.ram.emplace_back(at++, uint32_t(std::stoul(hex, nullptr, 16)));
      return ok;
    }
    if (word == "dump") {
      uint32_t at, n;
      bool ok = bool(f >> at >> n);
      s.dumps.emplace_back(at, n);
      return ok;
    }
    if (word == "depth") {
      Item it{Item::DEPTH};
      bool ok = bool(f >> it.depth);
      s.items.push_back(it);
      return ok;
    }
    if (word == "queues") {
      bool ok = bool(f >> s.queues) && s.queues >= 1 && s.queues <= kQueues;
      if (!ok) problem = "queues: 1 to " + std::to_string(kQueues);
      return ok;
    }
    return false;
  });
}

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
    if (top.tx_valid) {
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
    ++cycle;
    return true;
  }
  bool run(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i)
      if (!step()) return false;
    return true;
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

fisrig_cmd_desc entry(const void* p) {
  fisrig_cmd_desc d;
  std::memcpy(&d, p, sizeof d);
  return d;
}

// An admin command through the engine, its data (if any) the engine's own map (OWN_PRP).
bool admin(Rig& rig, uint32_t tag, fisrig_nvme_sqe s, fisrig_cpl_record& r) {
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

void print_record(const fisrig_cpl_record& r) {
  std::printf("rec ");
  const uint8_t* b = reinterpret_cast<const uint8_t*>(&r);
  for (size_t i = 0; i < sizeof r; ++i) std::printf("%02x", b[i]);
  std::printf("\n");
}

int bring_up(Rig& rig, unsigned want_queues, unsigned core_queues, unsigned& made) {
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
  if ((cap_lo & 0xFFFF) + 1 < kIoEntries) {
    std::printf("bring-up: the controller's queues hold %u entries, the engine's %u\n", (cap_lo & 0xFFFF) + 1, kIoEntries);
    return 4;
  }
  for (unsigned q = 1; q <= made; ++q) {
    fisrig_nvme_sqe cq{}, sq{};
    cq.opcode = FISRIG_NVME_ADMIN_CREATE_IO_CQ;
    cq.prp1 = FISRIG_NVME_RIG_IO_QUEUES + q * 0x100000ull;
    cq.cdw10 = (kIoEntries - 1) << 16 | q;
    cq.cdw11 = q << 16 | 3;  // vector q, interrupts on, physically contiguous
    sq.opcode = FISRIG_NVME_ADMIN_CREATE_IO_SQ;
    sq.prp1 = cq.prp1 + 0x80000;
    sq.cdw10 = (kIoEntries - 1) << 16 | q;
    sq.cdw11 = q << 16 | 1;
    for (auto* cmd : {&cq, &sq})
      if (!admin(rig, q, *cmd, r) || c->result != FISRIG_RESULT_OK) {
        std::printf("bring-up: creating I/O queue %u: result %u status %04x\n", q, c->result, c->status);
        return 4;
      }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PROFILE FAULTS|- SCRIPT\n", argv[0]);
    return 2;
  }
  Script script;
  std::string why;
  if (!read_script(argv[3], script, why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 2;
  }
  Rig rig;
  char err[256];
  rig.dev = fisrig_nvme_device_new(argv[1], std::strcmp(argv[2], "-") ? argv[2] : nullptr, 2, 4, err, sizeof err);
  if (!rig.dev) {
    std::fprintf(stderr, "device: %s\n", err);
    return 2;
  }
  rig.max_cycles = script.max_cycles;
  rig.top.tx_ready = 1;
  rig.top.cpl_ready = 1;
  rig.top.sys_rst = 1;
  rig.run(10);
  rig.top.sys_rst = 0;
  for (auto [at, v] : script.ram) {  // the window's port, before anything moves
    rig.top.win_adr = at, rig.top.win_dat_w = v, rig.top.win_we = 1;
    rig.step();
  }
  rig.top.win_we = 0;
  auto wall0 = std::chrono::steady_clock::now();
  fisrig::bench::Region instructions;
  instructions.begin();
  unsigned made = 0;
  int rc = bring_up(rig, script.queues, kQueues, made);
  if (!rc) {
    std::printf("up %llu %u\n", (unsigned long long)rig.top.now, made);
    rig.records.clear();
    uint64_t submitted = 0, completed = 0;
    unsigned sqe_entries = 0;  // of the NVMe descriptor under way
    uint64_t depth = 0;
    for (;;) {
      auto& items = script.items;
      while (!items.empty() && ((items.front().kind == Item::WAIT && completed == submitted) ||
                                items.front().kind == Item::WIRE || items.front().kind == Item::DEPTH ||
                                (items.front().kind == Item::BRING_UP && completed == submitted))) {
        if (items.front().kind == Item::WIRE) rig.wire = true;
        if (items.front().kind == Item::DEPTH) depth = items.front().depth;
        if (items.front().kind == Item::BRING_UP) {
          if ((rc = bring_up(rig, script.queues, kQueues, made))) break;
          std::printf("up %llu %u\n", (unsigned long long)rig.top.now, made);
        }
        items.pop_front();
      }
      if (rc) break;
      if (items.empty() && completed == submitted) break;
      // A new descriptor waits for room under the depth; the entries of one under way do not.
      const bool room = !depth || sqe_entries || submitted - completed < depth;
      const bool offer = !items.empty() && items.front().kind == Item::DESC && room;
      rig.top.desc_valid = offer;
      if (offer) std::memcpy(rig.top.desc_raw.data(), &items.front().desc, sizeof(fisrig_cmd_desc));
      rig.top.sys_clk = 0;
      rig.top.eval();
      const bool took = offer && rig.top.desc_ready;
      if (!rig.step()) break;
      if (took) {
        if (sqe_entries) --sqe_entries;
        else {
          ++submitted;
          if (items.front().desc.protocol == FISRIG_PROTO_NVME) sqe_entries = FISRIG_NVME_DESC_ENTRIES - 1;
        }
        items.pop_front();
      }
      for (; !rig.records.empty(); rig.records.pop_front()) {
        if (rig.records.front().user_tag != FISRIG_USER_TAG_EVENT) ++completed;
        print_record(rig.records.front());
      }
    }
    rig.top.desc_valid = 0;
    // The engine's own records after the last descriptor's (a cut's): 8 us more.
    for (int k = 0; !rc && k < 2000 && rig.step(); ++k)
      for (; !rig.records.empty(); rig.records.pop_front()) print_record(rig.records.front());
    if (!rc && !(script.items.empty() && completed == submitted)) {
      std::printf("stuck: %llu descriptors without a record after %llu cycles\n",
                  (unsigned long long)(submitted - completed), (unsigned long long)rig.cycle);
      rc = 3;
    }
  }
  for (auto [at, n] : script.dumps) {
    std::printf("dump %u", at);
    for (uint32_t k = 0; k < n; ++k) {
      rig.top.win_adr = at + k;
      rig.max_cycles = rig.cycle + 2;
      rig.step();  // its value a cycle after its address
      rig.top.sys_clk = 0;
      rig.top.eval();
      std::printf(" %08x", rig.top.win_dat_r);
    }
    std::printf("\n");
  }
  long long host_instructions = instructions.cpu_count();
  instructions.end();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::printf("cycles %llu\nwall_s %.6f\nhost_instructions %lld\n", (unsigned long long)rig.cycle, wall, host_instructions);
  const auto& t = rig.top;
  std::printf("stray_cqes %u\nstray_msix %u\ntimeouts %u\nstray_writes %u\ntap_mismatch %u\ncqe_packed %u\n"
              "refused_reads %u\ntap_overflow %u\ndiscarded %u\n",
              t.stray_cqes, t.stray_msix, t.timeouts, t.stray_writes, t.tap_mismatch, t.cqe_packed, t.refused_reads,
              t.tap_overflow, t.discarded);
  char stats[1024];
  fisrig_nvme_device_stats_string(rig.dev, stats, sizeof stats);
  std::fputs(stats, stdout);
  fisrig_nvme_device_free(rig.dev);
  return rc;
}
