// The controller's tests' host: the queue host (fisrig/nvme/queue_host.h), with every
// command it runs checked to be answered on its queue under its id.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fisrig/nvme/queue_host.h"

namespace fisrig::test {

using nvme::NvmeCompletion;
using nvme::SimTime;

constexpr uint64_t kAsq = nvme::QueueHost::kAsq, kAcq = nvme::QueueHost::kAcq;
constexpr uint64_t kIoQueues = nvme::QueueHost::kIoQueues, kData = nvme::QueueHost::kData;

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

class NvmeHost : public nvme::QueueHost {
 public:
  explicit NvmeHost(drive::DriveConfig profile = drive::load_profile("tiny-1gb")) : nvme::QueueHost(std::move(profile)) {}

  // One command, answered on its queue under its id; the controller's account of each
  // completion says it was posted by the host's clock.
  fisrig_nvme_cqe run(uint16_t qid, fisrig_nvme_sqe s) {
    uint16_t cid = next_cid;
    fisrig_nvme_cqe e{};
    EXPECT_TRUE(nvme::QueueHost::run(qid, s, e)) << "no completion on queue " << qid;
    EXPECT_EQ(e.cid, cid);
    EXPECT_EQ(e.sqid, qid);
    NvmeCompletion c;
    while (ctrl.pop_completion(c)) EXPECT_LE(c.t_cqe, now);
    return e;
  }
  fisrig_nvme_cqe admin(fisrig_nvme_sqe s) { return run(0, s); }
  void make_io_queues(uint16_t n, uint32_t entries, uint32_t sq_entries = 0) {
    ASSERT_EQ(nvme::QueueHost::make_io_queues(n, entries, sq_entries), 0);
  }
  static constexpr int sc(uint32_t sct, uint32_t code) { return int(sct << 8 | code); }
};

}  // namespace fisrig::test
