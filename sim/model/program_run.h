// A compiled program run by the firmware core's VM on an engine's ops, its records streamed
// to a records file as they come (a run killed half-way keeps what it took), and the one
// JSON line that says how it ended: what fisrig-model (run_model.cc) and the NVMe rig's
// Verilator runner (sim/rtl/nvme_rig_runner.cpp) share.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "record_writer.h"

extern "C" {
#include "fisrig/vm.h"
}

namespace fisrig::model::program_run {

using SimTimeNs = uint64_t;

// The records file (RecordWriter: whole 1 MiB writes, on a thread of their own). Whole
// writes: ext4 zeroed every new page-cache folio before each small write filled it with
// stdio's 4 KiB default (14% of the main job's model time, perf). A command's record is
// built in the buffer (the sink's place/placed): stdio's locked fwrite of a record built
// elsewhere was 10% of the main job's model time (perf: _IO_fwrite 5.5%, its copy 4.8%).
struct RecordFile {
  explicit RecordFile(int fd) : writer(fd) {}
  model::RecordWriter writer;
  uint64_t written = 0;
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();
};

inline volatile std::sig_atomic_t g_stop = 0;
inline void on_signal(int) { g_stop = 1; }

struct Progress {
  const char* tool = "fisrig-model";  // who says it, on stderr
  bool quiet = false;
  double every_s = 2;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last = start;
};

struct SinkCtx {
  RecordFile* out;
  Progress* progress;
  std::function<SimTimeNs()> sim_ns;  // the engine's clock
  fisrig_vm* vm;
};

inline int counted(SinkCtx* s) {
  if (s->out->writer.failed()) return 1;
  ++s->out->written;
  if (g_stop) s->vm->stop_requested = 1;
  if ((s->out->written & 0xFFF) == 0) {
    auto now = std::chrono::steady_clock::now();
    // Records go to the writer at least once a second, which writes them at once: a killed
    // run loses about that much.
    if (now - s->out->last_flush > std::chrono::seconds(1)) {
      s->out->writer.hand_off();
      s->out->last_flush = now;
    }
    Progress* p = s->progress;
    double since = std::chrono::duration<double>(now - p->last).count();
    if (!p->quiet && since >= p->every_s) {
      double wall = std::chrono::duration<double>(now - p->start).count();
      std::fprintf(stderr, "%s: %llu commands, %.3f s simulated, %.0f commands/s\n", p->tool,
                   (unsigned long long)s->out->written, s->sim_ns() / 1e9,
                   s->out->written / wall);
      p->last = now;
    }
  }
  return 0;
}

inline fisrig_run_record* place(void* ctx) {
  model::RecordWriter& w = static_cast<SinkCtx*>(ctx)->out->writer;
  char* p = w.room(sizeof(fisrig_run_record));
  return w.failed() ? nullptr : reinterpret_cast<fisrig_run_record*>(p);
}

// A record is in the buffer: count it, flush once a second, say how far the run is.
inline int placed(void* ctx) {
  SinkCtx* s = static_cast<SinkCtx*>(ctx);
  s->out->writer.commit(sizeof(fisrig_run_record));
  return counted(s);
}

// A record built elsewhere (an event's): into the buffer as a command's is built there.
inline int emit(void* ctx, const fisrig_run_record* r) {
  fisrig_run_record* p = place(ctx);
  if (!p) return 1;
  *p = *r;
  return placed(ctx);
}

// The records file opened and its header written; -1 (said on stderr) if it cannot be.
inline int open_records(const char* tool, const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::fprintf(stderr, "%s: cannot write %s\n", tool, path.c_str());
  return fd;
}

inline void write_header(RecordFile& out) {
  const fisrig_records_file_header header{FISRIG_RECORDS_FILE_MAGIC, FISRIG_RECORDS_FILE_VERSION,
                                          sizeof(fisrig_run_record), 0};
  std::memcpy(out.writer.room(sizeof header), &header, sizeof header);
  out.writer.commit(sizeof header);
}

// How the run ended, as the host reads it (fisrig.targets): one JSON line on stdout.
inline void print_outcome(fisrig_vm_status st, const RecordFile& out, const fisrig_vm& vm, SimTimeNs sim_ns, double wall) {
  std::printf("{\"status\": \"%s\", \"records\": %llu, \"commands\": %llu, \"errors\": %llu, "
              "\"sim_ns\": %llu, \"wall_s\": %.3f, \"error_offset\": %u, \"error\": \"%s\"}\n",
              fisrig_vm_status_name(st), (unsigned long long)out.written, (unsigned long long)vm.commands,
              (unsigned long long)vm.errors, (unsigned long long)sim_ns, wall,
              vm.error_offset, vm.error_text ? vm.error_text : "");
}

}  // namespace fisrig::model::program_run
