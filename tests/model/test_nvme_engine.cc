// The model target's NVMe engine (sim/model/nvme_engine.h) behind the VM: NVMe descriptors
// of three ring entries, records with engine_if.h's NVMe stamps in their order, queues kept
// at their depth, data checked and landed in RAM, status codes, a cut and a controller
// reset, and a VM without an NVMe engine refusing NVMe instructions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <memory>

#include "model_run.h"
#include "nvme_engine.h"

namespace fisrig::test {
namespace {

struct NvmeRun {
  fisrig_vm_status status;
  std::vector<fisrig_run_record> records;
  const char* error_text = nullptr;
  std::vector<uint8_t> window;  // the data window after the run
};

NvmeRun run_nvme(const std::vector<uint8_t>& program, drive::DriveConfig cfg = tiny()) {
  model::NvmeEngineModel engine(cfg);
  fisrig_engine_ops ops = engine.ops();
  NvmeRun r;
  fisrig_record_sink sink{&r.records, &collect, nullptr, nullptr};
  fisrig_vm vm;
  auto nvme = std::make_unique<fisrig_vm_nvme>();
  fisrig_vm_init(&vm, &ops, &sink);
  fisrig_vm_nvme_init(&vm, nvme.get(), engine.io_queues(), engine.queue_entries());
  r.status = fisrig_vm_run(&vm, program.data(), uint32_t(program.size()));
  r.error_text = vm.error_text;
  r.window.assign(ops.data_window, ops.data_window + 8192);
  return r;
}

fisrig_nvme_cpl_record nvme_cpl(const fisrig_run_record& r) {
  fisrig_nvme_cpl_record c;
  std::memcpy(&c, &r.cpl, sizeof c);
  return c;
}

fisrig_nvme_sqe rw(uint8_t opcode, uint64_t slba, uint32_t blocks) {
  fisrig_nvme_sqe s{};
  s.opcode = opcode;
  s.nsid = 1;
  s.cdw10 = uint32_t(slba), s.cdw11 = uint32_t(slba >> 32), s.cdw12 = blocks - 1;
  return s;
}

constexpr uint16_t kStatusMask = 0x7FE;  // SCT and SC

TEST(NvmeEngine, AWriteReadsBackCheckedWithItsStampsInOrder) {
  ProgramBuilder p;
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_WRITE, 100, 16), 16 * 512, FISRIG_DATA_STAMP, 5, 0, FISRIG_RESULT_OK);
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, 100, 16), 16 * 512, FISRIG_DATA_STAMP, 5, FISRIG_DESC_CHECK, FISRIG_RESULT_OK);
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, 100, 16), 16 * 512, FISRIG_DATA_STAMP, 6, FISRIG_DESC_CHECK);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  auto cmds = commands_of(ModelRun{r.status, r.records});
  ASSERT_EQ(cmds.size(), 3u);
  for (const auto& rec : cmds) {
    fisrig_nvme_cpl_record c = nvme_cpl(rec);
    EXPECT_EQ(rec.protocol, FISRIG_PROTO_NVME);
    EXPECT_EQ(rec.lba, 100u);
    EXPECT_EQ(rec.lbas, 16u);
    EXPECT_EQ(c.qid, 1u);
    EXPECT_EQ(c.blocks, 16u);
    EXPECT_EQ(c.data_dwords, 16u * 128);
    // engine_if.h's order: submit, doorbell, SQE in, data, CQE, then the MSI-X message.
    EXPECT_LT(c.ts_submit, c.ts_doorbell);
    EXPECT_LT(c.ts_doorbell, c.ts_sqe);
    EXPECT_LT(c.ts_sqe, c.ts_data_first);
    EXPECT_LT(c.ts_data_first, c.ts_data_last);
    EXPECT_LT(c.ts_data_last, c.ts_cqe);
    EXPECT_LT(c.ts_cqe, c.ts_irq);
  }
  EXPECT_EQ(cmds[0].command, FISRIG_NVME_CMD_WRITE);
  EXPECT_EQ(cmds[0].seq, 5u);  // a stamp write's sequence, for the power-loss verdicts
  EXPECT_EQ(cmds[1].cpl.result, FISRIG_RESULT_OK);
  EXPECT_EQ(cmds[1].cpl.check_errors, 0u);
  EXPECT_EQ(cmds[2].cpl.result, FISRIG_RESULT_CHECK_FAILED);  // another write's data
  EXPECT_EQ(cmds[2].cpl.check_errors, 16u);
}

