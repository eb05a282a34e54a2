// What both Verilator runners (rig_core_runner.cpp, litesata_host_runner.cpp) do first:
// their arguments (PROFILE FAULTS|- SCRIPT), their script read (a line an item, by the
// runner's own words), and the simulated drive's device side made; a runner given bad ones
// exits 2 having said why.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fisrig/device/device_c.h"

namespace fisrig::rtl {

// What every runner's script says besides its own items: how long to run, and which cycles
// to trace.
struct ScriptLimits {
  uint64_t max_cycles = 100'000'000;
  uint64_t trace_from = 0, trace_to = 0;
};

// Reads a script: `max_cycles N` and `trace FROM TO` into `limits`, and each other line's first word (blank lines and # comments skipped) and the rest
// of it go to item(word, fields, problem), which takes what it needs from fields and says
// false for a line it cannot read (problem: how, "cannot read" unless it says); nothing may
// follow an item. False with `why` (the file, line and problem) on the first bad line.
template <class Item>
bool read_script_lines(const char* path, std::string& why, ScriptLimits& limits, Item item) {
  std::ifstream in(path);
  if (!in) {
    why = std::string("cannot read ") + path;
    return false;
  }
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    std::istringstream fields(line);
    std::string word, rest;
    if (!(fields >> word) || word[0] == '#') continue;
    std::string problem = "cannot read";
    bool ok = word == "max_cycles" ? bool(fields >> limits.max_cycles)
              : word == "trace"    ? bool(fields >> limits.trace_from >> limits.trace_to)
                                     : item(word, fields, problem);
    if (ok && fields >> rest) ok = false;
    if (!ok) {
      why = std::string(path) + ":" + std::to_string(no) + ": " + problem + " '" + line + "'";
      return false;
    }
  }
  return true;
}

// n bytes from 2n hex digits (a descriptor's on a `desc` line); false if they are not that.
inline bool parse_hex_bytes(const std::string& hex, uint8_t* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned v;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    out[i] = uint8_t(v);
  }
  return true;
}

// The items both runners' scripts take for their RAM: `ram <word> <hex>...` (values from
// <word> on) and `dump <word> <n>` (n words printed at the end).
inline bool read_ram_item(std::istringstream& f, std::vector<std::pair<uint32_t, uint32_t>>& ram) {
  uint32_t at;
  std::string hex;
  bool ok = bool(f >> at);
  while (ok && f >> hex) ram.emplace_back(at++, uint32_t(std::stoul(hex, nullptr, 16)));
  return ok;
}
inline bool read_dump_item(std::istringstream& f, std::vector<std::pair<uint32_t, uint32_t>>& dumps) {
  uint32_t at, n;
  bool ok = bool(f >> at >> n);
  dumps.emplace_back(at, n);
  return ok;
}

// The device, or nullptr with the reason on stderr. read_script(path, script, why) -> bool.
template <class Script, class ReadScript>
void* start_runner(int argc, char** argv, Script& script, ReadScript read_script) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PROFILE FAULTS|- SCRIPT\n", argv[0]);
    return nullptr;
  }
  std::string why;
  if (!read_script(argv[3], script, why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return nullptr;
  }
  char err[256];
  void* dev = fisrig_device_new(argv[1], std::strcmp(argv[2], "-") ? argv[2] : nullptr, err, sizeof err);
  if (!dev) std::fprintf(stderr, "device: %s\n", err);
  return dev;
}

}  // namespace fisrig::rtl
