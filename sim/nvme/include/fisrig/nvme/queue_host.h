// The host's side of NVMe's queues, as a driver keeps them: the admin queue and I/O queue
// pairs in the host's memory, commands written and doorbells rung, completions taken by
// their phase tags, and a command answered by polling. The controller's tests, nvme-cli's
// preloaded library and the NVMe bench drive the controller through it.
#pragma once

#include <cstdint>
#include <vector>

#include "fisrig/nvme/controller.h"

namespace fisrig::nvme {

// On the host's memory `Memory` (a SparseMemory, or one that says what a write's buffer holds:
// the model target's engine, sim/model/nvme_rig_memory.h).
template <class Memory = SparseMemory>
class QueueHostOn {
 public:
  static constexpr uint64_t kAsq = 0x10000, kAcq = 0x20000, kIoQueues = 0x100000, kData = 0x10000000;
  static constexpr uint32_t kAdminEntries = 32;

  struct Queue {
    uint64_t sq = 0, cq = 0;
    uint32_t sq_entries = 0, cq_entries = 0, sq_tail = 0, cq_head = 0;
    bool phase = true;
  };

  explicit QueueHostOn(drive::DriveConfig profile, NvmeConfig cfg = {}) : ctrl(std::move(profile), mem, cfg) { enable(); }

  // The admin queue set up and CC.EN written; the host waits for CSTS.RDY.
  void enable() {
    // A driver clears its completion queues before the controller may post into them: an
    // old entry's phase tag would read as new.
    clear(kAcq, kAdminEntries * FISRIG_NVME_CQE_BYTES);
    ctrl.write32(FISRIG_NVME_REG_AQA, (kAdminEntries - 1) << 16 | (kAdminEntries - 1), now);
    ctrl.write64(FISRIG_NVME_REG_ASQ, kAsq, now);
    ctrl.write64(FISRIG_NVME_REG_ACQ, kAcq, now);
    ctrl.write32(FISRIG_NVME_REG_CC, FISRIG_NVME_CC_EN | 6u << FISRIG_NVME_CC_IOSQES_SHIFT | 4u << FISRIG_NVME_CC_IOCQES_SHIFT, now);
    now += ctrl.config().enable_ns;
    ctrl.run_until(now);
    queues.assign(size_t(ctrl.profile().io_queue_pairs) + 1, Queue{});
    queues[0] = Queue{kAsq, kAcq, kAdminEntries, kAdminEntries, 0, 0, true};
  }

  // Writes the command into queue `qid` (its cid the host's next, or its own) without ringing.
  uint16_t put(uint16_t qid, fisrig_nvme_sqe s, bool own_cid = false) {
    Queue& q = queues[qid];
    if (!own_cid) s.cid = next_cid++;
    mem.write(q.sq + uint64_t(q.sq_tail) * FISRIG_NVME_SQE_BYTES, &s, sizeof s);
    q.sq_tail = (q.sq_tail + 1) % q.sq_entries;
    return s.cid;
  }
  void ring(uint16_t qid) { ctrl.write32(ctrl.sq_doorbell(qid), queues[qid].sq_tail, now); }
  uint16_t submit(uint16_t qid, const fisrig_nvme_sqe& s) {
    uint16_t cid = put(qid, s);
    ring(qid);
    return cid;
  }
  // Takes queue `qid`'s next CQE if its phase says it is new; `ring`: tell the controller.
  bool reap(uint16_t qid, fisrig_nvme_cqe& e, bool ring_head = true) {
    Queue& q = queues[qid];
    mem.read(q.cq + uint64_t(q.cq_head) * FISRIG_NVME_CQE_BYTES, &e, sizeof e);
    if (bool(e.status & FISRIG_NVME_STATUS_P) != q.phase) return false;
    if (++q.cq_head == q.cq_entries) q.cq_head = 0, q.phase = !q.phase;
    if (ring_head) ring_cq(qid);
    return true;
  }
  void ring_cq(uint16_t qid) { ctrl.write32(ctrl.cq_doorbell(qid), queues[qid].cq_head, now); }
  // One command, answered: the host polls at doubling intervals from 1 us, and its clock
  // stays at or past the controller's. False if no answer came within 100 s.
  bool run(uint16_t qid, const fisrig_nvme_sqe& s, fisrig_nvme_cqe& e) {
    submit(qid, s);
    for (SimTime step = drive::kNsPerUs; step < 100 * drive::kNsPerS; step *= 2) {
      ctrl.run_until(now + step);
      if (reap(qid, e)) {
        now += step;
        return true;
      }
    }
    return false;
  }
  // Number of Queues, then a CQ of `entries` and an SQ of `sq_entries` (0: as many) for
  // each of qids 1..n; the status of the first that failed, 0 if none did.
  int make_io_queues(uint16_t n, uint32_t entries, uint32_t sq_entries = 0) {
    if (!sq_entries) sq_entries = entries;
    fisrig_nvme_sqe nq{};
    nq.opcode = FISRIG_NVME_ADMIN_SET_FEATURES;
    nq.cdw10 = FISRIG_NVME_FEAT_NUMBER_OF_QUEUES;
    nq.cdw11 = uint32_t(n - 1) << 16 | uint32_t(n - 1);
    if (int st = admin_status(nq)) return st;
    for (uint16_t qid = 1; qid <= n; ++qid) {
      uint64_t cq = kIoQueues + qid * 0x100000ull, sq = cq + 0x80000;
      clear(cq, entries * FISRIG_NVME_CQE_BYTES);
      fisrig_nvme_sqe c{};
      c.opcode = FISRIG_NVME_ADMIN_CREATE_IO_CQ;
      c.prp1 = cq, c.cdw10 = (entries - 1) << 16 | qid, c.cdw11 = 1;
      if (int st = admin_status(c)) return st;
      fisrig_nvme_sqe s{};
      s.opcode = FISRIG_NVME_ADMIN_CREATE_IO_SQ;
      s.prp1 = sq, s.cdw10 = (sq_entries - 1) << 16 | qid, s.cdw11 = uint32_t(qid) << 16 | 1;
      if (int st = admin_status(s)) return st;
      queues[qid] = Queue{sq, cq, sq_entries, entries, 0, 0, true};
    }
    return 0;
  }
  // The status field without its phase bit: SCT << 8 | SC, as nvme-cli prints it.
  static int status(const fisrig_nvme_cqe& e) { return (e.status >> 1) & 0x7FF; }

  Memory mem;
  Controller ctrl;
  std::vector<Queue> queues;
  SimTime now = 0;
  uint16_t next_cid = 1;

 private:
  int admin_status(const fisrig_nvme_sqe& s) {
    fisrig_nvme_cqe e{};
    return run(0, s, e) ? status(e) : -1;
  }
  void clear(uint64_t addr, size_t bytes) { mem.write(addr, std::vector<uint8_t>(bytes, 0).data(), bytes); }
};

using QueueHost = QueueHostOn<>;

}  // namespace fisrig::nvme
