// The model target end to end: the firmware core's VM running programs through the
// engine model's descriptor rings against the simulated drive: each command's stamps,
// records, NCQ.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>

#include "model_run.h"

extern "C" {
#include "fisrig/pattern.h"
}

using namespace fisrig;
using namespace fisrig::test;

// One 4 KiB READ DMA EXT of never-written LBAs on an idle tiny drive, phase by phase, in
// dwords at 150e6 dwords/s (6.667 ns each), as docs/drive-model.md costs them (each FIS's
// framing 9 dwords: X_RDY/R_RDY, SOF, CRC, EOF, WTRM, R_IP/R_OK and the SYNC between frames;
// an ALIGN pair per 256 dwords begun; the Drive books whole ns, rounded):
//   the rig takes the descriptor at 0 (3 us after the run's start: the CPU built it,
//   VmCpuTime); its H2D starts 6 ticks later (40 ns: WireStamps::kTakeToH2dTicks)
//   Register H2D: 5 + 9 framing = 14, + 2 ALIGN = 16 dwords = 107 ns      -> 40 to 147
//   firmware: command_overhead 4 us (tiny-1gb)                           -> data at 4147
//   Data FIS: 1024 + 1 header + 9 = 1034, + 2 x 5 ALIGN = 1044 dwords = 6960 ns -> 11107
//   D2H: 16 dwords = 107 ns                                              -> 11107 to 11214
// The stamps are the ticks engine_if.h defines, inside those reservations (WireStamps in
// engine_model.h): a FIS's first dword 3 dwords after its start (X_RDY/R_RDY, SOF), a Data
// FIS's first data dword 4, its last data dword 8 before its end. In 150 MHz ticks (ns x
// 3 / 20, rounded down) from the take: H2D 6 + 3; data 622 + 4 to 1666 - 8; D2H 1666 + 3.
// READ DMA EXT has no setup FIS (the device just sends its data): ts_setup is 0. (Before the
// SYNC dword: 9, 625, 1656, 1666; before the stamps were defined at the wire, the model
// stamped the ends of the reservations and the Data FIS's start as ts_setup.)
TEST(ModelTiming, SingleDmaReadMatchesHandCount) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 1000, 8), ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  auto cmds = commands_of(r);
  ASSERT_EQ(cmds.size(), 1u);
  const fisrig_cpl_record& c = cmds[0].cpl;
  EXPECT_EQ(c.result, FISRIG_RESULT_OK);
  EXPECT_EQ(c.status, 0x40);
  EXPECT_EQ(c.sectors, 8u);
  EXPECT_EQ(c.data_dwords, 8u * 128);
  EXPECT_EQ(c.ts_submit, 450u);  // VmCpuTime::kSubmitNs
  expect_stamps(c, {9, 0, 0, 626, 1658, 1669});
  EXPECT_EQ(cmds[0].lba, 1000u);
  for (uint8_t b : c.lba) EXPECT_EQ(b, 0u);  // the device's D2H carries no LBA on success
  EXPECT_EQ(r.records.back().kind, FISRIG_RECORD_END);
}

// An NCQ read adds the D2H that releases it and a DMA Setup; it ends with an SDB:
//   H2D 40 to 147 ns (taken at 0); D2H (BSY clear) 147 to 254; firmware 4 us -> 4254;
//   DMA Setup: 7 + 9 = 16, + 2 = 18 dwords = 120 ns: 4254 to 4374; Data FIS 4374 to 11334;
//   SDB: 2 + 9 = 11, + 2 = 13 dwords = 87 ns: 11334 to 11421.
// Stamps: H2D 6 + 3, D2H 22 + 3, DMA Setup 638 + 3, data 656 + 4 to 1700 - 8, SDB 1700 + 3.
// (Before the SYNC dword: 9, 24, 639, 656, 1688, 1698.)
TEST(ModelTiming, SingleNcqReadMatchesHandCount) {
  const fisrig_cpl_record c = single_command(ProgramBuilder::desc(FISRIG_PROTO_FPDMA_IN, 0x60, 1000, 0, 8));
  expect_stamps(c, {9, 25, 641, 660, 1692, 1703});
}

