// The rtl target's NVMe rig: a compiled program run by the firmware core's VM (built
// natively, as fisrig-model runs it) on the NVMe rig core in Verilator against the simulated
// controller (nvme_rig.h), the VM's engine operations served by the core's descriptor and
// record ports as the SoC's rings serve them. What this program plays besides is the rig's
// CPU: the enumeration, the controller's enable and its I/O queues, again after each POWER
// ON (then a LINK_UP event record, as the model's engine writes one), and the data window's
// copies: a descriptor's FISRIG_DATA_RAM data goes into the core's window before it, and a
// read's comes back out of it before its record is handed to the VM, a dword a cycle over
// the window's port, as the CPU would move it over its bus. The CPU's own time between
// descriptors is not simulated (the VM answers at once).
//
//   Vnvme_rig --program P.bin --records OUT.rec [--profile P] [--fault knob=value]... [--quiet]
//
// The records file and the JSON line on stdout are fisrig-model's (program_run.h). Exits 2 on
// bad arguments, 3 when the run did not end done, 4 when the bring-up failed.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nvme_rig.h"
#include "program_file.h"
#include "program_run.h"

using namespace fisrig::model::program_run;
using fisrig::rtl::Rig;

namespace {

constexpr unsigned kQueues = FISRIG_CORE_QUEUES, kIoEntries = FISRIG_CORE_IO_ENTRIES;
constexpr uint32_t kWindowBytes = FISRIG_CORE_WINDOW_BYTES;
constexpr uint32_t kRing = 1024;            // the rings' entries (as the model's)

struct Host {
  Rig rig;
  std::vector<fisrig_cmd_desc> sq = std::vector<fisrig_cmd_desc>(kRing);
  std::vector<fisrig_cpl_record> cq = std::vector<fisrig_cpl_record>(kRing);
  std::deque<fisrig_cpl_record> held;     // records waiting for room in the ring
  std::vector<uint8_t> window = std::vector<uint8_t>(kWindowBytes);
  uint32_t sq_head = 0, cq_tail = 0, cq_head = 0;
  unsigned made = 0;
  int failed = 0;                          // the bring-up's exit code once it failed
  struct Pending { bool ram_in; uint32_t word, bytes; bool power_on; };
  std::map<uint32_t, Pending> by_tag;      // what a record's descriptor asked of the runner
  unsigned sqe_entries = 0;                // of the NVMe descriptor being fed

  void window_to_core(uint32_t word, uint32_t bytes) {
    for (uint32_t k = 0; k < bytes / 4; ++k) {
      uint32_t v;
      std::memcpy(&v, window.data() + word + 4 * k, 4);
      rig.window_write((word >> 2) + k, v);
    }
  }
  void core_to_window(uint32_t word, uint32_t bytes) {
    for (uint32_t k = 0; k < bytes / 4; ++k) {
      const uint32_t v = rig.window_read((word >> 2) + k);
      std::memcpy(window.data() + word + 4 * k, &v, 4);
    }
  }
  void push(const fisrig_cpl_record& r) {
    if (cq_tail - cq_head < kRing && held.empty()) cq[cq_tail++ % kRing] = r;
    else held.push_back(r);
  }
  void link_up() {
    fisrig_cpl_record up{};
    up.user_tag = FISRIG_USER_TAG_EVENT;
    up.slot = FISRIG_EVENT_REC_LINK_UP;
    up.ts_submit = up.ts_status = rig.top.now;
    push(up);
  }
  bool bring_up() {
    if ((failed = fisrig::rtl::bring_up(rig, kQueues, kQueues, kIoEntries, made))) return false;
    link_up();
    return true;
  }
  // The core's records into the ring, a read's window data first; a POWER ON's brings the
  // controller up again after it.
  void collect() {
    while (!rig.records.empty()) {
      fisrig_cpl_record r = rig.records.front();
      rig.records.pop_front();
      auto it = by_tag.find(r.user_tag);
      Pending p{};
      if (r.user_tag != FISRIG_USER_TAG_EVENT && it != by_tag.end()) {
        p = it->second;
        by_tag.erase(it);
      }
      if (p.ram_in && r.result == FISRIG_RESULT_OK) core_to_window(p.word, p.bytes);
      push(r);
      if (p.power_on && r.result == FISRIG_RESULT_OK && !failed) bring_up();
    }
  }
  void feed(uint32_t tail) {
    while (sq_head != tail && !failed) {
      const fisrig_cmd_desc& d = sq[sq_head % kRing];
      if (!sqe_entries) {
        Pending p{};
        if (d.protocol == FISRIG_PROTO_NVME) {
          fisrig_nvme_desc_head h;
          std::memcpy(&h, &d, sizeof h);
          fisrig_nvme_sqe s;
          std::memcpy(&s, &sq[(sq_head + 1) % kRing], 32);
          std::memcpy(reinterpret_cast<uint8_t*>(&s) + 32, &sq[(sq_head + 2) % kRing], 32);
          const bool ram = h.data_source == FISRIG_DATA_RAM && h.data_bytes &&
                           uint64_t(h.data_word) + h.data_bytes <= kWindowBytes;
          if (ram && (s.opcode & 1)) window_to_core(h.data_word, h.data_bytes);
          p.ram_in = ram && (s.opcode & 2);
          p.word = h.data_word, p.bytes = h.data_bytes;
          sqe_entries = FISRIG_NVME_DESC_ENTRIES - 1;
        } else {
          p.power_on = d.protocol == FISRIG_PROTO_POWER && d.command == FISRIG_POWER_ON;
        }
        by_tag[d.user_tag] = p;
      } else {
        --sqe_entries;
      }
      if (!rig.feed(d)) return;
      ++sq_head;
      collect();
    }
  }

