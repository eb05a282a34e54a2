// fisrig-drive: the simulated SSD on its own, without the rig.
//
//   fisrig-drive identify [--profile P]          IDENTIFY DEVICE as `hdparm --Istdin` reads it
//   fisrig-drive nvme-identify [--profile P]     the NVMe controller's Identify pages, in hex
//   fisrig-drive scenario [--profile P] [...]    torture / idle / TRIM recovery figures
//   fisrig-drive bench [--quick]                 the drive benchmarks, as JSON lines
//   fisrig-drive profiles                        the built-in profiles
//   fisrig-drive profile-keys                    every key a profile may set
//   fisrig-drive check-profile FILE              validate a profile
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <map>
#include <string>
#include <vector>

#include "bench.h"
#include "fisrig/nvme/controller.h"
#include "fisrig/sata/drive.h"
#include "scenarios.h"

using namespace fisrig;

namespace {

// Each subcommand: its usage line(s), the options that take a value, and the flags.
struct Subcommand {
  const char* name;
  const char* usage;
  std::vector<std::string> options;
  std::vector<std::string> flags;
};

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      {"identify", "fisrig-drive identify [--profile P] [--fault knob=value]...", {"profile", "fault"}, {}},
      {"nvme-identify", "fisrig-drive nvme-identify [--profile P] [--fault knob=value]...", {"profile", "fault"}, {}},
      {"scenario",
       "fisrig-drive scenario [--profile P] [--torture-min M] [--idle-min M]\n"
       "                             [--zones N] [--zone-mib M] [--fault knob=value]...",
       {"profile", "torture-min", "idle-min", "zones", "zone-mib", "fault"}, {}},
      {"bench", "fisrig-drive bench [--quick] [--only NAME]", {"only"}, {"quick"}},
      {"profiles", "fisrig-drive profiles", {}, {}},
      {"profile-keys", "fisrig-drive profile-keys", {}, {}},
      {"check-profile", "fisrig-drive check-profile FILE", {}, {}},
  };
  return all;
}

const Subcommand* find_subcommand(const std::string& name) {
  for (const Subcommand& s : subcommands())
    if (name == s.name) return &s;
  return nullptr;
}

void print_usage(std::FILE* to, const Subcommand* only) {
  bool first = true;
  for (const Subcommand& s : subcommands()) {
    if (only && only != &s) continue;
    std::fprintf(to, "%s%s\n", first ? "usage: " : "       ", s.usage);
    first = false;
  }
}

// Bad input: one line naming what is wrong, exit 2.
struct BadInput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

bool wants_help(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return true;
  return false;
}

// --key value options and --flag flags after the subcommand; repeated keys keep every value.
std::multimap<std::string, std::string> parse_options(int argc, char** argv, int first,
                                                      const Subcommand& sub) {
  std::multimap<std::string, std::string> o;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw BadInput(std::string(sub.name) + ": unexpected argument '" + a + "'");
    std::string key = a.substr(2);
    if (std::find(sub.flags.begin(), sub.flags.end(), key) != sub.flags.end()) {
      o.emplace(key, "1");
      continue;
    }
    if (std::find(sub.options.begin(), sub.options.end(), key) == sub.options.end())
      throw BadInput(std::string(sub.name) + ": unknown option " + a + " (--help lists them)");
    if (i + 1 >= argc) throw BadInput(std::string(sub.name) + ": option " + a + " needs a value");
    o.emplace(key, argv[++i]);
  }
  return o;
}

std::string get(const std::multimap<std::string, std::string>& o, const std::string& k,
                const std::string& fallback) {
  auto it = o.find(k);
  return it == o.end() ? fallback : it->second;
}

// A number option, or BadInput naming it.
double number(const std::multimap<std::string, std::string>& o, const std::string& k,
              const std::string& fallback, double lo) {
  std::string v = get(o, k, fallback);
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!used || used != v.size() || !(x >= lo))
    throw BadInput("--" + k + " " + v + ": expected a number >= " + std::to_string(int(lo)));
  return x;
}

drive::DriveConfig profile_with_faults(const std::multimap<std::string, std::string>& o) {
  drive::DriveConfig cfg = drive::load_profile(get(o, "profile", "consumer-256gb"));
  auto [a, b] = o.equal_range("fault");
  for (auto it = a; it != b; ++it) {
    size_t eq = it->second.find('=');
    if (eq == std::string::npos) throw BadInput("--fault " + it->second + ": expected knob=value");
    cfg.faults.set(it->second.substr(0, eq), it->second.substr(eq + 1));
  }
  return cfg;
}

int cmd_identify(const std::multimap<std::string, std::string>& o) {
  auto w = drive::Drive::new_drive_identify_words(profile_with_faults(o));
  for (int i = 0; i < 256; ++i) std::printf("%04x%c", w[i], i % 8 == 7 ? '\n' : ' ');
  return 0;
}