TEST(NvmeEngine, ReadsIntoRamLandTheStampsTheWriteCarried) {
  ProgramBuilder p;
  p.nvme_raw(2, rw(FISRIG_NVME_CMD_WRITE, 7, 1), 512, FISRIG_DATA_STAMP, 9, 0, FISRIG_RESULT_OK);
  p.nvme_raw(2, rw(FISRIG_NVME_CMD_READ, 7, 1), 512, FISRIG_DATA_RAM, 0, 0, FISRIG_RESULT_OK);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  uint32_t want[FISRIG_SECTOR_DWORDS];
  fisrig_pattern_sector(FISRIG_DATA_STAMP, 7, 9, 100, want);
  EXPECT_EQ(std::memcmp(r.window.data(), want, 512), 0);
}

TEST(NvmeEngine, StatusCodesComeBackAsTheControllerGaveThem) {
  const uint64_t blocks = tiny().user_sectors;
  ProgramBuilder p;
  // Past the namespace's end: LBA Out of Range (generic, 80h), the device's error.
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, blocks, 8), 4096, FISRIG_DATA_NONE, 0, 0, FISRIG_RESULT_ATA_ERROR,
             kStatusMask, fisrig_nvme_status(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_LBA_OUT_OF_RANGE, 0));
  // An opcode the NVM command set does not have: Invalid Command Opcode.
  fisrig_nvme_sqe bad{};
  bad.opcode = 0x7C;
  bad.nsid = 1;
  p.nvme_raw(1, bad, 0, FISRIG_DATA_NONE, 0, 0, FISRIG_RESULT_ATA_ERROR, kStatusMask,
             fisrig_nvme_status(FISRIG_NVME_SCT_GENERIC, FISRIG_NVME_SC_INVALID_OPCODE, 0));
  // Identify Controller on the admin queue, into RAM.
  fisrig_nvme_sqe id{};
  id.opcode = FISRIG_NVME_ADMIN_IDENTIFY;
  id.cdw10 = FISRIG_NVME_CNS_CONTROLLER;
  p.nvme_raw(0, id, 4096, FISRIG_DATA_RAM, 0, 0, FISRIG_RESULT_OK, kStatusMask, 0);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  auto cmds = commands_of(ModelRun{r.status, r.records});
  ASSERT_EQ(cmds.size(), 3u);
  EXPECT_EQ(nvme_cpl(cmds[0]).status >> 1 & 0xFF, FISRIG_NVME_SC_LBA_OUT_OF_RANGE);
  EXPECT_EQ(nvme_cpl(cmds[0]).blocks, 0u);
  EXPECT_EQ(nvme_cpl(cmds[2]).qid, 0u);
  // Identify's model number (bytes 24..63) is the profile's.
  std::string mn(reinterpret_cast<const char*>(r.window.data()) + 24, 40);
  EXPECT_EQ(mn.substr(0, tiny().identity.model.size()), tiny().identity.model);
}

TEST(NvmeEngine, AMissedExpectationEndsTheRun) {
  ProgramBuilder p;
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, 0, 8), 4096, FISRIG_DATA_NONE, 0, 0, FISRIG_RESULT_ATA_ERROR);
  NvmeRun r = run_nvme(p.build());
  EXPECT_EQ(r.status, FISRIG_VM_EXPECT_FAILED);
}

