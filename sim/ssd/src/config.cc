// Profile loading (TOML), validation and fault-knob parsing.
//
// Every key a profile may carry is listed once in the table below, with where it goes
// and its unit; anything else is refused with its name and line.
#include "fisrig/ssd/config.h"
#include "fisrig/ssd/content.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#ifndef FISRIG_PROFILE_DIR
#define FISRIG_PROFILE_DIR "sim/ssd/profiles"
#endif

namespace fisrig::drive {

ProfileError::ProfileError(std::string source, std::string key, int64_t line, const std::string& why)
    : std::runtime_error(source + (line > 0 ? ":" + std::to_string(line) : "") + ": " +
                         (key.empty() ? "" : "'" + key + "': ") + why),
      key_(std::move(key)),
      line_(line),
      why_(why) {}

namespace {

struct Bad : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

double as_number(const toml::node& n) {
  if (auto v = n.value<double>()) return *v;
  throw Bad("expected a number");
}
uint64_t as_count(const toml::node& n) {
  if (auto v = n.value<int64_t>(); v && *v >= 0) return uint64_t(*v);
  if (auto d = n.value<double>(); d && *d >= 0 && std::floor(*d) == *d) return uint64_t(*d);
  throw Bad("expected a whole number >= 0");
}
uint32_t as_u32(const toml::node& n) {
  uint64_t v = as_count(n);
  if (v > 0xFFFFFFFFu) throw Bad("too large");
  return uint32_t(v);
}
bool as_bool(const toml::node& n) {
  if (auto v = n.value<bool>()) return *v;
  throw Bad("expected true or false");
}
std::string as_string(const toml::node& n) {
  if (auto v = n.value<std::string>()) return *v;
  throw Bad("expected a string");
}
SimTime as_time(const toml::node& n, double ns_per_unit) {
  double v = as_number(n);
  if (v < 0) throw Bad("expected a time >= 0");
  return SimTime(std::llround(v * ns_per_unit));
}
std::vector<LbaRange> as_ranges(const toml::node& n) {
  const toml::array* a = n.as_array();
  if (!a) throw Bad("expected a list of [first_lba, count] pairs");
  std::vector<LbaRange> out;
  for (const toml::node& e : *a) {
    const toml::array* pair = e.as_array();
    if (!pair || pair->size() != 2) throw Bad("expected a list of [first_lba, count] pairs");
    out.push_back({as_count(*pair->get(0)), as_count(*pair->get(1))});
  }
  return out;
}

// A list of times in microseconds, one per page type (lower page first), as nanoseconds.
std::vector<SimTime> as_times(const toml::node& n) {
  const toml::array* a = n.as_array();
  if (!a || a->empty() || a->size() > 4)
    throw Bad("expected a list of 1 to 4 times in microseconds, one per page type, lower page first");
  std::vector<SimTime> out;
  for (const toml::node& e : *a) {
    SimTime t = as_time(e, 1e3);
    if (!t) throw Bad("a page type's time must be > 0");
    out.push_back(t);
  }
  return out;
}

// A percentage, or a list of 1 to 4 of them (one per page type, lower page first).
std::vector<double> as_pcts(const toml::node& n) {
  if (!n.is_array()) return {as_number(n)};
  const toml::array& a = *n.as_array();
  if (a.empty() || a.size() > 4) throw Bad("expected a percentage, or a list of 1 to 4 (one per page type)");
  std::vector<double> out;
  for (const toml::node& e : a) out.push_back(as_number(e));
  return out;
}

// A list of rail names ("3v3", "5v", "12v") as PowerConfig::rails' bits.
uint32_t as_rails(const toml::node& n) {
  static const std::pair<const char*, uint32_t> names[] = {{"3v3", 0x1}, {"5v", 0x2}, {"12v", 0x4}};
  const toml::array* a = n.as_array();
  if (!a || a->empty()) throw Bad("expected a list of rails, of \"3v3\", \"5v\", \"12v\"");
  uint32_t bits = 0;
  for (const toml::node& e : *a) {
    std::string name = as_string(e);
    uint32_t bit = 0;
    for (auto [k, v] : names)
      if (name == k) bit = v;
    if (!bit) throw Bad("unknown rail '" + name + "': expected \"3v3\", \"5v\" or \"12v\"");
    bits |= bit;
  }
  return bits;
}

using Setter = std::function<void(DriveConfig&, const toml::node&)>;

const std::map<std::string, Setter>& profile_keys() {
  static const std::map<std::string, Setter> keys = {
      {"name", [](DriveConfig& c, const toml::node& n) { c.name = as_string(n); }},
      {"identity.model", [](DriveConfig& c, const toml::node& n) { c.identity.model = as_string(n); }},
      {"identity.serial", [](DriveConfig& c, const toml::node& n) { c.identity.serial = as_string(n); }},
      {"identity.firmware", [](DriveConfig& c, const toml::node& n) { c.identity.firmware = as_string(n); }},
      {"identity.dsm_max_blocks", [](DriveConfig& c, const toml::node& n) { c.identity.dsm_max_blocks = as_u32(n); }},
      {"identity.security_erase_minutes", [](DriveConfig& c, const toml::node& n) { c.identity.security_erase_minutes = as_u32(n); }},
      {"capacity.user_sectors", [](DriveConfig& c, const toml::node& n) { c.user_sectors = as_count(n); }},
      {"capacity.user_gb", [](DriveConfig& c, const toml::node& n) {
         double gb = as_number(n);
         if (gb <= 0) throw Bad("expected a size > 0");
         // IDEMA LBA count for a decimal-GB capacity, as drive makers size their drives.
         c.user_sectors = uint64_t(97696368 + 1953504 * (gb - 50));
         if (gb < 50) c.user_sectors = uint64_t(gb * 1e9 / 512) / 8 * 8;
       }},
      {"capacity.op_pct", [](DriveConfig& c, const toml::node& n) {
         double pct = as_number(n);
         if (!(pct > 0) || pct > 1000) throw Bad("expected a spare of more than 0% and at most 1000% of the user capacity");
         c.op_pct = pct;
       }},
      {"nand.channels", [](DriveConfig& c, const toml::node& n) { c.nand.channels = as_u32(n); }},
      {"nand.dies_per_channel", [](DriveConfig& c, const toml::node& n) { c.nand.dies_per_channel = as_u32(n); }},
      {"nand.planes_per_die", [](DriveConfig& c, const toml::node& n) { c.nand.planes_per_die = as_u32(n); }},
      {"nand.blocks_per_plane", [](DriveConfig& c, const toml::node& n) { c.nand.blocks_per_plane = as_u32(n); }},
      {"nand.pages_per_block", [](DriveConfig& c, const toml::node& n) { c.nand.pages_per_block = as_u32(n); }},
      {"nand.page_bytes", [](DriveConfig& c, const toml::node& n) { c.nand.page_bytes = as_u32(n); }},
      {"nand.rated_pe_cycles", [](DriveConfig& c, const toml::node& n) { c.nand.rated_pe_cycles = as_u32(n); }},
      {"nand.read_us", [](DriveConfig& c, const toml::node& n) { c.timing.read_ns = as_time(n, 1e3); }},
      {"nand.program_us", [](DriveConfig& c, const toml::node& n) { c.timing.program_ns = as_time(n, 1e3); }},
      {"nand.erase_us", [](DriveConfig& c, const toml::node& n) { c.timing.erase_ns = as_time(n, 1e3); }},
      {"nand.channel_mbps", [](DriveConfig& c, const toml::node& n) { c.timing.channel_mbps = as_number(n); }},
      {"nand.bits_per_cell", [](DriveConfig& c, const toml::node& n) { c.timing.bits_per_cell = as_u32(n); }},
      {"nand.page_read_us", [](DriveConfig& c, const toml::node& n) { c.timing.page_read_ns = as_times(n); }},
      {"nand.page_program_us", [](DriveConfig& c, const toml::node& n) { c.timing.page_program_ns = as_times(n); }},
      {"nand.spread_pct", [](DriveConfig& c, const toml::node& n) { c.timing.spread_pct = as_number(n); }},
      {"nand.block_spread_pct", [](DriveConfig& c, const toml::node& n) { c.timing.block_spread_pct = as_pcts(n); }},
      {"nand.erase_spread_pct", [](DriveConfig& c, const toml::node& n) { c.timing.erase_spread_pct = as_number(n); }},
      {"nand.read_retry_pct", [](DriveConfig& c, const toml::node& n) { c.timing.read_retry_pct = as_number(n); }},
      {"nand.read_retry_us", [](DriveConfig& c, const toml::node& n) { c.timing.read_retry_ns = as_time(n, 1e3); }},
      {"controller.command_overhead_us", [](DriveConfig& c, const toml::node& n) { c.controller.command_overhead_ns = as_time(n, 1e3); }},
      {"controller.page_read_overhead_us", [](DriveConfig& c, const toml::node& n) { c.controller.page_read_overhead_ns = as_time(n, 1e3); }},
      {"controller.trim_range_us", [](DriveConfig& c, const toml::node& n) { c.controller.trim_range_ns = as_time(n, 1e3); }},
      {"controller.compression", [](DriveConfig& c, const toml::node& n) { c.controller.compression = as_bool(n); }},
      {"controller.compression_slot_bytes", [](DriveConfig& c, const toml::node& n) { c.controller.compression_slot_bytes = as_u32(n); }},
      {"controller.trim_keeps_mapped_pct", [](DriveConfig& c, const toml::node& n) { c.controller.trim_keeps_mapped_pct = as_number(n); }},
      {"cache.enabled", [](DriveConfig& c, const toml::node& n) { c.cache.enabled = as_bool(n); }},
      {"cache.mib", [](DriveConfig& c, const toml::node& n) { c.cache.bytes = uint64_t(as_number(n) * 1048576.0); }},
      {"cache.slc_gb", [](DriveConfig& c, const toml::node& n) { c.cache.slc_gb = as_number(n); }},
      {"nand.slc_program_us", [](DriveConfig& c, const toml::node& n) { c.timing.slc_program_ns = as_time(n, 1e3); }},
      {"cache.flush_honest", [](DriveConfig& c, const toml::node& n) { c.cache.flush_honest = as_bool(n); }},
      {"cache.idle_flush_ms", [](DriveConfig& c, const toml::node& n) { c.cache.idle_flush_ns = as_time(n, 1e6); }},
      {"gc.foreground_free_superblocks", [](DriveConfig& c, const toml::node& n) { c.gc.foreground_free_superblocks = as_u32(n); }},
      {"gc.background_target_free_pct", [](DriveConfig& c, const toml::node& n) { c.gc.background_target_free_pct = as_number(n); }},
      {"gc.background_idle_ms", [](DriveConfig& c, const toml::node& n) { c.gc.background_idle_ns = as_time(n, 1e6); }},
      {"gc.background_max_valid_pct", [](DriveConfig& c, const toml::node& n) { c.gc.background_max_valid_pct = as_number(n); }},
      {"gc.serial_erase", [](DriveConfig& c, const toml::node& n) { c.gc.serial_erase = as_bool(n); }},
      {"interface.max_gen", [](DriveConfig& c, const toml::node& n) { c.interface.max_gen = as_u32(n); }},
      {"nvme.pcie_gen", [](DriveConfig& c, const toml::node& n) { c.nvme.pcie_gen = as_u32(n); }},
      {"nvme.pcie_lanes", [](DriveConfig& c, const toml::node& n) { c.nvme.pcie_lanes = as_u32(n); }},
      {"nvme.host_read_ns", [](DriveConfig& c, const toml::node& n) { c.nvme.host_read_ns = as_u32(n); }},
      {"nvme.max_payload", [](DriveConfig& c, const toml::node& n) { c.nvme.max_payload = as_u32(n); }},
      {"nvme.max_read_request", [](DriveConfig& c, const toml::node& n) { c.nvme.max_read_request = as_u32(n); }},
      {"nvme.io_queue_pairs", [](DriveConfig& c, const toml::node& n) { c.nvme.io_queue_pairs = as_u32(n); }},
      {"nvme.max_queue_entries", [](DriveConfig& c, const toml::node& n) { c.nvme.max_queue_entries = as_u32(n); }},
      {"nvme.mdts", [](DriveConfig& c, const toml::node& n) { c.nvme.mdts = as_u32(n); }},
      {"nvme.awupf", [](DriveConfig& c, const toml::node& n) { c.nvme.awupf = as_u32(n); }},
      {"power.boot_ms", [](DriveConfig& c, const toml::node& n) { c.power.boot_ns = as_time(n, 1e6); }},
      {"power.rails", [](DriveConfig& c, const toml::node& n) { c.power.rails = as_rails(n); }},
      {"power.torn_reads_unc", [](DriveConfig& c, const toml::node& n) { c.power.torn_reads_unc = as_bool(n); }},
      {"power.reorders", [](DriveConfig& c, const toml::node& n) { c.power.reorders = as_bool(n); }},
      {"power.misdirected_pages", [](DriveConfig& c, const toml::node& n) { c.power.misdirected_pages = as_u32(n); }},
      {"power.loses_map_segment", [](DriveConfig& c, const toml::node& n) { c.power.loses_map_segment = as_bool(n); }},
      {"power.bit_errors_ms", [](DriveConfig& c, const toml::node& n) { c.power.bit_errors_ns = as_time(n, 1e6); }},
      {"power.plp", [](DriveConfig& c, const toml::node& n) { c.power.plp = as_bool(n); }},
      {"power.dies_after_cycles", [](DriveConfig& c, const toml::node& n) { c.power.dies_after_cycles = as_u32(n); }},
      {"power.shrinks_to_8mib_after_cycles", [](DriveConfig& c, const toml::node& n) { c.power.shrinks_to_8mib_after_cycles = as_u32(n); }},
      {"power.idle_ma", [](DriveConfig& c, const toml::node& n) { c.power.idle_ma = as_number(n); }},
      {"power.read_ma", [](DriveConfig& c, const toml::node& n) { c.power.read_ma = as_number(n); }},
      {"power.program_ma", [](DriveConfig& c, const toml::node& n) { c.power.program_ma = as_number(n); }},
      {"power.erase_ma", [](DriveConfig& c, const toml::node& n) { c.power.erase_ma = as_number(n); }},
      {"power.gc_ma", [](DriveConfig& c, const toml::node& n) { c.power.gc_ma = as_number(n); }},
  };
  return keys;
}

int64_t line_of(const toml::node& n) { return int64_t(n.source().begin.line); }

// interface.max_gen's name until it said which speed it is (the fastest, not the one
// negotiated): profiles written then still load.
constexpr const char* kOldMaxGenKey = "interface.gen";

void walk(DriveConfig& cfg, const toml::table& t, const std::string& prefix, const std::string& src) {
  for (auto&& [k, node] : t) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (key == "base") continue;  // parse_profile loaded it first
    if (key == kOldMaxGenKey) key = "interface.max_gen";
    if (key.rfind("faults.", 0) == 0) {
      std::string knob = key.substr(7);
      try {
        if (node.is_array() && (knob == "unc" || knob == "idnf")) {
          (knob == "unc" ? cfg.faults.unc : cfg.faults.idnf) = as_ranges(node);
        } else if (auto s = node.value<std::string>()) {
          cfg.faults.set(knob, *s);
        } else if (auto d = node.value<double>()) {
          std::ostringstream o;
          o.precision(17);
          o << *d;
          cfg.faults.set(knob, o.str());
        } else {
          throw Bad("expected a number");
        }
      } catch (const std::invalid_argument& e) {
        throw ProfileError(src, key, line_of(node), e.what());
      }
      continue;
    }
    if (const toml::table* sub = node.as_table()) {
      walk(cfg, *sub, key, src);
      continue;
    }
    auto it = profile_keys().find(key);
    if (it == profile_keys().end()) throw ProfileError(src, key, line_of(node), "unknown key");
    try {
      it->second(cfg, node);
    } catch (const Bad& e) {
      throw ProfileError(src, key, line_of(node), e.what());
    }
  }
}

}  // namespace