// A DMA write's setup is its first DMA Activate: 1 + 9 = 10, + 2 = 12 dwords = 80 ns.
//   H2D 40 to 147; firmware 4 us -> DMA Activate 4147 to 4227; the rig's turnaround, 6 ticks
//   = 40 ns (WireStamps::kHostDataTurnaroundTicks); Data FIS 4267 to 11227;
//   D2H (write-back cache: at once) 11227 to 11334.
// Stamps: H2D 6 + 3; DMA Activate 622 + 3; data 640 + 4 to 1684 - 8; D2H 1684 + 3.
TEST(ModelTiming, SingleDmaWriteStampsItsDmaActivate) {
  fisrig_cmd_desc w = ProgramBuilder::desc(FISRIG_PROTO_DMA_OUT, 0x35, 1000, 8);
  w.data_source = FISRIG_DATA_STAMP;
  const fisrig_cpl_record c = single_command(w);
  EXPECT_EQ(c.result, FISRIG_RESULT_OK);
  expect_stamps(c, {9, 0, 625, 644, 1676, 1687});  // non-queued: no accept
}

// IDENTIFY (PIO in) ends with its PIO Setup's E_Status: no D2H follows, and the command is
// complete when its Data FIS has crossed: ts_status is its last data dword (engine_if.h). Its
// record has no error and no LBA, as the gateware's PIO-END writes.
//   H2D 40 to 147; firmware 4 us -> PIO Setup (5 + 9 + 2 = 16 dwords, 107 ns) 4147 to 4254;
//   Data FIS 128 + 1 + 9 = 138, + 2 = 140 dwords = 933 ns: 4254 to 5187.
// Stamps: PIO Setup 622 + 3; data 638 + 4 to 778 - 8 (also ts_status).
TEST(ModelTiming, IdentifyEndsWithItsLastDataDword) {
  const fisrig_cpl_record c = single_command(ProgramBuilder::desc(FISRIG_PROTO_PIO_IN, 0xEC, 0, 1));
  EXPECT_EQ(c.result, FISRIG_RESULT_OK);
  EXPECT_EQ(c.error, 0u);
  EXPECT_EQ(c.sectors, 1u);
  EXPECT_EQ(c.ts_setup, c.ts_submit + 622 + 3);
  EXPECT_EQ(c.ts_status, c.ts_data_last);
  EXPECT_EQ(c.ts_data_first, c.ts_submit + 638 + 4);
  EXPECT_EQ(c.ts_data_last, c.ts_submit + 778 - 8);
}

// A failed command's D2H carries the failing LBA (IDNF: the command's first), and moves no
// data; a UNC read moves the sectors before the bad one, as the device side sends them.
TEST(ModelRecords, ErrorsCarryTheirLbaAndWhatMoved) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.unc.push_back({2004, 1});
  drive::Drive d(cfg);
  ProgramBuilder p(d.user_sectors());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, d.user_sectors(), 8));
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 2000, 8));
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  auto cmds = commands_of(r);
  ASSERT_EQ(cmds.size(), 2u);
  auto lba = [](const fisrig_cpl_record& c) {
    uint64_t v = 0;
    for (int i = 5; i >= 0; --i) v = (v << 8) | c.lba[i];
    return v;
  };
  EXPECT_EQ(cmds[0].cpl.error, 0x10);
  EXPECT_EQ(lba(cmds[0].cpl), d.user_sectors());
  EXPECT_EQ(cmds[0].cpl.sectors, 0u);
  EXPECT_EQ(cmds[0].cpl.ts_data_first, 0u);
  EXPECT_EQ(cmds[1].cpl.error, 0x40);
  EXPECT_EQ(lba(cmds[1].cpl), 2004u);
  EXPECT_EQ(cmds[1].cpl.sectors, 4u);
  EXPECT_EQ(cmds[1].cpl.data_dwords, 4u * 128);
}

