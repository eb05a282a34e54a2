// `make bench`'s NVMe figures: the simulated controller over the fast-1gb drive (NAND,
// channels and controller far faster than the link) driven by a host that keeps its queues
// full, on a clean drive, in simulated time. Each figure is printed as a JSON line
// (scripts/bench_collect.py) with the link's ceiling docs/nvme.md computes beside it.
#include <algorithm>
#include <cstdio>
#include <vector>
#include <random>
#include <string>

#include "fisrig/nvme/queue_host.h"
#include "instruction_count.h"

namespace {

using fisrig::drive::kNever;
using fisrig::nvme::QueueHost;
using fisrig::nvme::SimTime;

struct Result {
  uint64_t commands = 0, bytes = 0;
  SimTime first = 0, last = 0;
  std::vector<SimTime> latency_ns;  // doorbell to the host's reap of its CQE
  double mean_latency_us() const {
    double sum = 0;
    for (SimTime l : latency_ns) sum += double(l);
    return latency_ns.empty() ? 0 : sum / double(latency_ns.size()) / 1e3;
  }
  double per_s() const { return double(commands) * 1e9 / double(last - first); }
  double mb_per_s() const { return double(bytes) * 1e3 / double(last - first); }
};

// `commands` reads of `blocks` each over `queues` queues kept `depth` deep; random LBAs
// (aligned to the transfer) or sequential ones, on a host whose I/O queues 1..`queues` are
// made (io_queues) and more than `depth` deep.
Result reads(QueueHost& h, uint16_t queues, uint32_t depth, uint32_t blocks, uint64_t commands, bool random) {
  const uint32_t entries = h.queues[1].sq_entries;
  for (uint16_t q = 1; q <= queues; ++q)
    if (h.queues[q].sq_entries != entries || entries <= depth) throw std::runtime_error("the host's queues are too few or shallow");
  fisrig::nvme::NvmeCompletion c;
  while (h.ctrl.pop_completion(c)) {
  }
  const uint64_t bytes = uint64_t(blocks) * 512, pages = bytes / 4096;
  const uint64_t span = h.ctrl.ssd().visible_sectors() / blocks;
  // Each slot (queue, place in its queue) has its buffer and, past two pages, its PRP list.
  auto buffer = [&](uint32_t slot) { return QueueHost::kData + uint64_t(slot) * bytes; };
  auto list = [&](uint32_t slot) { return QueueHost::kData - 0x4000000 + uint64_t(slot) * 4096; };
  for (uint32_t slot = 0; pages > 2 && slot < uint32_t(queues) * entries; ++slot)
    for (uint64_t i = 1; i < pages; ++i) {
      uint64_t page = buffer(slot) + 4096 * i;
      h.mem.write(list(slot) + 8 * (i - 1), &page, 8);
    }
  std::mt19937_64 rng(1);
  std::vector<SimTime> sent(65536);  // by command id
  uint64_t issued = 0, next_lba = 0;
  auto put = [&](uint16_t q) {
    uint32_t slot = (q - 1) * entries + h.queues[q].sq_tail;
    uint64_t lba = (random ? rng() % span : next_lba++ % span) * blocks;
    fisrig_nvme_sqe s{};
    s.opcode = FISRIG_NVME_CMD_READ;
    s.nsid = 1;
    s.cdw10 = uint32_t(lba), s.cdw11 = uint32_t(lba >> 32), s.cdw12 = blocks - 1;
    s.prp1 = buffer(slot);
    s.prp2 = pages == 2 ? buffer(slot) + 4096 : pages > 2 ? list(slot) : 0;
    sent[h.put(q, s)] = h.now;
    ++issued;
  };
  Result r;
  r.first = h.now;
  r.latency_ns.reserve(commands);
  for (uint16_t q = 1; q <= queues; ++q) {
    for (uint32_t i = 0; i < depth && issued < commands; ++i) put(q);
    h.ring(q);
  }
  while (r.commands < commands) {
    SimTime t = h.ctrl.next_event();
    if (t == kNever) throw std::runtime_error("the controller stopped with commands outstanding");
    h.now = std::max(h.now, t);
    h.ctrl.run_until(h.now);
    for (uint16_t q = 1; q <= queues; ++q) {
      fisrig_nvme_cqe e{};
      bool any = false, more = false;
      while (h.reap(q, e, false)) {
        if (QueueHost::status(e)) throw std::runtime_error("a read failed: status " + std::to_string(QueueHost::status(e)));
        ++r.commands, any = true;
        r.latency_ns.push_back(h.now - sent[e.cid]);
        if (issued < commands) put(q), more = true;
      }
      if (any) h.ring_cq(q);
      if (more) h.ring(q);
    }
    while (h.ctrl.pop_completion(c)) r.last = std::max(r.last, c.t_cqe);
  }
  r.bytes = r.commands * bytes;
  return r;
}

struct Fill {
  double slc_gb = 0;  // written when the rate first fell below 60% of the first window's
  double slc_mbps = 0, native_mbps = 0;  // median windows before and after
  double mbps = 0;                        // median window over the fill
};

// A whole-drive fill as the review's: sequential 128 KiB writes (8 in flight, 1 MiB) of a
// generated pattern from a freshly erased drive, the rate taken over each 256 MiB, on I/O
// queue 1 (io_queues).
Fill whole_drive_fill(QueueHost& h) {
  const uint32_t depth = 8, blocks = 256, entries = h.queues[1].sq_entries;
  if (entries <= depth) throw std::runtime_error("the host's queue is too shallow");
  fisrig::drive::WritePayload p;
  p.kind = fisrig::drive::WritePayload::Kind::kWord;
  p.word = 5;
  h.mem.describe_pattern(QueueHost::kData, QueueHost::kData + 0x10000000, p);
  fisrig::nvme::NvmeCompletion c;
  while (h.ctrl.pop_completion(c)) {
  }
  const uint64_t total = h.ctrl.ssd().visible_sectors() / blocks, per_window = 256 * 8;  // 256 MiB
  uint64_t issued = 0, done = 0;
  auto list = [&](uint32_t slot) { return QueueHost::kData - 0x4000000 + uint64_t(slot) * 4096; };
  for (uint32_t slot = 0; slot < entries; ++slot)
    for (uint64_t i = 1; i < 32; ++i) {
      uint64_t page = QueueHost::kData + (uint64_t(slot) * 32 + i) * 4096;
      h.mem.write(list(slot) + 8 * (i - 1), &page, 8);
    }
  auto put = [&]() {
    uint32_t slot = h.queues[1].sq_tail;
    uint64_t lba = issued++ * blocks;
    fisrig_nvme_sqe s{};
    s.opcode = FISRIG_NVME_CMD_WRITE;
    s.nsid = 1;
    s.cdw10 = uint32_t(lba), s.cdw11 = uint32_t(lba >> 32), s.cdw12 = blocks - 1;
    s.prp1 = QueueHost::kData + uint64_t(slot) * 32 * 4096;
    s.prp2 = list(slot);
    h.put(1, s);
  };
  for (uint32_t i = 0; i < depth; ++i) put();
  h.ring(1);
  std::vector<double> rates;
  SimTime window_start = h.now;
  while (done < total) {
    SimTime t = h.ctrl.next_event();
    if (t == kNever) throw std::runtime_error("the controller stopped with writes outstanding");
    h.now = std::max(h.now, t);
    h.ctrl.run_until(h.now);
    fisrig_nvme_cqe e{};
    bool any = false, more = false;
    while (h.reap(1, e, false)) {
      if (QueueHost::status(e)) throw std::runtime_error("a write failed: status " + std::to_string(QueueHost::status(e)));
      ++done, any = true;
      if (done % per_window == 0) {
        rates.push_back(256.0 * 1048576 * 1e3 / double(h.now - window_start));
        window_start = h.now;
      }
      if (issued < total) put(), more = true;
    }
    if (any) h.ring_cq(1);
    if (more) h.ring(1);
    while (h.ctrl.pop_completion(c)) {
    }
  }
  Fill f;
  size_t fall = rates.size();
  for (size_t i = 1; i < rates.size(); ++i)
    if (rates[i] < 0.6 * rates[0]) {
      fall = i;
      break;
    }
  f.slc_gb = double(fall) * 256 * 1048576 / 1e9;
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  f.slc_mbps = median(std::vector<double>(rates.begin(), rates.begin() + long(fall)));
  f.mbps = median(rates);
  f.native_mbps = median(std::vector<double>(rates.begin() + long(std::min(fall, rates.size())), rates.end()));
  return f;
}

// A host with `n` I/O queue pairs of `entries` each.
QueueHost& io_queues(QueueHost& h, uint16_t n, uint32_t entries) {
  if (h.make_io_queues(n, entries) != 0) throw std::runtime_error("queues refused");
  fisrig::nvme::NvmeCompletion c;
  while (h.ctrl.pop_completion(c)) {
  }
  return h;
}

}  // namespace