// Identify Controller and Namespace 1 of a new drive over NVMe (sim/nvme), from its profile
// (checked as a drive built from it is): two lines, "controller HEX" and "namespace HEX".
int cmd_nvme_identify(const std::multimap<std::string, std::string>& o) {
  drive::DriveConfig cfg = profile_with_faults(o);
  cfg.validate();
  for (auto [name, page] : {std::pair{"controller", nvme::Controller::identify_controller(cfg)},
                            std::pair{"namespace", nvme::Controller::identify_namespace(cfg.user_sectors, cfg.nvme.awupf)}}) {
    std::printf("%s ", name);
    for (uint8_t b : page) std::printf("%02x", b);
    std::printf("\n");
  }
  return 0;
}

void print_curve(const char* label, const tools::SweepResult& s) {
  std::printf("  %-16s avg %7.1f MB/s   min %7.1f   max %7.1f\n", label, s.avg_mbps, s.min_mbps,
              s.max_mbps);
}

int cmd_scenario(const std::multimap<std::string, std::string>& o) {
  drive::DriveConfig cfg = profile_with_faults(o);
  tools::RecoveryOptions r;
  r.torture_minutes = number(o, "torture-min", "20", 0);
  r.idle_minutes = number(o, "idle-min", "40", 0);
  r.sweep.zones = uint32_t(number(o, "zones", "256", 1));
  r.sweep.zone_bytes = uint64_t(number(o, "zone-mib", "32", 1) * (1 << 20));
  std::printf("drive: %s, %s, %.1f GB user, %.1f%% over-provisioning\n", cfg.name.c_str(),
              cfg.identity.model.c_str(), cfg.user_bytes() / 1e9, cfg.over_provisioning() * 100);
  std::printf("sweep: HD Tach-style, %u zones of %.0f MiB, 128 KiB writes at QD1, SATA Gen%u link\n",
              r.sweep.zones, r.sweep.zone_bytes / 1048576.0, cfg.interface.max_gen);
  std::printf("torture: %.0f simulated minutes of 4 KiB random writes at QD32 over 100%% of the LBA span\n",
              r.torture_minutes);
  std::fflush(stdout);
  drive::Drive d(cfg);
  tools::RecoveryFigures f = tools::torture_idle_trim(d, r);
  std::printf("torture: %llu writes, %.0f IOPS, write amplification %.2f\n",
              (unsigned long long)f.torture.commands, f.torture.iops(), f.write_amplification);
  std::printf("sequential write, simulated time:\n");
  print_curve("clean", f.clean);
  print_curve("tortured", f.tortured);
  char idle_label[32];
  std::snprintf(idle_label, sizeof idle_label, "idle %.0f min", r.idle_minutes);
  print_curve(idle_label, f.idle_recovered);
  print_curve("after TRIM", f.trimmed);
  std::printf("tortured = %.0f%% of clean, idle-recovered = %.0f%%, after TRIM = %.0f%%\n",
              100 * f.tortured.avg_mbps / f.clean.avg_mbps,
              100 * f.idle_recovered.avg_mbps / f.clean.avg_mbps,
              100 * f.trimmed.avg_mbps / f.clean.avg_mbps);
  return 0;
}

int cmd_profiles() {
  for (const std::string& n : drive::builtin_profile_names()) {
    drive::DriveConfig c = drive::load_profile(n);
    std::printf("%-18s %-34s %6.1f GB  OP %5.1f%%%s\n", n.c_str(), c.identity.model.c_str(),
                c.user_bytes() / 1e9, c.over_provisioning() * 100,
                c.controller.compression ? "  compressing" : "");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr, nullptr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout, nullptr);
    return 0;
  }
  const Subcommand* sub = find_subcommand(name);
  if (!sub) {
    std::fprintf(stderr, "fisrig-drive: unknown subcommand '%s' (fisrig-drive --help lists them)\n", name.c_str());
    return 2;
  }
  if (wants_help(argc, argv, 2)) {
    print_usage(stdout, sub);
    return 0;
  }
  try {
    if (name == "identify") return cmd_identify(parse_options(argc, argv, 2, *sub));
    if (name == "nvme-identify") return cmd_nvme_identify(parse_options(argc, argv, 2, *sub));
    if (name == "scenario") return cmd_scenario(parse_options(argc, argv, 2, *sub));
    if (name == "bench") {
      auto o = parse_options(argc, argv, 2, *sub);
      return tools::run_benchmarks(o.count("quick") > 0, get(o, "only", ""));
    }
    if (argc != (name == "check-profile" ? 3 : 2)) {
      print_usage(stderr, sub);
      return 2;
    }
    if (name == "profiles") return cmd_profiles();
    if (name == "profile-keys") {
      for (const std::string& k : drive::profile_key_names()) std::printf("%s\n", k.c_str());
      for (const std::string& k : drive::fault_knob_names()) std::printf("faults.%s\n", k.c_str());
      return 0;
    }
    drive::DriveConfig c = drive::load_profile_file(argv[2]);
    std::printf("%s: ok (%.1f GB, %.1f%% over-provisioning)\n", argv[2], c.user_bytes() / 1e9,
                c.over_provisioning() * 100);
    return 0;
  } catch (const drive::ProfileError& e) {
    std::fprintf(stderr, "fisrig-drive: bad profile: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // BadInput, and fault knobs refused by name
    std::fprintf(stderr, "fisrig-drive: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fisrig-drive: %s\n", e.what());
    return 1;
  }
}
