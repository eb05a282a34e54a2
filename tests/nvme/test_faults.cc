// The SATA drive's fault knobs with their NVMe meanings (docs/nvme.md lists them).
#include "nvme_host.h"

namespace fisrig::test {
namespace {

drive::DriveConfig with(const char* knob, const char* value, const char* knob2 = nullptr, const char* value2 = nullptr) {
  drive::DriveConfig cfg = drive::load_profile("tiny-1gb");
  cfg.faults.set(knob, value);
  if (knob2) cfg.faults.set(knob2, value2);
  return cfg;
}

NvmeCompletion last(NvmeHost& h, fisrig_nvme_cqe* e, fisrig_nvme_sqe s, uint16_t qid = 1) {
  uint16_t cid = h.next_cid;
  EXPECT_TRUE(h.nvme::QueueHost::run(qid, s, *e));
  NvmeCompletion c, found;
  while (h.ctrl.pop_completion(c))
    if (c.cid == cid && c.sqid == qid) found = c;
  return found;
}

TEST(NvmeFaults, BusyAndLatencyOutliersDelayTheCommand) {
  NvmeHost busy(with("busy_rate", "1", "busy_us", "50"));
  busy.make_io_queues(1, 8);
  fisrig_nvme_cqe e{};
  NvmeCompletion c = last(busy, &e, sqe(FISRIG_NVME_CMD_FLUSH, 1));
  EXPECT_EQ(NvmeHost::status(e), 0);
  EXPECT_GE(c.t_cqe - c.t_fetch, 50000);
  NvmeHost late(with("latency_outlier_rate", "1", "latency_outlier_us", "200"));
  late.make_io_queues(1, 8);
  c = last(late, &e, sqe(FISRIG_NVME_CMD_FLUSH, 1));
  EXPECT_GE(c.t_cqe - c.t_fetch, 200000);
}

TEST(NvmeFaults, AHungControllerAnswersNothingUntilAReset) {
  // The admin commands that make the queues count: Set Features and two creations.
  NvmeHost h(with("hang_after_commands", "5"));
  h.make_io_queues(1, 8);
  EXPECT_EQ(NvmeHost::status(h.run(1, sqe(FISRIG_NVME_CMD_FLUSH, 1))), 0);
  EXPECT_EQ(NvmeHost::status(h.run(1, sqe(FISRIG_NVME_CMD_FLUSH, 1))), 0);
  h.submit(1, sqe(FISRIG_NVME_CMD_FLUSH, 1));
  h.ctrl.run_until(h.now += drive::kNsPerS);
  fisrig_nvme_cqe e{};
  EXPECT_FALSE(h.reap(1, e));
  EXPECT_TRUE(h.ctrl.ready());  // CSTS says nothing of it: the host's timeout finds it
  h.ctrl.write32(FISRIG_NVME_REG_CC, 0, h.now);  // a controller reset
  h.enable();
  h.make_io_queues(1, 8);
  EXPECT_EQ(NvmeHost::status(h.run(1, sqe(FISRIG_NVME_CMD_FLUSH, 1))), 0);
}

TEST(NvmeFaults, ALinkDropIsFatalToTheController) {
  NvmeHost h(with("link_drop_after_commands", "4"));
  h.make_io_queues(1, 8);
  EXPECT_EQ(NvmeHost::status(h.run(1, sqe(FISRIG_NVME_CMD_FLUSH, 1))), 0);
  h.submit(1, sqe(FISRIG_NVME_CMD_FLUSH, 1));
  h.ctrl.run_until(h.now += drive::kNsPerS);
  fisrig_nvme_cqe e{};
  EXPECT_FALSE(h.reap(1, e));
  EXPECT_TRUE(h.ctrl.csts() & FISRIG_NVME_CSTS_CFS);
}

TEST(NvmeFaults, BlocksTheMediaCannotFindAreMediaErrors) {
  NvmeHost h(with("idnf", "100+8"));
  h.make_io_queues(1, 8);
  EXPECT_EQ(NvmeHost::status(h.run(1, rw(FISRIG_NVME_CMD_READ, 96, 8, kData))),
            NvmeHost::sc(FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_UNRECOVERED_READ_ERROR));
  EXPECT_EQ(NvmeHost::status(h.run(1, rw(FISRIG_NVME_CMD_WRITE, 104, 8, kData))),
            NvmeHost::sc(FISRIG_NVME_SCT_MEDIA, FISRIG_NVME_SC_WRITE_FAULT));
  EXPECT_EQ(NvmeHost::status(h.run(1, rw(FISRIG_NVME_CMD_READ, 112, 8, kData))), 0);
  auto log = h.ctrl.smart_log(h.now);
  EXPECT_EQ(log[160], 2);  // media errors
}

TEST(NvmeFaults, BadLcrcsAreReplayedByTheLinkAndTheCommandsSucceed) {
  // Unlike SATA, where a Data FIS's bad CRC fails the command (ICRC), PCIe's link layer
  // sends a NAKed TLP again: the command ends well, its data later.
  NvmeHost clean;
  clean.make_io_queues(1, 8);
  fisrig_nvme_cqe e{};
  NvmeCompletion a = last(clean, &e, rw(FISRIG_NVME_CMD_READ, 0, 8, kData));
  NvmeHost bad(with("data_fis_crc_error_rate", "1", "r_err_rate", "1"));
  bad.make_io_queues(1, 8);
  NvmeCompletion b = last(bad, &e, rw(FISRIG_NVME_CMD_READ, 0, 8, kData));
  EXPECT_EQ(NvmeHost::status(e), 0);
  EXPECT_EQ(bad.ctrl.replays(), 16u);  // every 256-byte TLP of 4 KiB, once
  EXPECT_NEAR(double(b.t_data_last - b.t_data_first), 2.0 * double(a.t_data_last - a.t_data_first), 2.0);
  b = last(bad, &e, rw(FISRIG_NVME_CMD_WRITE, 0, 8, kData));
  EXPECT_EQ(NvmeHost::status(e), 0);
  EXPECT_EQ(bad.ctrl.replays(), 32u);  // and each completion bringing a write's data
}

}  // namespace
}  // namespace fisrig::test
