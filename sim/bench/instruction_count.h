// Instructions retired in a region of a benchmark: the deterministic companion of a
// wall-clock figure, which on a shared or virtual machine moves by tens of percent with the
// load. Two counters, one region:
//   - the CPU's, through perf_event_open (user-space instructions), where the kernel gives it;
//   - valgrind's callgrind (Ir, the instructions it executes) where it does not (virtual
//     machines that expose no performance counters): the benchmark runs itself again under
//     callgrind, which instruments and counts only between Region::begin and Region::end.
// CALLGRIND_* are client requests: a few no-op instructions outside valgrind.
#pragma once

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace fisrig::bench {

inline bool under_valgrind() { return RUNNING_ON_VALGRIND != 0; }

class Region {
 public:
  Region() {
    if (under_valgrind()) return;  // the counter would count valgrind's own translation
    perf_event_attr a{};
    a.type = PERF_TYPE_HARDWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    fd_ = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
    if (fd_ < 0) why_ = std::strerror(errno);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region() {
    if (fd_ >= 0) close(fd_);
  }
  bool has_cpu_counter() const { return fd_ >= 0; }
  const std::string& why_no_counter() const { return why_; }
  void begin() {
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_TOGGLE_COLLECT;
    if (fd_ >= 0) ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
  }
  void end() {
    if (fd_ >= 0) ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_STOP_INSTRUMENTATION;
  }
  // The CPU counter's total over every begin..end, or -1 without one.
  long long cpu_count() const {
    long long n = -1;
    if (fd_ < 0 || read(fd_, &n, sizeof n) != sizeof n) return -1;
    return n;
  }

 private:
  int fd_ = -1;
  std::string why_;
};

// Runs `argv` (this program again, asked for the same reduced run) under callgrind with
// collection only inside its Regions; returns callgrind's instruction total, or -1 with the
// reason on stderr. The child's stdout is discarded: its figures are the parent's to print.
inline long long callgrind_count(const std::vector<std::string>& argv) {
  char out[] = "/tmp/fisrig-callgrind-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0) return -1;
  close(fd);
  std::vector<std::string> args = {"valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                                   "--quiet", std::string("--callgrind-out-file=") + out};
  args.insert(args.end(), argv.begin(), argv.end());
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);  // valgrind's own, once it runs
  if (len > 0 && args[6] == "/proc/self/exe") args[6].assign(self, size_t(len));
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stdout)) _exit(126);
    execvp(c_args[0], c_args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  long long total = -1;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);)
    if (line.rfind("totals:", 0) == 0 || line.rfind("summary:", 0) == 0) total = std::atoll(line.c_str() + line.find(':') + 1);
  std::remove(out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || total <= 0) {
    std::fprintf(stderr, "bench: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 127
                                            ? "valgrind is not installed (scripts/bootstrap.sh installs it)"
                                            : "the run under callgrind failed");
    return -1;
  }
  return total;
}

// The instructions `run` retires between its Region's begin and end: on the CPU's counter,
// else by running `self_argv` (this program, asked for this same run) under callgrind.
// Under valgrind (that second run) it only runs and returns -1: the parent reports.
// `counter` says which counter gave the figure. FISRIG_COUNT_WITH=callgrind in the
// environment takes callgrind even where the CPU has a counter, to compare the two.
template <class Run>
long long count_instructions(Run&& run, const std::vector<std::string>& self_argv, std::string& counter) {
  Region region;
  if (under_valgrind()) {
    run(region);
    return -1;
  }
  const char* with = std::getenv("FISRIG_COUNT_WITH");  // "callgrind": skip the CPU's counter (to compare)
  if (region.has_cpu_counter() && !(with && std::string(with) == "callgrind")) {
    run(region);
    counter = "the CPU's counter (perf_event_open)";
    return region.cpu_count();
  }
  std::fprintf(stderr, "bench: no CPU instruction counter here (perf_event_open: %s): counting under callgrind\n",
               region.why_no_counter().c_str());
  counter = "valgrind's callgrind (no CPU counter here)";
  return callgrind_count(self_argv);
}

// A bench's figure as a JSON line for scripts/bench_collect.py: its name, value, unit and
// what it is.
inline void emit(const std::string& name, double value, const char* unit, const std::string& what) {
  std::printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"what\": \"%s\"}\n", name.c_str(),
              value, unit, what.c_str());
  std::fflush(stdout);
}

// An instructions-per-command figure of a reduced run (`as`: the rate figure whose workload
// it runs), from `n` instructions over `counted` commands after `warmup`, by `counter`.
inline void emit_instructions_per_command(const std::string& name, long long n, uint64_t warmup, uint64_t counted,
                                          const std::string& as, const std::string& counter, double goal) {
  char what[480];
  std::snprintf(what, sizeof what,
                "instructions retired per command, as %s on a reduced run: 2 GB drive filled, %llu writes, "
                "%llu counted; by %s; deterministic; goal: at most %.0f",
                as.c_str(), (unsigned long long)warmup, (unsigned long long)counted, counter.c_str(), goal);
  emit(name, double(n) / double(counted), "instructions", what);
}

}  // namespace fisrig::bench