// An NCQ error with others in flight, recovered as the gateware does (engine/sequencer.py, RECOVERED):
// the engine reads log 10h itself; the failing read ends ATA_ERROR with the log's UNC and
// LBA, the others in flight NCQ_ABORTED, all stamped at the log's last data dword; then the
// queue runs again. Before, every queued command after the error ended NCQ_ABORTED.
TEST(ModelNcq, AnErrorIsRecoveredByReadingLog10h) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.unc.push_back({504, 1});
  drive::Drive d(cfg);
  ProgramBuilder p(d.user_sectors());
  fisrig_op_workload reads = ProgramBuilder::random_4k(8, true, 100, 128, 1024);
  reads.pattern = FISRIG_PATTERN_SEQUENTIAL;
  p.workload(reads);
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  auto cmds = commands_of(r);
  ASSERT_EQ(cmds.size(), 128u);
  int failed = 0, aborted = 0, ok_after = 0;
  uint64_t recovered_at = 0;
  for (const auto& x : cmds) {
    const auto& c = x.cpl;
    if (c.result == FISRIG_RESULT_ATA_ERROR) {
      ++failed;
      EXPECT_EQ(x.lba, 504u / 8 * 8);
      EXPECT_EQ(c.error, 0x40);
      EXPECT_EQ(c.lba[0] | c.lba[1] << 8, 504);
      recovered_at = c.ts_status;
    }
  }
  ASSERT_EQ(failed, 1);
  for (const auto& x : cmds) {
    const auto& c = x.cpl;
    if (c.result == FISRIG_RESULT_NCQ_ABORTED) {
      ++aborted;
      EXPECT_EQ(c.ts_status, recovered_at);
    } else if (c.ts_submit > recovered_at) {
      EXPECT_EQ(c.result, FISRIG_RESULT_OK);
      ++ok_after;
    }
  }
  EXPECT_GE(aborted, 1);
  EXPECT_LE(aborted, 7);
  EXPECT_GT(ok_after, 50);
}

