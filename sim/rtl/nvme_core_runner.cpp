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

#include "instruction_count.h"
#include "nvme_rig.h"
#include "runner_start.h"

namespace {

using fisrig::rtl::Rig;

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
      bool ok = bool(f >> hex) && fisrig::rtl::parse_hex_bytes(hex, reinterpret_cast<uint8_t*>(&it.desc), sizeof it.desc);
      s.items.push_back(it);
      return ok;
    }
    if (word == "wait" || word == "wire" || word == "bring_up") {
      s.items.push_back(Item{word == "wait" ? Item::WAIT : word == "wire" ? Item::WIRE : Item::BRING_UP});
      return true;
    }
    if (word == "ram") return fisrig::rtl::read_ram_item(f, s.ram);
    if (word == "dump") return fisrig::rtl::read_dump_item(f, s.dumps);
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

void print_record(const fisrig_cpl_record& r) {
  std::printf("rec ");
  const uint8_t* b = reinterpret_cast<const uint8_t*>(&r);
  for (size_t i = 0; i < sizeof r; ++i) std::printf("%02x", b[i]);
  std::printf("\n");
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
  for (auto [at, v] : script.ram) rig.window_write(at, v);  // before anything moves
  auto wall0 = std::chrono::steady_clock::now();
  fisrig::bench::Region instructions;
  instructions.begin();
  unsigned made = 0;
  int rc = fisrig::rtl::bring_up(rig, script.queues, kQueues, kIoEntries, made);
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
          if ((rc = fisrig::rtl::bring_up(rig, script.queues, kQueues, kIoEntries, made))) break;
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
  rig.max_cycles = ~0ull;  // the dumps' reads, past a stuck run's limit too
  for (auto [at, n] : script.dumps) {
    std::printf("dump %u", at);
    for (uint32_t k = 0; k < n; ++k) std::printf(" %08x", rig.window_read(at + k));
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