TEST(NvmeEngine, AWorkloadKeepsEachQueueAtItsDepth) {
  fisrig_op_workload w = ProgramBuilder::random_4k(32, false, 100, 4000, tiny().user_sectors);
  w.queues = 4;
  ProgramBuilder p;
  p.nvme_workload(w);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  auto cmds = commands_of(ModelRun{r.status, r.records});
  ASSERT_EQ(cmds.size(), 4000u);
  // In flight over time, by queue and in all: at most 32 a queue, and 128 reached.
  std::vector<std::pair<uint64_t, int>> edges;
  std::map<uint16_t, std::vector<std::pair<uint64_t, int>>> by_queue;
  for (const auto& rec : cmds) {
    fisrig_nvme_cpl_record c = nvme_cpl(rec);
    ASSERT_EQ(c.result, FISRIG_RESULT_OK);
    ASSERT_GE(c.qid, 1u);
    ASSERT_LE(c.qid, 4u);
    edges.push_back({c.ts_submit, 1}), edges.push_back({c.ts_cqe, -1});
    by_queue[c.qid].push_back({c.ts_submit, 1}), by_queue[c.qid].push_back({c.ts_cqe, -1});
  }
  auto most = [](std::vector<std::pair<uint64_t, int>> e) {
    std::sort(e.begin(), e.end(), [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
    int n = 0, m = 0;
    for (auto [t, d] : e) m = std::max(m, n += d);
    return m;
  };
  EXPECT_EQ(most(edges), 128);
  ASSERT_EQ(by_queue.size(), 4u);
  for (auto& [q, e] : by_queue) EXPECT_EQ(most(e), 32) << "queue " << q;
}

TEST(NvmeEngine, AWorkloadsDeallocatesAndFlushesAreNvmeCommands) {
  fisrig_op_workload w = ProgramBuilder::random_4k(8, false, 40, 600, tiny().user_sectors);
  w.queues = 2;
  w.trim_pct = 30;
  w.flush_pct = 10;
  ProgramBuilder p;
  p.nvme_workload(w);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  std::map<uint8_t, int> ops;
  for (const auto& rec : commands_of(ModelRun{r.status, r.records})) {
    ++ops[rec.command];
    EXPECT_EQ(rec.cpl.result, FISRIG_RESULT_OK);
    if (rec.command == FISRIG_NVME_CMD_DATASET_MANAGEMENT) {
      EXPECT_EQ(rec.lbas, 8u);
    }
  }
  EXPECT_GT(ops[FISRIG_NVME_CMD_READ], 150);
  EXPECT_GT(ops[FISRIG_NVME_CMD_DATASET_MANAGEMENT], 100);
  EXPECT_GT(ops[FISRIG_NVME_CMD_FLUSH], 20);
  EXPECT_GT(ops[FISRIG_NVME_CMD_WRITE], 60);
}

// A cut at a time in a write workload: the cut's record, every command in flight LINK_LOST,
// and after POWER ON the controller back (LINK_UP) and commands answered again.
TEST(NvmeEngine, ACutEndsWhatWasInFlightAndPowerOnBringsTheControllerBack) {
  fisrig_op_workload w = ProgramBuilder::random_4k(16, false, 0, 1000000, tiny().user_sectors);
  w.queues = 2;
  w.stop_commands = 0;
  w.stop_ticks = 30 * FISRIG_TICK_HZ / 1000;  // 30 ms
  ProgramBuilder p;
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 0, FISRIG_EVENT_TIME);
  arm.timeout_ticks = 5 * FISRIG_TICK_HZ / 1000;  // 5 ms after the arming
  p.raw(arm, ProgramBuilder::ok());
  p.nvme_workload(w);
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_ON, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_LINK, FISRIG_LINK_WAIT_UP, 0, 0), ProgramBuilder::ok());
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, 0, 8), 4096, FISRIG_DATA_NONE, 0, 0, FISRIG_RESULT_OK);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  int cut = -1, up = -1, lost = 0, ok_before = 0;
  for (size_t i = 0; i < r.records.size(); ++i) {
    const auto& rec = r.records[i];
    if (rec.kind == FISRIG_RECORD_POWER && rec.cpl.user_tag == FISRIG_USER_TAG_EVENT) {
      if (rec.cpl.slot == FISRIG_EVENT_REC_POWER_CUT) cut = int(i);
      if (rec.cpl.slot == FISRIG_EVENT_REC_LINK_UP) up = int(i);
    }
    if (rec.kind == FISRIG_RECORD_COMMAND && rec.protocol == FISRIG_PROTO_NVME) {
      if (cut < 0) {
        ok_before += rec.cpl.result == FISRIG_RESULT_OK;
      } else if (up < 0) {
        lost += rec.cpl.result == FISRIG_RESULT_LINK_LOST;
      }
    }
  }
  ASSERT_GE(cut, 0);
  ASSERT_GT(up, cut);
  EXPECT_GT(ok_before, 10);
  EXPECT_GT(lost, 0);
  EXPECT_LE(lost, 32);
  // The cut 5 ms after its arming, on the engine's clock.
  const auto& c = r.records[size_t(cut)].cpl;
  fisrig_cut_record cr;
  std::memcpy(&cr, &c, sizeof cr);
  EXPECT_EQ(cr.ts_status - cr.ts_trigger, 5 * FISRIG_TICK_HZ / 1000);
  const auto& last = commands_of(ModelRun{r.status, r.records}).back();
  EXPECT_EQ(last.cpl.result, FISRIG_RESULT_OK);
}