void FaultKnobs::set(const std::string& name, const std::string& value) {
  auto num = [&](double lo, double hi) {
    size_t used = 0;
    double v;
    try {
      v = std::stod(value, &used);
    } catch (...) {
      throw std::invalid_argument("fault knob '" + name + "': '" + value + "' is not a number");
    }
    if (used != value.size() || v < lo || v > hi)
      throw std::invalid_argument("fault knob '" + name + "': " + value + " is outside [" +
                                  std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  };
  auto ranges = [&]() {
    // "first+count,first+count"
    std::vector<LbaRange> out;
    std::stringstream ss(value);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t plus = item.find('+');
      try {
        if (plus == std::string::npos) throw std::invalid_argument("");
        out.push_back({std::stoull(item.substr(0, plus)), std::stoull(item.substr(plus + 1))});
      } catch (...) {
        throw std::invalid_argument("fault knob '" + name + "': '" + item +
                                    "' is not first_lba+count");
      }
    }
    return out;
  };
  if (name == "data_fis_crc_error_rate") data_fis_crc_error_rate = num(0, 1);
  else if (name == "r_err_rate") r_err_rate = num(0, 1);
  else if (name == "hold_storm_rate") hold_storm_rate = num(0, 1);
  else if (name == "hold_storm_us") hold_storm_ns = SimTime(num(0, 1e9) * 1e3);
  else if (name == "busy_rate") busy_rate = num(0, 1);
  else if (name == "busy_us") busy_ns = SimTime(num(0, 1e9) * 1e3);
  else if (name == "latency_outlier_rate") latency_outlier_rate = num(0, 1);
  else if (name == "latency_outlier_us") latency_outlier_ns = SimTime(num(0, 1e9) * 1e3);
  else if (name == "hang_after_commands") hang_after_commands = uint64_t(num(0, 1e18));
  else if (name == "link_drop_after_commands") link_drop_after_commands = uint64_t(num(0, 1e18));
  else if (name == "seed") seed = uint64_t(num(0, 1.8e19));
  else if (name == "boot_us") boot_ns = SimTime(num(0, 1e9) * 1e3);
  else if (name == "unc") unc = ranges();
  else if (name == "idnf") idnf = ranges();
  else throw std::invalid_argument("unknown fault knob '" + name + "'");
}

