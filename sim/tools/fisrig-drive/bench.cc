#include "bench.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <vector>
#include <algorithm>

#include "../../bench/instruction_count.h"
#include "scenarios.h"

namespace fisrig::tools {

namespace {

using bench::emit;

void progress(const char* msg) {
  std::fprintf(stderr, "bench: %s\n", msg);
  std::fflush(stderr);
}

drive::DriveConfig scaled_consumer(double gb) {
  return drive::scale_capacity(drive::load_profile("consumer-256gb"), gb);
}

void bench_cmdapi(bool quick) {
  drive::DriveConfig cfg = scaled_consumer(quick ? 2 : 32);
  drive::Drive d(cfg);
  HostDriver h(d);
  uint32_t word = 0;
  progress("cmdapi: filling the drive");
  fill(h, 100, word);
  std::mt19937_64 rng(7);
  const uint64_t pages = d.user_sectors() / 8;
  std::uniform_int_distribution<uint64_t> pick(0, pages - 1);
  // Five timed segments; the median is reported, as wall-clock figures on a shared
  // machine vary by tens of percent from run to run (memory and TLB behaviour).
  const uint64_t n = quick ? 100000 : 1000000;
  std::vector<double> rates;
  // Machines here page cold memory out behind a process's back (DAMON), and re-faulting
  // the drive's tables is then much of the measurement: keep them resident while timing
  // (locked only now, so that they stay on the huge pages they were built on).
  bool locked = mlockall(MCL_CURRENT) == 0;
  progress("cmdapi: 4 KiB random writes at QD32");
  for (int seg = 0; seg < 5; ++seg) {
    uint64_t issued = 0;
    auto t0 = std::chrono::steady_clock::now();
    h.run(32, [&](AtaCommand& c) {
      if (issued++ == n) return false;
      c = HostDriver::write(pick(rng) * 8, 8, true, uint32_t(issued), 100);
      return true;
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(double(n) / s);
    std::fprintf(stderr, "bench: cmdapi segment %d: %.3g commands/s (write amplification so far %.2f)\n", seg,
                 double(n) / s, d.ssd().ftl().counters().write_amplification());
  }
  std::sort(rates.begin(), rates.end());
  char what[200];
  std::snprintf(what, sizeof what,
                "4 KiB random NCQ writes at QD32 on a full %.0f GB consumer drive through the "
                "transaction API (submit + completion), wall clock, one core, median of 5 x 1M",
                cfg.user_bytes() / 1e9);
  emit("drive.cmdapi_cmds_per_s", rates[2], "commands/s", std::string(what) + (locked ? ", memory locked" : ""));
  if (locked) munlockall();
}

// The deterministic companion of drive.cmdapi_cmds_per_s: instructions retired per command
// of the same workload on a reduced, fixed run (a 2 GB drive, filled, 100k random writes
// to bring garbage collection in, then 200k counted: 0.2 to 0.6 drive writes, as the full
// run's segments are on 32 GB). The goal is the count that runs at 3 M/s on the developer's
// machine: the code that ran there at 3.4 M/s counts 4,969 here (callgrind), so at the same
// instructions a second 3 M/s allows 4,969 x 3.4 / 3 = 5,631 (1.80 to 2.05 M/s on the
// project's quiet shared machine). A change that raises the count slows the rate on every
// machine, whatever its load.
constexpr uint64_t kCmdapiWarmup = 100000, kCmdapiCounted = 200000;
constexpr double kCmdapiInstructionsGoal = 5631;

void bench_cmdapi_instructions() {
  std::string counter;
  long long n = bench::count_instructions(
      [](bench::Region& region) {
        drive::Drive d(scaled_consumer(2));
        HostDriver h(d);
        uint32_t word = 0;
        fill(h, 100, word);
        std::mt19937_64 rng(7);
        std::uniform_int_distribution<uint64_t> pick(0, d.user_sectors() / 8 - 1);
        auto writes = [&](uint64_t n) {
          uint64_t issued = 0;
          h.run(32, [&](AtaCommand& c) {
            if (issued++ == n) return false;
            c = HostDriver::write(pick(rng) * 8, 8, true, uint32_t(issued), 100);
            return true;
          });
        };
        writes(kCmdapiWarmup);
        region.begin();
        writes(kCmdapiCounted);
        region.end();
      },
      {"/proc/self/exe", "bench", "--only", "drive.cmdapi_instructions_per_cmd"}, counter);
  if (n <= 0) return;
  bench::emit_instructions_per_command("drive.cmdapi_instructions_per_cmd", n, kCmdapiWarmup, kCmdapiCounted,
                                       "drive.cmdapi_cmds_per_s (4 KiB random NCQ writes at QD32 through the "
                                       "transaction API)", counter, kCmdapiInstructionsGoal);
}

// Steady-state write amplification of uniform random 4 KiB writes, greedy GC.
void bench_wa(bool quick, double op_pct) {
  drive::DriveConfig c = drive::load_profile("consumer-256gb");
  c.nand.channels = 4;
  c.nand.dies_per_channel = 2;
  c.nand.pages_per_block = 64;
  c.nand.blocks_per_plane = quick ? 128 : 512;
  c.user_sectors = uint64_t(double(c.nand.raw_bytes()) / (1 + op_pct / 100) / 512) / 8 * 8;
  c.cache.bytes = 4 << 20;
  drive::Drive d(c);
  HostDriver h(d);
  uint32_t word = 0;
  fill(h, 100, word);
  std::mt19937_64 rng(11);
  const uint64_t pages = d.user_sectors() / 8;
  std::uniform_int_distribution<uint64_t> pick(0, pages - 1);
  double prev = 0, wa = 0;
  int windows = 0;
  // One window = one user capacity of writes; stop once a window moves WA by < 0.5%.
  for (; windows < (quick ? 3 : 40); ++windows) {
    d.ssd().ftl().reset_counters();
    uint64_t left = pages;
    h.run(32, [&](AtaCommand& cmd) {
      if (!left--) return false;
      cmd = HostDriver::write(pick(rng) * 8, 8, true, ++word, 100);
      return true;
    });
    wa = d.ssd().ftl().counters().write_amplification();
    if (windows >= 2 && std::fabs(wa - prev) < 0.005 * wa) break;
    prev = wa;
  }
  char name[64], what[240];
  std::snprintf(name, sizeof name, "drive.wa_uniform_op%.0f", op_pct);
  std::snprintf(what, sizeof what,
                "steady-state write amplification, uniform random 4 KiB writes, greedy GC, %.0f%% "
                "over-provisioning (%u superblocks), after %d drive writes",
                op_pct, c.nand.blocks_per_plane, windows + 1);
  emit(name, wa, "x", what);
}

void bench_recovery(bool quick) {
  drive::DriveConfig cfg = quick ? scaled_consumer(4) : drive::load_profile("consumer-256gb");
  RecoveryOptions o;
  if (quick) {
    o.torture_minutes = 1;
    o.idle_minutes = 2;
    o.sweep.zones = 32;
    o.sweep.zone_bytes = 8 << 20;
  }
  progress("recovery: clean / torture / idle / TRIM on the consumer drive");
  drive::Drive d(cfg);
  RecoveryFigures f = torture_idle_trim(d, o);
  std::string where = " (" + cfg.name + ", HD Tach-style sweep, simulated time, SATA Gen3 link)";
  emit("drive.seq_write_mbps_clean", f.clean.avg_mbps, "MB/s", "sequential write after secure erase" + where);
  emit("drive.seq_write_mbps_tortured", f.tortured.avg_mbps, "MB/s",
       "sequential write after a full fill and 20 min of 4 KiB random writes at QD32" + where);
  emit("drive.seq_write_mbps_idle_recovered", f.idle_recovered.avg_mbps, "MB/s",
       "sequential write after 40 min of idle following the torture" + where);
  emit("drive.seq_write_mbps_trimmed", f.trimmed.avg_mbps, "MB/s",
       "sequential write after TRIM of the whole drive" + where);
}

void bench_compressing(bool quick) {
  drive::DriveConfig cfg = drive::load_profile("sandforce-240gb");
  if (quick) cfg = drive::scale_capacity(cfg, 8);
  RecoveryOptions o;
  if (quick) {
    o.torture_minutes = 1;
    o.sweep.zones = 32;
    o.sweep.zone_bytes = 8 << 20;
  }
  // As the review: HD Tach's data compresses well, and so did the fill and torture.
  o.sweep.compress_pct = 25;
  o.data_compress_pct = 25;
  progress("compressing: clean and tortured states on the SandForce-like drive");
  drive::Drive d(cfg);
  CompressingFigures f = compressing_states(d, o);
  std::string where = " (" + cfg.name + ", HD Tach-style sweep, simulated time)";
  emit("drive.seq_read_mbps_clean_compressing", f.read_clean.avg_mbps, "MB/s",
       "sequential read of a freshly filled compressing drive" + where);
  emit("drive.seq_read_mbps_tortured_compressing", f.read_tortured.avg_mbps, "MB/s",
       "sequential read after 20 min of compressible 4 KiB random writes at QD32" + where);
  emit("drive.seq_write_mbps_tortured_compressing", f.write_tortured.avg_mbps, "MB/s",
       "sequential write of compressible data on the tortured compressing drive" + where);
  emit("drive.seq_write_mbps_clean_compressing", f.write_clean.avg_mbps, "MB/s",
       "sequential write of compressible data after secure erase" + where);
}

// Resident memory after a full fill, measured in a child so nothing else is counted.
void bench_rss(bool quick) {
  int fds[2];
  if (pipe(fds) != 0) return;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    drive::DriveConfig cfg = quick ? scaled_consumer(4) : drive::load_profile("consumer-256gb");
    drive::Drive d(cfg);
    HostDriver h(d);
    uint32_t word = 0;
    fill(h, 100, word);
    std::ifstream status("/proc/self/status");
    std::string line;
    double mb = -1;
    while (std::getline(status, line))
      if (line.rfind("VmHWM:", 0) == 0) mb = std::stod(line.substr(6)) / 1024.0;
    (void)!write(fds[1], &mb, sizeof mb);
    _exit(0);
  }
  close(fds[1]);
  double mb = -1;
  (void)!read(fds[0], &mb, sizeof mb);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  emit("drive.rss_mb_256gb_full", mb, "MB",
       quick ? "peak resident memory after a full fill (quick run: 4 GB drive)"
             : "peak resident memory of a 256 GB drive after a full sequential fill");
}

}  // namespace

int run_benchmarks(bool quick, const std::string& only) {
  auto want = [&](const std::string& name) { return only.empty() || name.rfind(only, 0) == 0; };
  if (want("drive.rss")) bench_rss(quick);
  if (want("drive.cmdapi_cmds_per_s")) bench_cmdapi(quick);
  if (want("drive.cmdapi_instructions_per_cmd")) bench_cmdapi_instructions();
  for (double op : {7.0, 13.0, 28.0}) {
    char n[40];
    std::snprintf(n, sizeof n, "drive.wa_uniform_op%.0f", op);
    if (want(n)) {
      progress(n);
      bench_wa(quick, op);
    }
  }
  if (want("drive.seq_write")) bench_recovery(quick);
  if (want("drive.seq_read") || want("drive.seq_write_mbps_tortured_compressing")) bench_compressing(quick);
  return 0;
}

}  // namespace fisrig::tools