TEST(NvmeEngine, ACutMidBootLeavesTheControllerDownUntilTheNextPowerOn) {
  // Power off, a cut armed for 50 ms on, power on: the SSD boots for 200 ms (the profile's
  // power.boot_ms), so the cut falls mid-boot, on its time, with no LINK_UP before it. The
  // next POWER ON boots the drive again, and a read goes through.
  ProgramBuilder p;
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF, 0, 0), ProgramBuilder::ok());
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 0, FISRIG_EVENT_TIME);
  arm.timeout_ticks = 50 * FISRIG_TICK_HZ / 1000;
  p.raw(arm, ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_ON, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_ON, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_LINK, FISRIG_LINK_WAIT_UP, 0, 0), ProgramBuilder::ok());
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, 0, 8), 4096, FISRIG_DATA_NONE, 0, 0, FISRIG_RESULT_OK);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  std::vector<uint8_t> events;  // the engine's power and link events, in order
  fisrig_cut_record cr{};        // the last cut's
  uint64_t up_at = 0;
  for (const auto& rec : r.records) {
    if (rec.kind != FISRIG_RECORD_POWER || rec.cpl.user_tag != FISRIG_USER_TAG_EVENT) continue;
    events.push_back(rec.cpl.slot);
    if (rec.cpl.slot == FISRIG_EVENT_REC_POWER_CUT) std::memcpy(&cr, &rec.cpl, sizeof cr);
    if (rec.cpl.slot == FISRIG_EVENT_REC_LINK_UP) up_at = rec.cpl.ts_status;
  }
  // The power off's own cut, the mid-boot cut, then the one LINK_UP.
  ASSERT_EQ(events, (std::vector<uint8_t>{FISRIG_EVENT_REC_POWER_CUT, FISRIG_EVENT_REC_POWER_CUT, FISRIG_EVENT_REC_LINK_UP}));
  EXPECT_EQ(cr.ts_status - cr.ts_trigger, 50 * FISRIG_TICK_HZ / 1000);  // on its time, mid-boot
  // The second boot takes the whole 200 ms from the cut.
  EXPECT_GE(up_at - cr.ts_status, 200 * FISRIG_TICK_HZ / 1000);
  EXPECT_EQ(commands_of(ModelRun{r.status, r.records}).back().cpl.result, FISRIG_RESULT_OK);
}

