// The rig core in Verilator (LiteSATA's PHY control, datapath and link, our transport,
// engine and power controller) against the simulated drive's device side at the
// transceiver pins, with this program standing in for the ring front end: it feeds the
// engine descriptors from a script, serves its RAM reads and writes, and prints every
// record the engine writes. Tests and `make bench` drive it through fisrig_bench.rig_sim.
//
//   Vrig_core PROFILE FAULTS SCRIPT       (FAULTS: "-" for none, else device_c.h's knobs)
//
// Script, one item per line, run in order:
//   desc <64 hex digits>     a 32-byte descriptor (struct fisrig_cmd_desc) for the engine
//   wait                     until every descriptor so far has its record (as the firmware
//                            waits on its completion ring between the phases of a test)
//   ram <word> <hex>...      RAM words from word address <word> (the data window's start is 0)
//   dump <word> <n>          print n RAM words at the end
//   max_cycles <n>           give up after n cycles (exit 3): a stuck engine never hangs a test
//   trace <from> <to>        print the wire in cycles [from, to): "w <cycle> <tx> <rx>", each a
//                            primitive's name, a data dword in hex, or "idle"
// Prints "rec <160 hex digits>" per record in the order written (events included), then
// "dump", "cycles", "wall_s", "host_instructions", "ram_out_of_range" lines and the device's
// counters. Built with FISRIG_RUNNER_CAPTURE (a core with the analyzer's capture), also
// "cap <hex>" per entry its ring takes, as it takes it (engine/capture.py's entry_layout).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "Vrig_core.h"
#include "device_pins.h"
#include "fisrig/device/device_c.h"
#include "instruction_count.h"
#include "runner_start.h"
#include "fisrig/engine_if.h"

namespace {

struct Item {
  enum Kind { DESC, WAIT, HOLD } kind;
  fisrig_cmd_desc desc;
  uint64_t cycles = 0;  // HOLD: the record port is held this long (a host that takes none)
};

struct Script : fisrig::rtl::ScriptLimits {
  std::deque<Item> items;
  std::vector<std::pair<uint32_t, uint32_t>> ram;    // word, value
  std::vector<std::pair<uint32_t, uint32_t>> dumps;  // word, count
  uint32_t ram_wr_gap = 0;  // the host's memory takes a write every (gap + 1) cycles
};

bool read_script(const char* path, Script& s, std::string& why) {
  return fisrig::rtl::read_script_lines(path, why, s, [&s](const std::string& word, std::istringstream& f,
                                                        std::string&) {
    if (word == "desc") {
      Item it{Item::DESC, {}};
      std::string hex;
      bool ok = bool(f >> hex) && fisrig::rtl::parse_hex_bytes(hex, reinterpret_cast<uint8_t*>(&it.desc), sizeof it.desc);
      s.items.push_back(it);
      return ok;
    }
    if (word == "wait") {
      s.items.push_back(Item{Item::WAIT, {}});
      return true;
    }
    if (word == "hold_records") {
      Item it{Item::HOLD, {}};
      bool ok = bool(f >> it.cycles);
      s.items.push_back(it);
      return ok;
    }
    if (word == "ram") return fisrig::rtl::read_ram_item(f, s.ram);
    if (word == "dump") return fisrig::rtl::read_dump_item(f, s.dumps);
    if (word == "ram_wr_gap") return bool(f >> s.ram_wr_gap);
    return false;
  });
}

}  // namespace