void DriveConfig::validate() const {
  auto bad = [&](const std::string& key, const std::string& why) {
    throw ProfileError(name, key, 0, why);
  };
  const NandGeometry& g = nand;
  if (!g.channels) bad("nand.channels", "must be at least 1");
  if (!g.dies_per_channel) bad("nand.dies_per_channel", "must be at least 1");
  if (!g.planes_per_die) bad("nand.planes_per_die", "must be at least 1");
  if (!g.pages_per_block) bad("nand.pages_per_block", "must be at least 1");
  if (!g.page_bytes || g.page_bytes % 4096) bad("nand.page_bytes", "must be a multiple of 4096");
  if (controller.compression) {
    uint32_t s = controller.compression_slot_bytes;
    if (!s || 4096 % s || s < 512)
      bad("controller.compression_slot_bytes", "must divide 4096 and be at least 512");
  }
  if (!user_sectors) bad("capacity.user_gb", "the drive has no capacity");
  if (user_sectors > (uint64_t{1} << 48)) bad("capacity.user_sectors", "beyond 48-bit LBA");
  if (g.raw_bytes() <= user_bytes())
    bad("nand.blocks_per_plane", "raw NAND (" + std::to_string(g.raw_bytes()) +
                                     " bytes) must exceed user capacity (" +
                                     std::to_string(user_bytes()) + " bytes)");
  uint64_t slot = controller.compression ? controller.compression_slot_bytes : 4096;
  uint64_t sb_slots = uint64_t(g.dies()) * g.planes_per_die * g.pages_per_block * g.page_bytes / slot;
  if (sb_slots * g.blocks_per_plane >= 0xFFFFFFFFull)
    bad("nand.blocks_per_plane", "more physical slots than the FTL can address (2^32)");
  // The spare must hold the GC floor plus the two open superblocks.
  uint64_t spare_sbs = (g.raw_bytes() - user_bytes()) / (sb_slots * slot);
  if (spare_sbs < gc.foreground_free_superblocks + 2)
    bad("nand.blocks_per_plane", "over-provisioning is smaller than the GC reserve (" +
                                     std::to_string(spare_sbs) + " spare superblocks)");
  if (controller.trim_keeps_mapped_pct < 0 || controller.trim_keeps_mapped_pct > 100)
    bad("controller.trim_keeps_mapped_pct", "must be 0..100");
  if (gc.foreground_free_superblocks < 2) bad("gc.foreground_free_superblocks", "must be at least 2");
  if (timing.channel_mbps <= 0) bad("nand.channel_mbps", "must be > 0");
  const NandTiming& nt = timing;
  if (nt.bits_per_cell < 1 || nt.bits_per_cell > 4) bad("nand.bits_per_cell", "must be 1 to 4");
  for (auto [key, list] : {std::pair{"nand.page_read_us", &nt.page_read_ns}, {"nand.page_program_us", &nt.page_program_ns}})
    if (!list->empty() && list->size() != nt.bits_per_cell)
      bad(key, "gives " + std::to_string(list->size()) + " page types' times; nand.bits_per_cell is " +
                   std::to_string(nt.bits_per_cell) + " (one time per page type, lower page first)");
  if (nt.spread_pct < 0 || nt.spread_pct >= 100) bad("nand.spread_pct", "must be 0 or more and below 100");
  if (nt.block_spread_pct.size() > 1 && nt.block_spread_pct.size() != nt.bits_per_cell)
    bad("nand.block_spread_pct", "gives " + std::to_string(nt.block_spread_pct.size()) +
                                     " page types' spreads; nand.bits_per_cell is " + std::to_string(nt.bits_per_cell) +
                                     " (one value, or one per page type, lower page first)");
  for (double v : nt.block_spread_pct)
    if (v < 0 || v >= 100) bad("nand.block_spread_pct", "each must be 0 or more and below 100");
  if (nt.erase_spread_pct < 0 || nt.erase_spread_pct >= 100) bad("nand.erase_spread_pct", "must be 0 or more and below 100");
  if (nt.read_retry_pct < 0 || nt.read_retry_pct > 100) bad("nand.read_retry_pct", "must be 0..100");
  if (interface.max_gen < 1 || interface.max_gen > 3) bad("interface.max_gen", "must be 1, 2 or 3");
  auto pow2 = [](uint32_t v, uint32_t lo, uint32_t hi) { return v >= lo && v <= hi && (v & (v - 1)) == 0; };
  if (nvme.pcie_gen < 1 || nvme.pcie_gen > 5) bad("nvme.pcie_gen", "must be 1..5");
  if (!pow2(nvme.pcie_lanes, 1, 16)) bad("nvme.pcie_lanes", "must be 1, 2, 4, 8 or 16");
  if (!pow2(nvme.max_payload, 128, 4096)) bad("nvme.max_payload", "must be a power of 2 from 128 to 4096");
  if (!pow2(nvme.max_read_request, 128, 4096)) bad("nvme.max_read_request", "must be a power of 2 from 128 to 4096");
  if (nvme.io_queue_pairs < 1 || nvme.io_queue_pairs > 65535) bad("nvme.io_queue_pairs", "must be 1..65535");
  if (nvme.max_queue_entries < 2 || nvme.max_queue_entries > 65536) bad("nvme.max_queue_entries", "must be 2..65536");
  if (nvme.mdts < 1 || nvme.mdts > 10) bad("nvme.mdts", "must be 1..10 (2^mdts pages of 4 KiB)");
  if (nvme.awupf > 0 && !power.plp) bad("nvme.awupf", "more than one block atomic through a cut takes power.plp = true");
  if (uint64_t(nvme.awupf) + 1 > (uint64_t(4096) << nvme.mdts) / kSectorBytes)
    bad("nvme.awupf", "must be under the largest transfer (mdts)");
  if (!nand.rated_pe_cycles) bad("nand.rated_pe_cycles", "must be at least 1");
  if (cache.bytes < 65536) bad("cache.mib", "must be at least 64 KiB");
  if (cache.slc_gb < 0 || cache.slc_gb * 1e9 > double(user_bytes())) bad("cache.slc_gb", "must be 0 or more and at most the user capacity");
  if (cache.slc_gb > 0 && timing.bits_per_cell < 2) bad("cache.slc_gb", "an SLC cache needs cells of 2 bits or more (nand.bits_per_cell)");
  if (identity.dsm_max_blocks < 1 || identity.dsm_max_blocks > 0xFFFF)
    bad("identity.dsm_max_blocks", "must be 1..65535");
  if (identity.model.size() > 40) bad("identity.model", "longer than 40 characters");
  if (identity.serial.size() > 20) bad("identity.serial", "longer than 20 characters");
  if (identity.firmware.size() > 8) bad("identity.firmware", "longer than 8 characters");
}

