// Stock LiteSATA (core, crossbar, BIST generator / checker / IDENTIFY; the Verilated
// litesata_host.v of fisrig_bench.litesata_host) against the simulated drive's device side at
// the transceiver pins: an independent host for sim/device. This program plays the CPU that
// would pulse the BIST's controls: it waits for the link and the drive's signature FIS, then
// runs a script of operations one after another. Tests and scripts/bench_litesata_host.py
// drive it through fisrig_bench.litesata_host_sim.
//
//   Vlitesata_host PROFILE FAULTS SCRIPT       (FAULTS: "-" for none, else device_c.h's knobs)
//
// Script, one item per line, run in order:
//   identify                       IDENTIFY DEVICE (LiteSATA's identify unit)
//   write <lba> <count> [random]   one WRITE DMA EXT of <count> sectors (1..65535) from the
//                                  BIST generator: its dword counter, or its scrambler
//   read <lba> <count> [random]    one READ DMA EXT, checked by the BIST checker against the same
//   max_cycles <n>                 give up after n cycles (exit 3): a stuck host never hangs a test
//   trace <from> <to>              print the wire in cycles [from, to) (device_pins.h)
// Prints "link_up <cycle>" once the signature is in; per operation
//   "op <kind> <lba> <count> <random> start <cycle> done <cycle> cycles <n> errors <n> aborted <0|1>
//    status <n> error <n>"
// (start: the cycle whose rising edge takes the start pulse; done: the first cycle the unit is
// idle again; cycles: the top's own counter of that span; errors: the checker's mismatched
// dwords, 0 for writes; status, error: the last Register D2H's fields as LiteSATA's command
// layer kept them, so from an earlier command where this one ended without one (IDENTIFY's
// PIO protocol)); after an identify, "identify_words <256 hex words>"; then "cycles",
// "wall_s" and the device's counters. Exit 0, or 2 (bad arguments or script), or 3 (stuck).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "Vlitesata_host.h"
#include "device_pins.h"
#include "fisrig/device/device_c.h"
#include "runner_start.h"

namespace {

struct Op {
  enum Kind { IDENTIFY, WRITE, READ } kind;
  uint64_t lba = 0;
  uint32_t count = 0;
  bool random = false;
};

struct Script : fisrig::rtl::ScriptLimits {
  std::deque<Op> ops;
};

constexpr unsigned kIdentifyQuietCycles = 8;

const char* kind_name(Op::Kind k) { return k == Op::IDENTIFY ? "identify" : k == Op::WRITE ? "write" : "read"; }

bool read_script(const char* path, Script& s, std::string& why) {
  return fisrig::rtl::read_script_lines(path, why, s, [&s](const std::string& word, std::istringstream& f,
                                                        std::string& problem) {
    if (word == "identify") {
      s.ops.push_back(Op{Op::IDENTIFY});
      return true;
    }
    if (word == "write" || word == "read") {
      Op op{word == "write" ? Op::WRITE : Op::READ};
      std::string pattern;
      bool ok = bool(f >> op.lba >> op.count);
      if (ok && f >> pattern) {
        ok = pattern == "random";
        op.random = ok;
      }
      if (ok && (op.count < 1 || op.count > 65535 || op.lba >= (1ull << 48))) {
        ok = false;
        problem = "count must be 1..65535 and lba under 2^48 in";
      }
      s.ops.push_back(op);
      return ok;
    }
    return false;
  });
}

}  // namespace

int main(int argc, char** argv) {
  Script script;
  void* dev = fisrig::rtl::start_runner(argc, argv, script, read_script);
  if (!dev) return 2;

  Vlitesata_host top;
  top.sys_rst = 1;
  top.write_start = top.read_start = top.identify_start = 0;
  top.identify_ready = 1;  // the identify unit's FIFO is drained as it fills
  top.rx_idle = 1;
  fisrig_pins_out out{};
  out.rx_idle = 1;

  enum { RESET, LINKING, NEXT, RUNNING } state = RESET;
  Op op{};
  uint64_t cycle = 0, started = 0, done_at = 0;
  unsigned quiet = 0;
  std::vector<uint32_t> identify;  // dwords from the identify unit's FIFO
  auto wall0 = std::chrono::steady_clock::now();
  for (; cycle < script.max_cycles; ++cycle) {
    top.write_start = top.read_start = top.identify_start = 0;
    if (cycle == 10) {
      top.sys_rst = 0;
      state = LINKING;
    }
    top.sys_clk = 0;
    top.eval();
    // What the top shows after the falling edge is what the rising edge below acts on.
    if (top.identify_valid) identify.push_back(top.identify_data);
    if (state == LINKING && top.link_ready && top.rx_fises > 0) {
      std::printf("link_up %llu\n", (unsigned long long)cycle);
      state = NEXT;
    }
    if (state == RUNNING && cycle > started) {
      bool done = op.kind == Op::IDENTIFY ? top.identify_done : op.kind == Op::WRITE ? top.write_done : top.read_done;
      if (done && !done_at) done_at = cycle;
      // The identify unit is done when it has pushed the last dword into its FIFO, which
      // shows it a few cycles later: the words are in once the FIFO has stayed empty a while.
      quiet = top.identify_valid ? 0 : quiet + 1;
      if (done_at && (op.kind != Op::IDENTIFY || quiet >= kIdentifyQuietCycles)) {
        uint64_t finished = done_at;
        done_at = 0;
        unsigned aborted = op.kind == Op::WRITE ? top.write_aborted : op.kind == Op::READ ? top.read_aborted : 0;
        std::printf("op %s %llu %u %d start %llu done %llu cycles %u errors %u aborted %u status %u error %u\n",
                    kind_name(op.kind), (unsigned long long)op.lba, op.count, int(op.random),
                    (unsigned long long)started, (unsigned long long)finished, top.cycles,
                    op.kind == Op::READ ? top.read_errors : 0u, aborted, top.d2h_status, top.d2h_error);
        if (op.kind == Op::IDENTIFY) {
          std::printf("identify_words");
          for (uint32_t d : identify) std::printf(" %04x %04x", d & 0xFFFF, d >> 16);  // ATA words, LE
          std::printf("\n");
        }
        state = NEXT;
      }
    }
    if (state == NEXT) {
      if (script.ops.empty()) break;
      op = script.ops.front();
      script.ops.pop_front();
      top.sector = op.lba;
      top.count = op.count;
      top.random = op.random;
      (op.kind == Op::IDENTIFY ? top.identify_start : op.kind == Op::WRITE ? top.write_start : top.read_start) = 1;
      if (op.kind == Op::IDENTIFY) identify.clear();
      started = cycle;
      state = RUNNING;
      top.eval();  // the start pulse's own combinational effects before the edge
    }
    fisrig::rtl::clock_device(dev, top, out, cycle >= script.trace_from && cycle < script.trace_to, cycle);
    top.sys_clk = 1;
    top.eval();
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::printf("cycles %llu\nwall_s %.6f\n", (unsigned long long)cycle, wall);
  fisrig_device_stats(dev, stdout);
  fisrig_device_free(dev);
  if (state != NEXT) {
    std::printf("stuck: %s after %llu cycles\n",
                state == RUNNING ? kind_name(op.kind) : "no link and signature", (unsigned long long)cycle);
    return 3;
  }
  return 0;
}