int main(int argc, char** argv) {
  Script script;
  void* dev = fisrig::rtl::start_runner(argc, argv, script, read_script);
  if (!dev) return 2;
  std::vector<uint32_t> ram(1u << 20);  // 4 MiB data window
  uint64_t ram_out_of_range = 0;
  for (auto [at, v] : script.ram) {
    if (at < ram.size()) ram[at] = v;
    else ++ram_out_of_range;
  }

  Vrig_core top;
  top.sys_rst = 1;
  top.data_base = 0;
  top.data_bytes = uint32_t(ram.size() * 4);  // a descriptor past the window is refused
  top.cpl_ready = 1;
  top.ram_wr_ready = 1;
  top.ram_rd_addr_ready = 1;
  top.ram_rd_data_valid = 0;
  top.rx_idle = 1;
  std::deque<uint32_t> reads;  // RAM words the engine asked for, answered one a cycle
  std::vector<uint32_t> rec;
  uint64_t submitted = 0, completed = 0, cycle = 0;
  fisrig_pins_out out{};
  out.rx_idle = 1;
  auto wall0 = std::chrono::steady_clock::now();
  // The host instructions this process retires in user space: the simulation's cost in a
  // unit that, unlike wall time, does not move with the machine's load or clock. Where the
  // CPU gives no counter, bench_rtl.py runs this under callgrind, which counts from here to
  // the end of the region only.
  fisrig::bench::Region instructions;
  instructions.begin();
  uint64_t hold_until = 0;
  for (; cycle < script.max_cycles; ++cycle) {
    while (!script.items.empty() && script.items.front().kind == Item::WAIT && completed == submitted)
      script.items.pop_front();
    if (!script.items.empty() && script.items.front().kind == Item::HOLD) {
      hold_until = cycle + script.items.front().cycles;
      script.items.pop_front();
    }
    top.cpl_ready = cycle >= hold_until;
    if (script.items.empty() && completed == submitted) break;
    if (cycle == 10) top.sys_rst = 0;
    bool offer = cycle > 10 && !script.items.empty() && script.items.front().kind == Item::DESC;
    top.desc_valid = offer;
    if (offer) std::memcpy(top.desc_raw.data(), &script.items.front().desc, 32);
    top.ram_rd_data_valid = !reads.empty();
    if (!reads.empty()) top.ram_rd_data_data = reads.front();
    // A memory slower than the link: the receive path backs up behind it (stamps must not).
    if (script.ram_wr_gap) top.ram_wr_ready = cycle % (script.ram_wr_gap + 1) == 0;
    top.sys_clk = 0;
    top.eval();
    bool took = offer && top.desc_ready;
    bool read_taken = top.ram_rd_data_valid && top.ram_rd_data_ready;
    bool read_asked = top.ram_rd_addr_valid;
    uint32_t read_addr = top.ram_rd_addr_address;
    bool rec_taken = top.cpl_valid && top.cpl_ready;
    if (rec_taken) rec.push_back(top.cpl_data);
    bool rec_done = rec_taken && top.cpl_last;
#ifdef FISRIG_RUNNER_CAPTURE
    if (top.capture_keeping) {
      std::printf("cap ");
      constexpr int kWords = int(sizeof top.capture_kept.m_storage / sizeof top.capture_kept.m_storage[0]);
      for (int i = kWords - 1; i >= 0; --i) std::printf("%08x", top.capture_kept[i]);
      std::printf("\n");
    }
#endif
    if (top.ram_wr_valid && top.ram_wr_ready) {
      if (top.ram_wr_address < ram.size()) ram[top.ram_wr_address] = top.ram_wr_data;
      else ++ram_out_of_range;
    }
    fisrig::rtl::clock_device(dev, top, out, cycle >= script.trace_from && cycle < script.trace_to, cycle);
    top.sys_clk = 1;
    top.eval();
    if (took) {
      script.items.pop_front();
      ++submitted;
    }
    if (read_taken) reads.pop_front();
    if (read_asked) {
      if (read_addr < ram.size()) reads.push_back(ram[read_addr]);
      else {
        reads.push_back(0);
        ++ram_out_of_range;
      }
    }
    if (rec_done) {
      fisrig_cpl_record r;
      std::memcpy(&r, rec.data(), sizeof r);
      rec.clear();
      if (r.user_tag != FISRIG_USER_TAG_EVENT) ++completed;
      std::printf("rec ");
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&r);
      for (size_t i = 0; i < sizeof r; ++i) std::printf("%02x", b[i]);
      std::printf("\n");
    }
  }
  long long host_instructions = instructions.cpu_count();
  instructions.end();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  for (auto [at, n] : script.dumps) {
    std::printf("dump %u", at);
    for (uint32_t i = 0; i < n; ++i) std::printf(" %08x", at + i < ram.size() ? ram[at + i] : 0u);
    std::printf("\n");
  }
  std::printf("cycles %llu\nwall_s %.6f\nhost_instructions %lld\nram_out_of_range %llu\n",
              (unsigned long long)cycle, wall, host_instructions, (unsigned long long)ram_out_of_range);
  // The engine's counter against this loop's cycle (the counter starts after the reset):
  // the tick of traced cycle c is c + now_minus_cycle.
  std::printf("now_minus_cycle %lld\n", (long long)(top.now - cycle));
  // Frames whose wire-tap record was missing or another frame's (wire_tap.py): 0.
  std::printf("tap_mismatch %u\n", (unsigned)top.tap_mismatch);
  std::printf("current_lost %u\n", (unsigned)top.current_lost);
  fisrig_device_stats(dev, stdout);
  fisrig_device_free(dev);
  bool finished = script.items.empty() && completed == submitted;
  if (!finished) std::printf("stuck: %llu descriptors without a record after %llu cycles\n",
                             (unsigned long long)(submitted - completed), (unsigned long long)cycle);
  return finished ? 0 : 3;
}