TEST(ModelNcq, ThirtyTwoTagsInFlightAndOutOfOrder) {
  drive::Drive d(tiny());
  const uint64_t span = 1 << 20;  // 512 MiB
  ProgramBuilder p(d.user_sectors());
  fisrig_op_workload fill = ProgramBuilder::random_4k(32, true, 0, 0, span);
  fill.pattern = FISRIG_PATTERN_SEQUENTIAL;
  fill.size_sectors[0] = 256;
  fill.stop_bytes = span * 512;
  p.mark(1).workload(fill);
  p.mark(2).workload(ProgramBuilder::random_4k(32, true, 100, 20000, span));
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  std::vector<fisrig_run_record> reads;
  for (const auto& x : commands_of(r))
    if (x.marker == 2) reads.push_back(x);
  ASSERT_EQ(reads.size(), 20000u);
  // Most in flight at once, from the records' own times.
  std::vector<std::pair<uint64_t, int>> edges;
  std::set<uint8_t> slots;
  int out_of_order = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const auto& c = reads[i].cpl;
    EXPECT_EQ(c.result, FISRIG_RESULT_OK);
    EXPECT_LE(c.ts_h2d, c.ts_accept);
    EXPECT_LE(c.ts_accept, c.ts_setup);
    EXPECT_LE(c.ts_setup, c.ts_data_last);
    EXPECT_LE(c.ts_data_last, c.ts_status);
    edges.push_back({c.ts_h2d, +1});
    edges.push_back({c.ts_status, -1});
    slots.insert(c.slot);
    if (i && c.ts_submit < reads[i - 1].cpl.ts_submit) ++out_of_order;
  }
  std::sort(edges.begin(), edges.end(), [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
  int depth = 0, most = 0;
  for (auto& e : edges) most = std::max(most, depth += e.second);
  EXPECT_EQ(most, 32);
  EXPECT_EQ(slots.size(), 32u);
  EXPECT_GT(out_of_order, 1000);  // the drive completes in its own order
}

// The engine takes a queued descriptor (ts_submit) and sends its H2D only as the gateware's
// sequencer does (engine/sequencer.py, can_queue): not before the D2H that released the
// command before it, and not while a data phase is open. On a drive that is never the limit
// the link is, so a QD32 workload holds only as many commands as those gaps let through,
// as the gateware's run does (tests/rtl/test_line_rate.py compares the two): before this
// rule the model took all 32 at once and reported QD 31.8 held against the rig's 2.5.
TEST(ModelNcq, AQueuedCommandGoesOnlyWhenTheGatewaysWould) {
  for (uint8_t read_pct : {0, 100}) {
    drive::Drive d(drive::load_profile("fast-1gb"));
    ModelRun r = run(d, ProgramBuilder(d.user_sectors()).workload(
                            ProgramBuilder::random_4k(32, true, read_pct, 3000, 32768)).build());
    ASSERT_EQ(r.status, FISRIG_VM_DONE);
    auto cmds = commands_of(r);
    ASSERT_EQ(cmds.size(), 3000u);
    std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.cpl.ts_submit < b.cpl.ts_submit; });
    std::vector<std::pair<uint64_t, int>> held;  // submit to status, as the report counts it
    int cut_in = 0;
    for (size_t i = 0; i < cmds.size(); ++i) {
      const auto& c = cmds[i].cpl;
      ASSERT_EQ(c.result, FISRIG_RESULT_OK);
      if (i) {
        EXPECT_GE(c.ts_submit, cmds[i - 1].cpl.ts_accept) << "accept pending, command " << i;
      }
      // A write's data phase is over for the sequencer once its last Data FIS is handed on,
      // 9 ticks before its last data dword crosses here, 10 where the ns round the other way
      // (WireStamps::kDataOutDoneTicks; the rig's 7 to 15); a read's once its last dword is in.
      uint64_t early = read_pct ? 0 : model::WireStamps::kDataOutDoneTicks - model::WireStamps::kAfterPayload + 1;
      for (const auto& o : cmds)
        EXPECT_FALSE(o.cpl.ts_data_first <= c.ts_submit && c.ts_submit + early < o.cpl.ts_data_last)
            << "taken inside a data phase, command " << i << ": " << o.cpl.ts_data_last - c.ts_submit << " ticks before its last data dword";
      // A write's successor cuts in between its DMA Setup and its data, as on the wire.
      if (i + 1 < cmds.size() && cmds[i + 1].cpl.ts_h2d > c.ts_setup && cmds[i + 1].cpl.ts_h2d < c.ts_data_first) {
        ++cut_in;
        // Its H2D 13 ticks after the 18-dword DMA Setup (WireStamps::kSetupToCutInTicks),
        // a tick more where the stamps' ns round the other way (the rig's: 206 to 213 ns).
        uint64_t gap = cmds[i + 1].cpl.ts_h2d - c.ts_setup, want = 18 + model::WireStamps::kSetupToCutInTicks;
        EXPECT_TRUE(gap == want || gap == want + 1) << "command " << i << ": " << gap;
      }
      held.push_back({c.ts_submit, +1});
      held.push_back({c.ts_status, -1});
    }
    std::sort(held.begin(), held.end());
    int depth = 0, most = 0;
    for (auto& e : held) most = std::max(most, depth += e.second);
    SCOPED_TRACE(read_pct ? "reads" : "writes");
    if (read_pct) {
      EXPECT_LE(most, 16);  // the H2Ds sent while the drive reads, between its data phases
      EXPECT_EQ(cut_in, 0);
    } else {
      // Two writes whose data go one after the other, and one or two whose status waits
      // for the next one's data phase to share its SDB (as the device side sends them:
      // Drive::set_sdb_coalescing); the gateware's run of targets-agree-qd32 holds 4 too.
      // The rig's successor cut in after 2,984 of its 3,000 writes' setups, the model's
      // after 2,832: it leaves the room when it books the write, only if another command is
      // waiting or in flight then (the rig decides when the setup comes).
      EXPECT_LE(most, 4);
      EXPECT_GT(cut_in, 2800);
    }
  }
}