namespace {

// How deep bases may stack (a sweep's point profile on a power-loss profile on the tiny
// drive is three): deeper is a loop or a mistake.
constexpr int kMaxBaseDepth = 4;

toml::table parse_text(const std::string& text, const std::string& source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ProfileError(source, "", int64_t(e.source().begin.line), std::string(e.description()));
  }
}

// `base = "tiny-1gb"` (a built-in profile) or `base = "drives/mine.toml"` (a profile file,
// relative to the profile that names it): loaded into cfg, its own base first.
void apply_base(DriveConfig& cfg, const toml::table& t, const std::string& source, int depth) {
  auto base = t["base"];
  if (!base) return;
  auto name = base.value<std::string>();
  int64_t line = line_of(*base.node());
  if (!name || name->empty()) throw ProfileError(source, "base", line, "expected a built-in profile's name or a profile file");
  if (depth >= kMaxBaseDepth)
    throw ProfileError(source, "base", line, "bases stack more than " + std::to_string(kMaxBaseDepth) + " deep");
  bool file = name->find('/') != std::string::npos || name->size() > 5 && name->substr(name->size() - 5) == ".toml";
  std::filesystem::path path = file ? std::filesystem::path(source).parent_path() / *name
                                    : std::filesystem::path(FISRIG_PROFILE_DIR) / (*name + ".toml");
  if (file && std::filesystem::path(*name).is_absolute()) path = *name;
  std::ifstream f(path);
  if (!f) throw ProfileError(source, "base", line, file ? "no profile file " + path.string() : "no built-in profile '" + *name + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  toml::table bt;
  try {
    bt = toml::parse(ss.str(), path.string());
  } catch (const toml::parse_error& e) {
    throw ProfileError(source, "base", line, "its base does not parse");
  }
  apply_base(cfg, bt, path.string(), depth + 1);
  walk(cfg, bt, "", path.string());
}

}  // namespace