int main() {
  try {
    using fisrig::bench::emit;
    // The link's ceilings: fast-1gb's NAND and controller are far faster than the link.
    auto fast = [](uint32_t gen) {
      fisrig::drive::DriveConfig cfg = fisrig::drive::load_profile("fast-1gb");
      cfg.nvme.pcie_gen = gen;
      return cfg;
    };
    QueueHost fast3(fast(3));
    Result rr = reads(io_queues(fast3, 4, 64), 4, 32, 8, 200000, true);
    emit("nvme.randread_4k_iops_qd32x4", rr.per_s(), "IOPS",
         "4 KiB random reads, 4 queues at QD32, clean fast-1gb drive, PCIe Gen3 x4 (ceiling 860,700: docs/nvme.md); "
         "simulated time, first doorbell to last CQE");
    for (uint32_t gen : {3u, 4u}) {
      QueueHost h(fast(gen));
      Result s = reads(io_queues(h, 1, 32), 1, 16, 256, 4096, false);
      char name[64], what[256];
      std::snprintf(name, sizeof name, "nvme.seq_read_mbps_gen%ux4", gen);
      std::snprintf(what, sizeof what,
                    "128 KiB sequential reads, one queue at QD16, clean fast-1gb drive, PCIe Gen%u x4 (ceiling %s MB/s: "
                    "docs/nvme.md); simulated time",
                    gen, gen == 3 ? "3,598" : "7,196");
      emit(name, s.mb_per_s(), "MB/s", what);
    }
    // The whole-drive fill of consumer-tlc-nvme-1tb, cut down to 32 GB (its SLC cache with it).
    const double full_gb = 1000, run_gb = 32;
    QueueHost consumer(fisrig::drive::scale_capacity(fisrig::drive::load_profile("consumer-tlc-nvme-1tb"), run_gb));
    Fill f = whole_drive_fill(io_queues(consumer, 1, 16));
    char what[320];
    std::snprintf(what, sizeof what,
                  "where a whole-drive fill's write speed falls below 60%% of its start: consumer-tlc-nvme-1tb cut "
                  "to %.0f GB (its SLC cache with it), fell at %.2f GB, for the full drive x%.2f (its profile: 113 GB, "
                  "the review's); simulated time",
                  run_gb, f.slc_gb, full_gb / run_gb);
    emit("nvme.slc_cache_gb", f.slc_gb * full_gb / run_gb, "GB", what);
    emit("nvme.fill_slc_mbps", f.slc_mbps, "MB/s",
         "the same fill's median write rate in the SLC cache (256 MiB windows; the review: 4 GB/s); simulated time");
    emit("nvme.fill_native_mbps", f.native_mbps, "MB/s",
         "the same fill's median write rate past the SLC cache (the review: about 1.5 GB/s); simulated time");
    // The enterprise drive against its datasheet (its profile names it): cut down to 48 GB
    // (its 1 GiB superblocks' GC reserve needs that much spare), filled once, then read.
    QueueHost ent(fisrig::drive::scale_capacity(fisrig::drive::load_profile("enterprise-tlc-nvme-1920gb"), 48));
    Fill ef = whole_drive_fill(io_queues(ent, 4, 64));
    emit("nvme.enterprise_seq_write_mbps", ef.mbps, "MB/s",
         "enterprise-tlc-nvme-1920gb cut to 48 GB, a fill from clean: 128 KiB sequential writes 8 deep, median of "
         "256 MiB windows (the datasheet: 1.9 to 2.3 GB/s for the family); simulated time");
    Result q1 = reads(ent, 1, 1, 8, 20000, true);
    emit("nvme.enterprise_qd1_read_us", q1.mean_latency_us(), "us",
         "the same drive filled, 4 KiB random reads at QD1: doorbell to CQE, mean (the datasheet: 92 to 150 us to the "
         "media); simulated time");
    Result rq = reads(ent, 4, 32, 8, 200000, true);
    emit("nvme.enterprise_randread_4k_iops", rq.per_s(), "IOPS",
         "the same drive filled, 4 KiB random reads, 4 queues at QD32 (the datasheet: 700K to 770K IOPS for the "
         "family); simulated time");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fisrig-nvme-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
