// A host for the NVMe controller's tests: its memory, the admin queue and I/O queue pairs
// there, and commands submitted and answered one at a time, as a driver's polled path does.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fisrig/nvme/controller.h"

namespace fisrig::test {

using nvme::NvmeCompletion;
using nvme::SimTime;

constexpr uint64_t kAsq = 0x10000, kAcq = 0x20000, kIoQueues = 0x100000, kData = 0x1000000;
constexpr uint32_t kAdminEntries = 32;

inline fisrig_nvme_sqe sqe(uint8_t opcode, uint32_t nsid = 0) {
  fisrig_nvme_sqe s{};
  s.opcode = opcode;
  s.nsid = nsid;
  return s;
}

inline fisrig_nvme_sqe rw(uint8_t opcode, uint64_t slba, uint32_t blocks, uint64_t prp1, uint64_t prp2 = 0) {
  fisrig_nvme_sqe s = sqe(opcode, 1);
  s.cdw10 = uint32_t(slba), s.cdw11 = uint32_t(slba >> 32), s.cdw12 = blocks - 1;
  s.prp1 = prp1, s.prp2 = prp2;
  return s;
}

class NvmeHost {
 public:
  explicit NvmeHost(const char* profile = "tiny-1gb", nvme::NvmeConfig cfg = {})
      : ctrl(drive::load_profile(profile), mem, cfg) {
    enable();
  }

  void enable() {
    // A driver clears its completion queues before the controller may post into them: an
    // old entry's phase tag would read as new.
    mem.write(kAcq, std::vector<uint8_t>(kAdminEntries * 16, 0).data(), kAdminEntries * 16);
    ctrl.write32(FISRIG_NVME_REG_AQA, (kAdminEntries - 1) << 16 | (kAdminEntries - 1), now);
    ctrl.write64(FISRIG_NVME_REG_ASQ, kAsq, now);
    ctrl.write64(FISRIG_NVME_REG_ACQ, kAcq, now);
    ctrl.write32(FISRIG_NVME_REG_CC, FISRIG_NVME_CC_EN | 6u << FISRIG_NVME_CC_IOSQES_SHIFT | 4u << FISRIG_NVME_CC_IOCQES_SHIFT, now);
    now += ctrl.config().enable_ns;
    ctrl.run_until(now);  // the host polls CSTS.RDY
    queues.assign(65, Queue{});
    queues[0] = Queue{kAsq, kAcq, kAdminEntries, kAdminEntries, 0, 0, true};
  }

  // Submits on queue `qid` without waiting; returns the command id.
  uint16_t submit(uint16_t qid, fisrig_nvme_sqe s) {
    Queue& q = queues[qid];
    s.cid = next_cid++;
    mem.write(q.sq + uint64_t(q.sq_tail) * 64, &s, sizeof s);
    q.sq_tail = (q.sq_tail + 1) % q.sq_entries;
    ctrl.write32(ctrl.sq_doorbell(qid), q.sq_tail, now);
    return s.cid;
  }
  // Takes queue `qid`'s next CQE if its phase says it is new (and rings the head doorbell).
  bool reap(uint16_t qid, fisrig_nvme_cqe& e) {
    Queue& q = queues[qid];
    mem.read(q.cq + uint64_t(q.cq_head) * 16, &e, sizeof e);
    if (bool(e.status & FISRIG_NVME_STATUS_P) != q.phase) return false;
    if (++q.cq_head == q.cq_entries) q.cq_head = 0, q.phase = !q.phase;
    ctrl.write32(ctrl.cq_doorbell(qid), q.cq_head, now);
    return true;
  }
  // One command, answered: its CQE (checked against the controller's own account of it).
  // The host polls at doubling intervals from 1 us, and its clock stays at or past the
  // controller's: what it does next happens after the answer.
  fisrig_nvme_cqe run(uint16_t qid, fisrig_nvme_sqe s) {
    uint16_t cid = submit(qid, s);
    fisrig_nvme_cqe e{};
    bool got = false;
    for (SimTime step = drive::kNsPerUs; !got && step < 100 * drive::kNsPerS; step *= 2) {
      ctrl.run_until(now + step);
      if ((got = reap(qid, e))) now += step;
    }
    EXPECT_TRUE(got) << "no completion on queue " << qid;
    EXPECT_EQ(e.cid, cid);
    EXPECT_EQ(e.sqid, qid);
    NvmeCompletion c;
    while (ctrl.pop_completion(c)) EXPECT_LE(c.t_cqe, now);
    return e;
  }
  fisrig_nvme_cqe admin(fisrig_nvme_sqe s) { return run(0, s); }

  // Number of Queues, then a CQ of `entries` and an SQ of `sq_entries` (0: as many) for
  // each of qids 1..n.
  void make_io_queues(uint16_t n, uint32_t entries, uint32_t sq_entries = 0) {
    if (!sq_entries) sq_entries = entries;
    fisrig_nvme_sqe nq = sqe(FISRIG_NVME_ADMIN_SET_FEATURES);
    nq.cdw10 = FISRIG_NVME_FEAT_NUMBER_OF_QUEUES;
    nq.cdw11 = uint32_t(n - 1) << 16 | uint32_t(n - 1);
    ASSERT_EQ(status(admin(nq)), 0);
    for (uint16_t qid = 1; qid <= n; ++qid) {
      uint64_t cq = kIoQueues + qid * 0x20000ull, sq = cq + 0x10000;
      mem.write(cq, std::vector<uint8_t>(entries * 16, 0).data(), entries * 16);
      fisrig_nvme_sqe c = sqe(FISRIG_NVME_ADMIN_CREATE_IO_CQ);
      c.prp1 = cq, c.cdw10 = (entries - 1) << 16 | qid, c.cdw11 = 1;
      ASSERT_EQ(status(admin(c)), 0);
      fisrig_nvme_sqe s = sqe(FISRIG_NVME_ADMIN_CREATE_IO_SQ);
      s.prp1 = sq, s.cdw10 = (sq_entries - 1) << 16 | qid, s.cdw11 = uint32_t(qid) << 16 | 1;
      ASSERT_EQ(status(admin(s)), 0);
      queues[qid] = Queue{sq, cq, sq_entries, entries, 0, 0, true};
    }
  }

  // The status field without its phase bit: SCT << 8 | SC, as nvme-cli prints it.
  static int status(const fisrig_nvme_cqe& e) { return (e.status >> 1) & 0x7FF; }
  static constexpr int sc(uint32_t sct, uint32_t code) { return int(sct << 8 | code); }

  struct Queue {
    uint64_t sq = 0, cq = 0;
    uint32_t sq_entries = 0, cq_entries = 0, sq_tail = 0, cq_head = 0;
    bool phase = true;
  };
  nvme::SparseMemory mem;
  nvme::Controller ctrl;
  std::vector<Queue> queues;
  SimTime now = 0;
  uint16_t next_cid = 1;
};

}  // namespace fisrig::test