// A cut at the count-th TLP of a kind (engine_if.h enum fisrig_tlp_event) falls on that
// TLP's end: four one-block writes at QD1, the cut at the second's doorbell, SQE, first or
// last data TLP (a block's write is two 256-byte completions) or CQE; the cut's record
// counts what the controller had of the command in flight, whose LINK_LOST record has the
// stamps it had by then.
struct TlpCut {
  fisrig_nvme_cut_record cut{};
  std::vector<fisrig_nvme_cpl_record> cmds;  // the writes' records, in order
};

TlpCut cut_at_tlp(uint8_t kind, uint16_t count) {
  ProgramBuilder p;
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 0, kind);
  arm.count = count;
  p.raw(arm, ProgramBuilder::ok());
  for (int i = 0; i < 4; ++i) p.nvme_raw(1, rw(FISRIG_NVME_CMD_WRITE, 64 + 8 * i, 1), 512, FISRIG_DATA_STAMP, 10 + i);
  NvmeRun r = run_nvme(p.build());
  EXPECT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  TlpCut out;
  int cuts = 0;
  for (const auto& rec : r.records) {
    if (rec.kind == FISRIG_RECORD_POWER && rec.cpl.user_tag == FISRIG_USER_TAG_EVENT &&
        rec.cpl.slot == FISRIG_EVENT_REC_POWER_CUT) {
      std::memcpy(&out.cut, &rec.cpl, sizeof out.cut);
      // The VM moves the counts to the run record's words (program.h FISRIG_RECORD_POWER).
      out.cut.cmds_sent = uint32_t(rec.lba), out.cut.cmds_fetched = uint32_t(rec.lba >> 32);
      out.cut.cmds_data = rec.lbas, out.cut.cmds_done = rec.seq;
      ++cuts;
    }
    if (rec.kind == FISRIG_RECORD_COMMAND && rec.protocol == FISRIG_PROTO_NVME) out.cmds.push_back(nvme_cpl(rec));
  }
  EXPECT_EQ(cuts, 1);
  EXPECT_EQ(out.cmds.size(), 4u);
  return out;
}

TEST(NvmeEngine, ACutAtATlpOfAKindFallsOnItsEnd) {
  {
    TlpCut c = cut_at_tlp(FISRIG_EVENT_DOORBELL, 2);
    ASSERT_EQ(c.cmds.size(), 4u);
    EXPECT_EQ(c.cut.ts_trigger, c.cmds[1].ts_doorbell);
    EXPECT_EQ(c.cut.ts_status, c.cut.ts_trigger);
    EXPECT_EQ(c.cmds[0].result, FISRIG_RESULT_OK);
    EXPECT_EQ(c.cmds[1].result, FISRIG_RESULT_LINK_LOST);
    EXPECT_EQ(c.cmds[1].ts_sqe, 0u);  // its SQE had not come in
    EXPECT_EQ(c.cut.cmds_sent, 1u);
    EXPECT_EQ(c.cut.cmds_fetched, 0u);
  }
  {
    TlpCut c = cut_at_tlp(FISRIG_EVENT_SQE, 2);
    ASSERT_EQ(c.cmds.size(), 4u);
    EXPECT_EQ(c.cut.ts_trigger, c.cmds[1].ts_sqe);
    EXPECT_EQ(c.cmds[1].result, FISRIG_RESULT_LINK_LOST);
    EXPECT_EQ(c.cmds[1].ts_data_first, 0u);
    EXPECT_EQ(c.cut.cmds_fetched, 1u);
    EXPECT_EQ(c.cut.cmds_data, 0u);
  }
  {
    TlpCut c = cut_at_tlp(FISRIG_EVENT_DATA_TLP, 3);  // the second write's first data TLP
    ASSERT_EQ(c.cmds.size(), 4u);
    EXPECT_GT(c.cut.ts_trigger, c.cmds[1].ts_data_first);  // its end: 276 bytes at 3.94 a ns
    EXPECT_LE(c.cut.ts_trigger - c.cmds[1].ts_data_first, 11u);
    EXPECT_EQ(c.cmds[1].result, FISRIG_RESULT_LINK_LOST);
    EXPECT_EQ(c.cmds[1].ts_data_last, 0u);  // its last TLP had not crossed
    EXPECT_EQ(c.cut.cmds_data, 1u);
    TlpCut d = cut_at_tlp(FISRIG_EVENT_DATA_TLP, 4);  // its last one
    EXPECT_EQ(d.cut.ts_trigger, d.cmds[1].ts_data_last);
    EXPECT_EQ(d.cmds[1].data_dwords, 128u);
  }
  {
    TlpCut c = cut_at_tlp(FISRIG_EVENT_CQE, 2);
    ASSERT_EQ(c.cmds.size(), 4u);
    EXPECT_EQ(c.cut.ts_trigger, c.cmds[1].ts_cqe);
    EXPECT_EQ(c.cmds[1].result, FISRIG_RESULT_OK);  // its CQE was written: it ended
    EXPECT_EQ(c.cmds[2].result, FISRIG_RESULT_LINK_LOST);
    EXPECT_EQ(c.cut.cmds_sent, 0u);
  }
}