  static void c_doorbell(void* ctx, uint32_t tail) { static_cast<Host*>(ctx)->feed(tail); }
  static uint32_t c_sq_head(void* ctx) { return static_cast<Host*>(ctx)->sq_head; }
  static uint32_t c_cq_tail(void* ctx) { return static_cast<Host*>(ctx)->cq_tail; }
  static void c_cq_consumed(void* ctx, uint32_t head) {
    Host* h = static_cast<Host*>(ctx);
    h->cq_head = head;
    while (!h->held.empty() && h->cq_tail - h->cq_head < kRing) {
      h->cq[h->cq_tail++ % kRing] = h->held.front();
      h->held.pop_front();
    }
  }
  static uint64_t c_now(void* ctx) { return static_cast<Host*>(ctx)->rig.top.now; }
  // Until a record waits or the clock reaches `until` (the simulation runs meanwhile).
  static void c_wait(void* ctx, uint64_t until) {
    Host* h = static_cast<Host*>(ctx);
    while (h->cq_tail == h->cq_head && h->rig.top.now < until && !h->failed) {
      if (!h->rig.step()) return;
      h->collect();
    }
  }
  fisrig_engine_ops ops() {
    fisrig_engine_ops o{};
    o.ctx = this;
    o.sq = sq.data(), o.sq_entries = kRing;
    o.cq = cq.data(), o.cq_entries = kRing;
    o.data_window = window.data(), o.data_window_bytes = kWindowBytes;
    o.doorbell = c_doorbell, o.sq_head = c_sq_head, o.cq_tail = c_cq_tail, o.cq_consumed = c_cq_consumed;
    o.now = c_now, o.wait = c_wait;
    return o;
  }
};

int usage() {
  std::fprintf(stderr, "usage: Vnvme_rig --program P.bin --records OUT.rec [--profile P] [--fault knob=value]... "
                       "[--quiet]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string program_path, records_path, profile = "consumer-256gb", faults;
  Progress progress;
  progress.tool = "fisrig rtl (nvme)";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--program") program_path = argv[++i];
    else if (i + 1 < argc && a == "--records") records_path = argv[++i];
    else if (i + 1 < argc && a == "--profile") profile = argv[++i];
    else if (i + 1 < argc && a == "--fault") faults += (faults.empty() ? "" : ",") + std::string(argv[++i]);
    else if (a == "--quiet") progress.quiet = true;
    else return usage();
  }
  if (program_path.empty() || records_path.empty()) return usage();
  fisrig::model::ProgramFile program;
  if (!program.open(program_path)) {
    std::fprintf(stderr, "Vnvme_rig: cannot read %s\n", program_path.c_str());
    return 2;
  }
  auto host = std::make_unique<Host>();
  Rig& rig = host->rig;
  char err[256];
  rig.dev = fisrig_nvme_device_new(profile.c_str(), faults.empty() ? nullptr : faults.c_str(), 2, 4, err, sizeof err);
  if (!rig.dev) {
    std::fprintf(stderr, "Vnvme_rig: %s\n", err);
    return 2;
  }
  int records_fd = open_records("Vnvme_rig", records_path);
  if (records_fd < 0) return 2;
  RecordFile out(records_fd);
  write_header(out);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  rig.max_cycles = ~0ull;
  rig.top.tx_ready = 1, rig.top.cpl_ready = 1, rig.top.sys_rst = 1;
  rig.run(10);
  rig.top.sys_rst = 0;
  auto t0 = std::chrono::steady_clock::now();
  if (!host->bring_up()) {
    std::fprintf(stderr, "Vnvme_rig: the controller's bring-up failed (exit %d)\n", host->failed);
    return 4;
  }
  fisrig_engine_ops ops = host->ops();
  auto sim_ns = [&]() -> SimTimeNs { return fisrig_nvme_device_now_ns(rig.dev); };
  fisrig_vm vm;
  SinkCtx ctx{&out, &progress, sim_ns, &vm};
  fisrig_record_sink sink{&ctx, &emit, &place, &placed};
  fisrig_vm_init(&vm, &ops, &sink);
  fisrig_vm_nvme state{};
  fisrig_vm_nvme_init(&vm, &state, uint16_t(host->made), uint16_t(kIoEntries));
  fisrig_vm_status st = fisrig_vm_run(&vm, program.data(), uint32_t(program.size()));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!out.writer.close()) {
    std::fprintf(stderr, "Vnvme_rig: cannot write %s: %s\n", records_path.c_str(), std::strerror(out.writer.error()));
    if (st == FISRIG_VM_DONE) st = FISRIG_VM_RECORDS_LOST;
  }
  if (host->failed) std::fprintf(stderr, "Vnvme_rig: the controller's bring-up after a POWER ON failed\n");
  print_outcome(st, out, vm, sim_ns(), wall);
  fisrig_nvme_device_free(rig.dev);
  return st == FISRIG_VM_DONE ? 0 : 3;
}
