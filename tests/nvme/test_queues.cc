// The controller's registers, queues, doorbells and phase tags.
#include "nvme_host.h"

namespace fisrig::test {
namespace {

constexpr int kInvalidQid = NvmeHost::sc(FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_IDENTIFIER);

TEST(NvmeQueues, EnableReportsReadyAndItsCapabilities) {
  NvmeHost h;
  EXPECT_TRUE(h.ctrl.read32(FISRIG_NVME_REG_CSTS) & FISRIG_NVME_CSTS_RDY);
  uint64_t cap = h.ctrl.read64(FISRIG_NVME_REG_CAP);
  EXPECT_EQ(cap & 0xFFFF, 1023u);                      // MQES, 0's based
  EXPECT_EQ((cap >> FISRIG_NVME_CAP_CQR_SHIFT) & 1, 1u);
  EXPECT_EQ((cap >> FISRIG_NVME_CAP_CSS_SHIFT) & 1, 1u);  // the NVM command set
  EXPECT_EQ(h.ctrl.read32(FISRIG_NVME_REG_VS), 0x00020000u);
  // A controller reset (CC.EN 0) takes RDY away and every queue with it.
  h.ctrl.write32(FISRIG_NVME_REG_CC, 0, h.now);
  EXPECT_FALSE(h.ctrl.read32(FISRIG_NVME_REG_CSTS) & FISRIG_NVME_CSTS_RDY);
}

TEST(NvmeQueues, NothingIsAnsweredBeforeTheControllerIsEnabled) {
  nvme::SparseMemory mem;
  nvme::Controller ctrl(drive::load_profile("tiny-1gb"), mem);
  fisrig_nvme_sqe s = sqe(FISRIG_NVME_ADMIN_IDENTIFY);
  s.cdw10 = FISRIG_NVME_CNS_CONTROLLER;
  mem.write(kAsq, &s, sizeof s);
  ctrl.write32(ctrl.sq_doorbell(0), 1, 0);
  ctrl.run_until(drive::kNsPerS);
  nvme::NvmeCompletion c;
  EXPECT_FALSE(ctrl.pop_completion(c));
  EXPECT_EQ(ctrl.invalid_doorbell_writes(), 1u);
}

TEST(NvmeQueues, BadAdminQueuesFailTheEnable) {
  nvme::SparseMemory mem;
  nvme::Controller ctrl(drive::load_profile("tiny-1gb"), mem);
  ctrl.write32(FISRIG_NVME_REG_AQA, 31u << 16 | 31u, 0);
  ctrl.write64(FISRIG_NVME_REG_ASQ, kAsq + 8, 0);  // not page aligned
  ctrl.write64(FISRIG_NVME_REG_ACQ, kAcq, 0);
  ctrl.write32(FISRIG_NVME_REG_CC, FISRIG_NVME_CC_EN | 6u << 16 | 4u << 20, 0);
  EXPECT_FALSE(ctrl.ready());
  EXPECT_TRUE(ctrl.read32(FISRIG_NVME_REG_CSTS) & FISRIG_NVME_CSTS_CFS);
}

TEST(NvmeQueues, CreationAndDeletionCheckWhatTheyAreGiven) {
  NvmeHost h;
  // Before Number of Queues grants any, there is no I/O queue identifier to take.
  fisrig_nvme_sqe cq = sqe(FISRIG_NVME_ADMIN_CREATE_IO_CQ);
  cq.prp1 = kIoQueues, cq.cdw10 = 15u << 16 | 1, cq.cdw11 = 1;
  EXPECT_EQ(h.status(h.admin(cq)), kInvalidQid);
  h.make_io_queues(2, 16);
  // The granted count cannot change once I/O queues exist.
  fisrig_nvme_sqe nq = sqe(FISRIG_NVME_ADMIN_SET_FEATURES);
  nq.cdw10 = FISRIG_NVME_FEAT_NUMBER_OF_QUEUES, nq.cdw11 = 7u << 16 | 7u;
  EXPECT_EQ(h.status(h.admin(nq)), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_COMMAND_SEQUENCE_ERROR));
  // A queue identifier past those granted, a size past MQES, an SQ on a CQ that is not there.
  cq.cdw10 = 15u << 16 | 3;
  EXPECT_EQ(h.status(h.admin(cq)), kInvalidQid);
  fisrig_nvme_sqe big = sqe(FISRIG_NVME_ADMIN_CREATE_IO_CQ);
  big.prp1 = kIoQueues, big.cdw10 = 1024u << 16 | 1, big.cdw11 = 1;
  EXPECT_EQ(h.status(h.admin(big)), kInvalidQid);  // 1 is taken already
  fisrig_nvme_sqe del = sqe(FISRIG_NVME_ADMIN_DELETE_IO_CQ);
  del.cdw10 = 2;
  EXPECT_EQ(h.status(h.admin(del)), NvmeHost::sc(FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_DELETION));
  fisrig_nvme_sqe dsq = sqe(FISRIG_NVME_ADMIN_DELETE_IO_SQ);
  dsq.cdw10 = 2;
  EXPECT_EQ(h.status(h.admin(dsq)), 0);
  EXPECT_EQ(h.status(h.admin(del)), 0);
  fisrig_nvme_sqe sq = sqe(FISRIG_NVME_ADMIN_CREATE_IO_SQ);
  sq.prp1 = kIoQueues, sq.cdw10 = 15u << 16 | 2, sq.cdw11 = 2u << 16 | 1;
  EXPECT_EQ(h.status(h.admin(sq)), NvmeHost::sc(FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_COMPLETION_QUEUE_INVALID));
  fisrig_nvme_sqe size = sqe(FISRIG_NVME_ADMIN_CREATE_IO_CQ);
  size.prp1 = kIoQueues, size.cdw10 = 1024u << 16 | 2, size.cdw11 = 1;
  EXPECT_EQ(h.status(h.admin(size)), NvmeHost::sc(FISRIG_NVME_SCT_COMMAND_SPECIFIC, FISRIG_NVME_SC_INVALID_QUEUE_SIZE));
}

TEST(NvmeQueues, ThePhaseTagFlipsAtEachWrap) {
  NvmeHost h;
  h.make_io_queues(1, 4);
  for (int i = 0; i < 10; ++i) {
    fisrig_nvme_cqe e = h.run(1, sqe(FISRIG_NVME_CMD_FLUSH, 1));
    EXPECT_EQ(h.status(e), 0);
    // Entries 0..3 carry phase 1, the next four 0, then 1 again.
    EXPECT_EQ(bool(e.status & FISRIG_NVME_STATUS_P), (i / 4) % 2 == 0) << i;
    EXPECT_EQ(e.sqhd, (i + 1) % 4);
  }
}

TEST(NvmeQueues, ADoorbellPastTheQueuesEndIsIgnoredAndReported) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  uint16_t aer = h.submit(0, sqe(FISRIG_NVME_ADMIN_ASYNC_EVENT_REQUEST));
  h.ctrl.run_until(h.now += drive::kNsPerMs);
  fisrig_nvme_cqe e{};
  EXPECT_FALSE(h.reap(0, e));  // outstanding until an event
  h.ctrl.write32(h.ctrl.sq_doorbell(1), 8, h.now);  // the queue has entries 0..7
  EXPECT_EQ(h.ctrl.invalid_doorbell_writes(), 1u);
  h.ctrl.run_until(h.now += drive::kNsPerMs);
  ASSERT_TRUE(h.reap(0, e));
  EXPECT_EQ(e.cid, aer);
  EXPECT_EQ(e.dw0, 0x010100u);  // error event, Invalid Doorbell Write Value, log page 01h
  // The queue still works.
  EXPECT_EQ(h.status(h.run(1, sqe(FISRIG_NVME_CMD_FLUSH, 1))), 0);
}