// The verify pass over NVMe: Identify Namespace first (its NSZE), then reads of the span,
// each sector's finding as the SATA pass gives it.
TEST(NvmeEngine, TheVerifyPassReadsOverNvme) {
  ProgramBuilder p;
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_WRITE, 16, 8), 8 * 512, FISRIG_DATA_STAMP, 77, 0, FISRIG_RESULT_OK);
  p.verify(8, 24, 8, true);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  std::vector<fisrig_run_record> stamps, ids, reads;
  for (const auto& rec : r.records) {
    if (rec.kind == FISRIG_RECORD_STAMP) stamps.push_back(rec);
    if (rec.kind == FISRIG_RECORD_IDENTIFY) ids.push_back(rec);
    if (rec.kind == FISRIG_RECORD_COMMAND && rec.command == FISRIG_NVME_CMD_READ) reads.push_back(rec);
  }
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].protocol, FISRIG_PROTO_NVME);
  EXPECT_EQ(ids[0].cpl.result, FISRIG_RESULT_OK);
  EXPECT_EQ(ids[0].lba, tiny().user_sectors);  // NSZE: the namespace's blocks
  EXPECT_NE(ids[0].seq, 0u);
  EXPECT_EQ(reads.size(), 3u);
  // Zeros, the write's 8 stamps (sequence 77), zeros.
  ASSERT_EQ(stamps.size(), 3u);
  EXPECT_EQ(stamps[0].detail, FISRIG_FOUND_ZEROS);
  EXPECT_EQ(stamps[1].detail, FISRIG_FOUND_STAMP);
  EXPECT_EQ(stamps[1].seq, 77u);
  EXPECT_EQ(stamps[1].lba, 16u);
  EXPECT_EQ(stamps[1].lbas, 8u);
  EXPECT_EQ(stamps[2].detail, FISRIG_FOUND_ZEROS);
  for (const auto& s : stamps) EXPECT_EQ(s.protocol, FISRIG_PROTO_NVME);
}