DriveConfig parse_profile(const std::string& text, const std::string& source) {
  toml::table t = parse_text(text, source);
  DriveConfig cfg;
  // A profile may start from another (the power-loss profiles are the tiny drive with one
  // behaviour each; a sweep's point is its profile with a key or two changed).
  apply_base(cfg, t, source, 0);
  cfg.name = std::filesystem::path(source).stem().string();
  walk(cfg, t, "", source);
  // The user capacity that leaves op_pct spare, in whole 4 KiB pages (it wins over a
  // capacity.user_gb of the same profile or its base: a sweep over it keeps the NAND).
  if (cfg.op_pct >= 0) cfg.user_sectors = uint64_t(double(cfg.nand.raw_bytes()) / (1 + cfg.op_pct / 100) / 4096) * 8;
  try {
    cfg.validate();
  } catch (const ProfileError& e) {
    // Point at the line of the key that is wrong, if the file set it.
    int64_t line = 0;
    if (auto n = t.at_path(e.key())) line = line_of(*n.node());
    else if (e.key() == "interface.max_gen" && t.at_path(kOldMaxGenKey))
      line = line_of(*t.at_path(kOldMaxGenKey).node());
    throw ProfileError(source, e.key(), line, e.why());
  }
  return cfg;
}

DriveConfig scale_capacity(DriveConfig c, double user_gb) {
  double full_gb = c.user_bytes() / 1e9;
  c.nand.pages_per_block = std::max<uint32_t>(1, c.nand.pages_per_block / 4);
  c.nand.blocks_per_plane = uint32_t(std::ceil(c.nand.blocks_per_plane * 4 * user_gb / full_gb));
  c.user_sectors = uint64_t(user_gb * 1e9 / 512) / 8 * 8;
  c.cache.slc_gb *= user_gb / full_gb;  // the SLC cache keeps its share of the capacity
  c.validate();
  return c;
}

DriveConfig load_profile_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw ProfileError(path, "", 0, "cannot open the profile");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_profile(ss.str(), path);
}

std::vector<std::string> profile_key_names() {
  std::vector<std::string> names;
  for (const auto& [k, setter] : profile_keys()) names.push_back(k);
  return names;
}

std::vector<std::string> fault_knob_names() {
  return {"data_fis_crc_error_rate", "r_err_rate", "hold_storm_rate", "hold_storm_us",
          "busy_rate", "busy_us", "latency_outlier_rate", "latency_outlier_us",
          "hang_after_commands", "link_drop_after_commands", "seed", "unc", "idnf", "boot_us"};
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(FISRIG_PROFILE_DIR, ec))
    if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

DriveConfig load_profile(const std::string& name_or_path) {
  if (name_or_path.find('/') == std::string::npos && name_or_path.find(".toml") == std::string::npos)
    return load_profile_file(std::string(FISRIG_PROFILE_DIR) + "/" + name_or_path + ".toml");
  return load_profile_file(name_or_path);
}

}  // namespace fisrig::drive