TEST(NvmeQueues, AFullCompletionQueueHoldsItsEntriesUntilTheHostMakesRoom) {
  NvmeHost h;
  h.make_io_queues(1, 4, 8);
  nvme::NvmeCompletion c;
  while (h.ctrl.pop_completion(c)) {  // the admin commands' completions
  }
  // Three commands fill a CQ of four (one entry stays empty); the fourth waits.
  for (int i = 0; i < 4; ++i) h.submit(1, sqe(FISRIG_NVME_CMD_FLUSH, 1));
  h.ctrl.run_until(h.now + drive::kNsPerS);
  fisrig_nvme_cqe e{};
  int got = 0;
  while (h.ctrl.pop_completion(c)) ++got;
  EXPECT_EQ(got, 3);
  ASSERT_TRUE(h.reap(1, e));  // the head doorbell makes room: the fourth is posted
  EXPECT_TRUE(h.ctrl.pop_completion(c));
}

}  // namespace
}  // namespace fisrig::test

namespace fisrig::test {
namespace {

TEST(NvmeQueues, DeletingASubmissionQueueAbortsWhatItHadNotFetched) {
  NvmeHost h;
  h.make_io_queues(1, 8);
  nvme::NvmeCompletion c;
  while (h.ctrl.pop_completion(c)) {
  }
  // Three flushes and the deletion rung at once: round robin takes one flush, then the
  // admin queue's deletion, which ends the other two Aborted due to SQ Deletion.
  for (int i = 0; i < 3; ++i) h.put(1, sqe(FISRIG_NVME_CMD_FLUSH, 1));
  h.ring(1);
  fisrig_nvme_sqe del = sqe(FISRIG_NVME_ADMIN_DELETE_IO_SQ);
  del.cdw10 = 1;
  h.submit(0, del);
  h.ctrl.run_until(h.now += drive::kNsPerS);
  std::vector<int> on_cq1;
  fisrig_nvme_cqe e{};
  while (h.reap(1, e)) on_cq1.push_back(NvmeHost::status(e));
  const int aborted = NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_ABORTED_SQ_DELETION);
  EXPECT_EQ(on_cq1, (std::vector<int>{0, aborted, aborted}));
  ASSERT_TRUE(h.reap(0, e));
  EXPECT_EQ(NvmeHost::status(e), 0);  // the deletion itself
  EXPECT_FALSE(h.reap(0, e));         // nothing of queue 1's on the admin queue
}

TEST(NvmeQueues, IoQueuesNeedTheSpecificationsEntrySizes) {
  // A fresh host (nothing posted yet), its controller enabled again without CC's I/O entry sizes.
  nvme::QueueHost h(drive::load_profile("tiny-1gb"));
  h.ctrl.write32(FISRIG_NVME_REG_CC, 0, h.now);
  h.ctrl.write32(FISRIG_NVME_REG_CC, FISRIG_NVME_CC_EN, h.now);  // no IOSQES, IOCQES
  h.ctrl.run_until(h.now += drive::kNsPerS);
  h.queues[0] = nvme::QueueHost::Queue{kAsq, kAcq, nvme::QueueHost::kAdminEntries, nvme::QueueHost::kAdminEntries, 0, 0, true};
  EXPECT_TRUE(h.ctrl.ready());  // the admin queue works without them
  EXPECT_EQ(h.make_io_queues(1, 8), NvmeHost::sc(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_FIELD));
}

}  // namespace
}  // namespace fisrig::test