// A trace replayed over NVMe: its entries in order over the queues it asks for, its TRIMs
// deallocates and its flushes Flushes; a replay of its entries with its TRIMs left out; an
// entry over the engine's 2 MiB refused.
TEST(NvmeEngine, ATraceReplaysOverItsQueues) {
  std::vector<fisrig_trace_entry> entries;
  for (uint32_t i = 0; i < 200; ++i) {
    fisrig_trace_entry e{};
    e.lba = 64 * i;
    e.sectors = 8 << (i % 3);
    e.op = uint8_t(i % 10 == 9 ? FISRIG_TRACE_FLUSH : i % 10 == 8 ? FISRIG_TRACE_TRIM : i % 2 ? FISRIG_TRACE_READ
                                                                                              : FISRIG_TRACE_WRITE);
    entries.push_back(e);
  }
  ProgramBuilder p;
  const uint32_t first = p.at();
  p.trace(entries, 8, true, FISRIG_TRIMS_AS_QUEUE, 0, 4);
  p.trace(entries, 8, true, FISRIG_TRIMS_SKIP, first, 2);
  NvmeRun r = run_nvme(p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  auto cmds = commands_of(ModelRun{r.status, r.records});
  ASSERT_EQ(cmds.size(), 200u + 180u);
  std::map<uint8_t, int> ops;
  std::set<uint16_t> queues_first, queues_second;
  for (size_t i = 0; i < cmds.size(); ++i) {
    const fisrig_nvme_cpl_record c = nvme_cpl(cmds[i]);
    EXPECT_EQ(c.result, FISRIG_RESULT_OK);
    (i < 200 ? queues_first : queues_second).insert(c.qid);
    if (i < 200) ++ops[cmds[i].command];
  }
  EXPECT_EQ(ops[FISRIG_NVME_CMD_DATASET_MANAGEMENT], 20);
  EXPECT_EQ(ops[FISRIG_NVME_CMD_FLUSH], 20);
  EXPECT_EQ(ops[FISRIG_NVME_CMD_READ], 80);
  EXPECT_EQ(ops[FISRIG_NVME_CMD_WRITE], 80);
  EXPECT_EQ(queues_first, (std::set<uint16_t>{1, 2, 3, 4}));
  EXPECT_EQ(queues_second, (std::set<uint16_t>{1, 2}));
  // The reads and writes cover their entries' LBAs and blocks.
  for (const auto& rec : cmds)
    if (rec.command == FISRIG_NVME_CMD_READ || rec.command == FISRIG_NVME_CMD_WRITE) {
      EXPECT_EQ(rec.lba % 64, 0u);
      EXPECT_EQ(rec.lbas, 8u << (rec.lba / 64 % 3));
    }
  entries[5].sectors = FISRIG_NVME_DATA_MAX / 512 + 1;
  ProgramBuilder big;
  big.trace(entries, 8, true, FISRIG_TRIMS_AS_QUEUE, 0, 1);
  NvmeRun b = run_nvme(big.build());
  EXPECT_EQ(b.status, FISRIG_VM_BAD_PROGRAM);
  EXPECT_STREQ(b.error_text, "a trace entry over the NVMe engine's 2 MiB");
}

TEST(NvmeEngine, ACommandPastItsTimeoutEndsAndTheControllerIsReset) {
  drive::DriveConfig cfg = tiny();
  // The engine's bring-up is 33 admin commands (Number of Queues, and a CQ and an SQ for
  // each of 16 pairs); the controller hangs at the 41st command since a reset, I/O's 8th.
  cfg.faults.set("hang_after_commands", "40");
  ProgramBuilder p;
  fisrig_op_policy pol{};
  pol.timeout_ticks = FISRIG_TICK_HZ / 100;  // 10 ms
  p.add(pol, FISRIG_OP_POLICY);
  fisrig_op_workload w = ProgramBuilder::random_4k(4, false, 100, 40, tiny().user_sectors);
  w.queues = 1;
  p.nvme_workload(w);
  NvmeRun r = run_nvme(p.build(), cfg);
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  std::map<uint8_t, int> results;
  for (const auto& rec : commands_of(ModelRun{r.status, r.records})) ++results[rec.cpl.result];
  EXPECT_GE(results[FISRIG_RESULT_TIMEOUT], 2);     // the 8th command, and again after the reset
  EXPECT_GE(results[FISRIG_RESULT_LINK_LOST], 3);   // the rest in flight, at each reset
  EXPECT_GE(results[FISRIG_RESULT_OK], 14);         // 7 answered each time the controller came back
}

// The same with the policy's requeue: what a reset ended goes again (its record says so),
// and every command the workload drew ends OK or in its own timeout. The controller hangs
// at I/O's 28th command since a reset (33 of the 60 are the bring-up's), so the 40 need two.
TEST(NvmeEngine, CommandsAResetEndedGoAgainUnderRequeue) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.set("hang_after_commands", "60");
  ProgramBuilder p;
  fisrig_op_policy pol{};
  pol.on_error = FISRIG_ON_ERROR_REQUEUE;
  pol.timeout_ticks = FISRIG_TICK_HZ / 100;
  p.add(pol, FISRIG_OP_POLICY);
  fisrig_op_workload w = ProgramBuilder::random_4k(4, false, 100, 40, tiny().user_sectors);
  w.queues = 2;
  p.nvme_workload(w);
  NvmeRun r = run_nvme(p.build(), cfg);
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  int ok = 0, timeouts = 0, again = 0;
  for (const auto& rec : commands_of(ModelRun{r.status, r.records})) {
    ok += rec.cpl.result == FISRIG_RESULT_OK;
    timeouts += rec.cpl.result == FISRIG_RESULT_TIMEOUT;
    if (rec.cpl.result == FISRIG_RESULT_LINK_LOST) {
      EXPECT_TRUE(rec.detail & FISRIG_DETAIL_SENT_AGAIN);
      ++again;
    }
  }
  EXPECT_GT(again, 0);
  EXPECT_GT(timeouts, 0);
  EXPECT_EQ(ok + timeouts, 40);
}

TEST(NvmeEngine, AVmWithoutAnNvmeEngineRefusesNvmeInstructions) {
  drive::Drive d(tiny());
  ProgramBuilder p;
  p.nvme_raw(1, rw(FISRIG_NVME_CMD_READ, 0, 8), 4096);
  ModelRun r = run(d, p.build());
  EXPECT_EQ(r.status, FISRIG_VM_BAD_PROGRAM);
  EXPECT_STREQ(r.error_text, "an NVMe instruction, and this rig's engine is not an NVMe one");
}

TEST(NvmeEngine, BadNvmeInstructionsAreRefusedBeforeTheRun) {
  fisrig_op_workload w = ProgramBuilder::random_4k(64, false, 100, 10, 1000);
  w.queues = 8;  // 512 in flight
  NvmeRun r = run_nvme(ProgramBuilder().nvme_workload(w).build());
  EXPECT_EQ(r.status, FISRIG_VM_BAD_PROGRAM);
  EXPECT_STREQ(r.error_text, "queues x queue depth over the 256 NVMe commands the VM keeps in flight");
  w.queues = 0;
  r = run_nvme(ProgramBuilder().nvme_workload(w).build());
  EXPECT_STREQ(r.error_text, "an NVMe workload needs a queue or more");
  w.queues = 1;
  w.queue_depth = 8;
  ProgramBuilder sata;
  sata.workload(w);
  r = run_nvme(sata.build());
  EXPECT_STREQ(r.error_text, "a SATA workload has no queues");
  fisrig_nvme_sqe s = rw(FISRIG_NVME_CMD_READ, 0, 8);
  r = run_nvme(ProgramBuilder().nvme_raw(1, s, 4 << 20).build());
  EXPECT_STREQ(r.error_text, "NVMe RAW data over the engine's 2 MiB");
  r = run_nvme(ProgramBuilder().nvme_raw(17, s, 4096).build());
  EXPECT_STREQ(r.error_text, "NVMe RAW on a queue the engine does not have");
}

}  // namespace
}  // namespace fisrig::test
