// The model target running programs: expectations, malformed programs, loops, traces,
// the verify pass, the RAM window.
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

TEST(ModelProgram, ExpectationMissEndsTheRunWithARecord) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  p.mark(7).raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, d.user_sectors(), 8), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 0, 8));  // never reached
  ModelRun r = run(d, p.build());
  EXPECT_EQ(r.status, FISRIG_VM_EXPECT_FAILED);
  auto cmds = commands_of(r);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].cpl.result, FISRIG_RESULT_ATA_ERROR);
  EXPECT_EQ(cmds[0].cpl.error, 0x10);  // IDNF
  EXPECT_EQ(r.records.back().kind, FISRIG_RECORD_END);
  EXPECT_EQ(r.records.back().cpl.result, FISRIG_VM_EXPECT_FAILED);
  EXPECT_EQ(r.records.back().marker, 7u);
}

TEST(ModelProgram, MalformedProgramsAreRefusedWithTheirOffset) {
  drive::Drive d(tiny());
  fisrig_op_workload w = ProgramBuilder::random_4k(33, true, 0, 10, 1 << 20);
  std::vector<uint8_t> prog = ProgramBuilder(d.user_sectors()).mark(1).workload(w).build();
  ModelRun r = run(d, prog);
  EXPECT_EQ(r.status, FISRIG_VM_BAD_PROGRAM);
  EXPECT_STREQ(r.error_text, "queue depth must be 1..32");
  EXPECT_EQ(r.error_offset, sizeof(fisrig_program_header) + sizeof(fisrig_op_mark));

  w = ProgramBuilder::random_4k(4, true, 0, 10, d.user_sectors());
  w.lba_start = 8;
  r = run(d, ProgramBuilder(d.user_sectors()).workload(w).build());
  EXPECT_STREQ(r.error_text, "LBA span past the end of the drive");

  prog = ProgramBuilder(d.user_sectors()).loop(2).build();
  r = run(d, prog);
  EXPECT_STREQ(r.error_text, "LOOP without END_LOOP");

  prog[0] ^= 1;
  r = run(d, prog);
  EXPECT_STREQ(r.error_text, "not a fisrig program");
  EXPECT_TRUE(commands_of(r).empty());
}

// A RAW descriptor whose data is in RAM (not staged by the VM) must lie in the data window:
// the engine DMAs wherever data_word points, on the SoC over the firmware's own memory.
// Found by tests/fuzz/vm_fuzz.c; its input is kept in tests/fuzz/regressions/vm/.
TEST(ModelProgram, RawDataInRamOutsideTheWindowIsRefused) {
  drive::Drive d(tiny());
  const uint32_t window = FISRIG_VM_INFLIGHT * FISRIG_VM_DSM_BYTES;
  fisrig_cmd_desc id = ProgramBuilder::desc(FISRIG_PROTO_PIO_IN, 0xEC, 0, 1);  // IDENTIFY
  id.data_source = FISRIG_DATA_RAM;
  id.data_word = window - 512;  // its 512 bytes end at the window's end: fine
  ModelRun r = run(d, ProgramBuilder(d.user_sectors()).raw(id, ProgramBuilder::ok()).build());
  EXPECT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  id.data_word = window - 508;
  r = run(d, ProgramBuilder(d.user_sectors()).raw(id, ProgramBuilder::ok()).build());
  EXPECT_EQ(r.status, FISRIG_VM_BAD_PROGRAM);
  EXPECT_STREQ(r.error_text, "RAW data in RAM outside the data window");
  EXPECT_TRUE(commands_of(r).empty());
  fisrig_cmd_desc rd = ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 0, 0);  // 65536 sectors
  rd.data_source = FISRIG_DATA_RAM;
  r = run(d, ProgramBuilder(d.user_sectors()).raw(rd, ProgramBuilder::ok()).build());
  EXPECT_STREQ(r.error_text, "RAW data in RAM outside the data window");
}

// A RAW op's data-out is staged in its descriptor's 512-byte block of the window; a COUNT
// that moves more would send the next blocks' bytes (or run past the window). Found by
// tests/fuzz/vm_fuzz.c (regression raw-staged-data-moving-more-than-its-block).
TEST(ModelProgram, RawStagedDataMovingMoreThanItsBlockIsRefused) {
  drive::Drive d(tiny());
  uint8_t block[512] = {1, 2, 3};
  ModelRun r = run(d, ProgramBuilder(d.user_sectors())
                          .raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_OUT, 0x35, 8, 1), ProgramBuilder::ok(), block, 512)
                          .build());
  EXPECT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  r = run(d, ProgramBuilder(d.user_sectors())
                 .raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_OUT, 0x35, 8, 2), ProgramBuilder::ok(), block, 512)
                 .build());
  EXPECT_EQ(r.status, FISRIG_VM_BAD_PROGRAM);
  EXPECT_STREQ(r.error_text, "RAW data-out moves more than the 512-byte block the VM stages");
  EXPECT_TRUE(commands_of(r).empty());
}

TEST(ModelProgram, LoopsMarkersIdleAndTrim) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  p.loop(3).mark(5).workload(ProgramBuilder::random_4k(8, true, 0, 100, 1 << 16)).idle_ticks(150000).end_loop();
  p.mark(6).trim(0, d.user_sectors(), false);
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_FPDMA_IN, 0x60, 64, 0, 8), ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  size_t marked5 = 0, trims = 0;
  for (const auto& x : commands_of(r)) {
    if (x.marker == 5) ++marked5;
    if (x.command == 0x06) ++trims;
  }
  EXPECT_EQ(marked5, 300u);
  EXPECT_GE(trims, 1u);
  EXPECT_EQ(d.ssd().ftl().valid_slots(), 0u);  // the whole drive was trimmed
  // Each idle of 1 ms (150000 ticks) is in the simulated time that passed.
  EXPECT_GT(r.end_ns, 3 * drive::kNsPerMs);
}

// SNIA PTS's rounds: the loop ends at the first pass whose window of the tracked workload's
// IOPS holds steady, and says so in a LOOP_PASS record per pass. A fresh tiny drive under
// 4 KiB random writes on a small span runs at the same rate every pass (its write cache
// takes them all), so a window of 3 holds at pass 3 of at most 10 even with a range of 0%.
// The tracked workload need not be the body's last: a mix of reads after it is not what
// the loop measures (its reads run faster; their figure would hold steady too, but the
// pass records carry the tracked one's commands).
TEST(ModelProgram, UntilSteadyLoopStopsAtTheFirstSteadyWindow) {
  for (uint8_t range : {uint8_t(0), uint8_t(20)}) {
    drive::Drive d(tiny());
    ProgramBuilder p(d.user_sectors());
    uint32_t loop_at = p.at();
    uint32_t tracked = loop_at + sizeof(fisrig_op_loop) + sizeof(fisrig_op_mark);
    p.loop_until_steady(10, tracked, 3, range, 10).mark(5);
    p.workload(ProgramBuilder::random_4k(4, true, 0, 200, 1 << 16)).end_loop();
    ModelRun r = run(d, p.build());
    ASSERT_EQ(r.status, FISRIG_VM_DONE);
    std::vector<fisrig_run_record> passes;
    for (const auto& x : r.records)
      if (x.kind == FISRIG_RECORD_LOOP_PASS) passes.push_back(x);
    ASSERT_EQ(passes.size(), 3u);
    EXPECT_EQ(commands_of(r).size(), 600u);
    for (size_t i = 0; i < passes.size(); ++i) {
      EXPECT_EQ(passes[i].lbas, i + 1);
      EXPECT_EQ(passes[i].lba, 200u);  // the tracked workload's commands
      EXPECT_GT(passes[i].cpl.ts_status, passes[i].cpl.ts_submit);
      EXPECT_EQ(passes[i].cpl.ts_status - passes[i].cpl.ts_submit,
                passes[0].cpl.ts_status - passes[0].cpl.ts_submit);
      EXPECT_EQ(passes[i].cpl.status, i == 2 ? 1 : 0);
      EXPECT_EQ(passes[i].cpl.result, FISRIG_RESULT_OK);
    }
  }
  {
    drive::Drive d(tiny());
    ProgramBuilder p(d.user_sectors());
    uint32_t tracked = p.at() + sizeof(fisrig_op_loop);
    p.loop_until_steady(4, tracked, 3, 20, 10).workload(ProgramBuilder::random_4k(4, true, 0, 20, 1 << 16));
    p.workload(ProgramBuilder::random_4k(4, true, 100, 30, 1 << 16)).end_loop();
    ModelRun r = run(d, p.build());
    ASSERT_EQ(r.status, FISRIG_VM_DONE);
    size_t passes = 0;
    for (const auto& x : r.records)
      if (x.kind == FISRIG_RECORD_LOOP_PASS) {
        ++passes;
        EXPECT_EQ(x.lba, 20u);
        EXPECT_EQ(x.cpl.status, passes == 3 ? 1 : 0);
      }
    EXPECT_EQ(passes, 3u);
  }
  // The tracked offset must be a workload in the body.
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  p.loop_until_steady(10, p.at() + 4, 3, 20, 10).workload(ProgramBuilder::random_4k(4, true, 0, 10, 1 << 16)).end_loop();
  ModelRun r = run(d, p.build());
  EXPECT_STREQ(r.error_text, "the tracked workload is not in the loop's body");
}

// One trace's entries replayed a second time by reference, with its TRIMs left out, and a
// third time with its TRIMs sent as DSM between NCQ commands; a reference that does not
// point at an earlier trace is refused.
TEST(ModelProgram, ATraceReplayedAgainByReferenceWithItsTrimsChosen) {
  drive::Drive d(tiny());
  std::vector<fisrig_trace_entry> e(6);
  for (size_t i = 0; i < e.size(); ++i) {
    e[i].lba = 64 * i;
    e[i].sectors = 8;
    e[i].op = i % 3 == 2 ? FISRIG_TRACE_TRIM : FISRIG_TRACE_WRITE;
  }
  ProgramBuilder p(d.user_sectors());
  uint32_t first = p.at();
  p.mark(1).trace(e, 4, true, FISRIG_TRIMS_AS_QUEUE);
  first += sizeof(fisrig_op_mark);
  p.mark(2).trace(e, 4, true, FISRIG_TRIMS_SKIP, first);
  p.mark(3).trace(e, 4, true, FISRIG_TRIMS_DSM, first);
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  std::map<uint32_t, std::vector<uint8_t>> by_marker;
  for (const auto& x : commands_of(r)) by_marker[x.marker].push_back(x.command);
  EXPECT_EQ(by_marker[1], (std::vector<uint8_t>{0x61, 0x61, 0x64, 0x61, 0x61, 0x64}));
  EXPECT_EQ(by_marker[2], (std::vector<uint8_t>{0x61, 0x61, 0x61, 0x61}));
  EXPECT_EQ(by_marker[3], (std::vector<uint8_t>{0x61, 0x61, 0x06, 0x61, 0x61, 0x06}));

  ProgramBuilder bad(d.user_sectors());
  bad.trace(e, 4, true, FISRIG_TRIMS_AS_QUEUE, sizeof(fisrig_program_header) + 4);
  r = run(d, bad.build());
  EXPECT_STREQ(r.error_text, "trace entries_at is not an earlier trace");
}

// The engine refuses a descriptor whose data in RAM would run past its data window, as the
// gateware's does (tests/rtl/test_rig_core.py): the VM never sends one, another firmware
// might. Nothing goes on the wire; the next descriptor runs.
TEST(ModelEngine, DataPastTheRamWindowIsRefused) {
  drive::Drive d(tiny());
  model::EngineModel engine(d);
  fisrig_engine_ops ops = engine.ops();
  fisrig_cmd_desc rd = ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 0, 2);
  rd.data_source = FISRIG_DATA_RAM;
  rd.data_word = ops.data_window_bytes - 512;
  rd.user_tag = 7;
  uint32_t tail = ops.sq_head(ops.ctx), done = ops.cq_tail(ops.ctx);
  ops.sq[tail++ & (ops.sq_entries - 1)] = rd;
  rd.count = 1;  // its one sector fits
  rd.user_tag = 8;
  ops.sq[tail++ & (ops.sq_entries - 1)] = rd;
  ops.doorbell(ops.ctx, tail);
  while (ops.cq_tail(ops.ctx) - done < 2) ops.wait(ops.ctx, ops.now(ops.ctx) + 150000);
  const fisrig_cpl_record& refused = ops.cq[done & (ops.cq_entries - 1)];
  const fisrig_cpl_record& ran = ops.cq[(done + 1) & (ops.cq_entries - 1)];
  EXPECT_EQ(refused.user_tag, 7u);
  EXPECT_EQ(refused.result, FISRIG_RESULT_REFUSED);
  EXPECT_EQ(refused.ts_h2d, 0u);
  EXPECT_EQ(ran.user_tag, 8u);
  EXPECT_EQ(ran.result, FISRIG_RESULT_OK);
  EXPECT_EQ(ran.sectors, 1u);
}

// The rings outlive a program: a second run on the same engine starts where the first
// left the ring indexes, as firmware re-reads them from the engine's registers.
TEST(ModelProgram, SecondRunOnTheSameEngine) {
  drive::Drive d(tiny());
  model::EngineModel engine(d);
  fisrig_engine_ops ops = engine.ops();
  for (int run_no = 0; run_no < 2; ++run_no) {
    std::vector<fisrig_run_record> records;
    fisrig_record_sink sink{&records, &collect, nullptr, nullptr};
    fisrig_vm vm;
    fisrig_vm_init(&vm, &ops, &sink);
    auto prog = ProgramBuilder(d.user_sectors()).workload(ProgramBuilder::random_4k(32, true, 50, 1000, 1 << 16)).build();
    ASSERT_EQ(fisrig_vm_run(&vm, prog.data(), uint32_t(prog.size())), FISRIG_VM_DONE);
    EXPECT_EQ(records.size(), 1001u);  // 1000 commands and the END record, nothing stale
  }
}

// 4 KiB NCQ reads of a clean drive at QD32 are bound by the rig's CPU, just short of the
// wire. Per command the wire carries H2D 16 + D2H 16 + DMA Setup 18 + Data 1044 + SDB 13 =
// 1107 dwords = 7380 ns, a ceiling of 135,501 IOPS (two statuses sharing an SDB save 13);
// the CPU reaps each completion and builds each read in 4,590 + 2,900 = 7,490 ns
// (VmCpuTime): 133,511 IOPS, which the run holds within 0.5%. Every FIS of every command
// is on the wire exactly once, so the wire's ceiling is never passed.
TEST(ModelNcq, CleanDriveRandomReadsRunAtTheRigsCpuRate) {
  drive::Drive d(tiny());
  ModelRun r = run(d, ProgramBuilder(d.user_sectors()).workload(
                          ProgramBuilder::random_4k(32, true, 100, 20000, d.user_sectors())).build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  auto cmds = commands_of(r);
  uint64_t first = cmds.front().cpl.ts_submit, last = 0;
  for (const auto& c : cmds) last = std::max(last, c.cpl.ts_status);
  double iops = cmds.size() / (double(last - first) / FISRIG_TICK_HZ);
  double cpu = 1e9 / double(model::VmCpuTime::kReapNs + model::VmCpuTime::kSubmitQueuedReadNs);
  EXPECT_NEAR(iops, cpu, 0.005 * cpu);
  EXPECT_LT(iops, 1e9 / (1107 * 1e9 / 150e6));
}

// A verify pass (vm.c run_verify) reads a span back into RAM and says what each sector
// holds, from the bytes alone: each finding of enum fisrig_finding, on sectors written so.
TEST(ModelProgram, VerifyPassNamesWhatEachSectorHolds) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.unc = {{32, 8}};  // these read UNC
  drive::Drive d(cfg);
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc w = ProgramBuilder::desc(FISRIG_PROTO_DMA_OUT, 0x35, 0, 16);
  w.data_source = FISRIG_DATA_STAMP;
  w.compress_pct = 100;
  w.data_word = 5;
  p.raw(w, ProgramBuilder::ok());
  auto literal = [&](uint64_t lba, const uint32_t (&dw)[FISRIG_SECTOR_DWORDS]) {
    uint8_t bytes[512];
    for (int i = 0; i < 128; ++i)
      for (int b = 0; b < 4; ++b) bytes[4 * i + b] = uint8_t(dw[i] >> (8 * b));
    p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_OUT, 0x35, lba, 1), ProgramBuilder::ok(), bytes, 512);
  };
  uint32_t junk[FISRIG_SECTOR_DWORDS], other[FISRIG_SECTOR_DWORDS], hurt[FISRIG_SECTOR_DWORDS];
  for (uint32_t i = 0; i < FISRIG_SECTOR_DWORDS; ++i) junk[i] = 0xDEADBEEF + i;
  fisrig_pattern_sector(FISRIG_PATTERN_STAMP, 1000, 7, 100, other);  // LBA 1000's stamp
  fisrig_pattern_sector(FISRIG_PATTERN_STAMP, 26, 9, 100, hurt);
  hurt[40] ^= 1u << 3;  // one bit wrong
  literal(24, junk);
  literal(25, other);
  literal(26, hurt);
  p.verify(0, 40);
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << r.error_text;
  struct Found {
    uint64_t lba;
    uint32_t lbas;
    uint8_t what;
    uint32_t seq;
    uint64_t named;
    uint16_t bits;
    bool operator==(const Found&) const = default;
  };
  std::vector<Found> got;
  int identify = 0;
  for (const auto& x : r.records) {
    if (x.kind == FISRIG_RECORD_IDENTIFY) {
      ++identify;
      EXPECT_EQ(x.lba, d.user_sectors());
      EXPECT_NE(x.seq, 0u);  // the page's CRC
    }
    if (x.kind != FISRIG_RECORD_STAMP) continue;
    uint64_t named = 0;
    for (int i = 5; i >= 0; --i) named = named << 8 | x.cpl.lba[i];
    got.push_back({x.lba, x.lbas, x.detail, x.seq, named, x.cpl.check_errors});
  }
  EXPECT_EQ(identify, 1);
  std::vector<Found> want = {
      {0, 8, FISRIG_FOUND_STAMP, 5, 0, 0},  {8, 8, FISRIG_FOUND_STAMP, 5, 8, 0},
      {16, 8, FISRIG_FOUND_ZEROS, 0, 16, 0}, {24, 1, FISRIG_FOUND_FOREIGN, 0, 24, 0},
      {25, 1, FISRIG_FOUND_OTHER_LBA, 7, 1000, 0}, {26, 1, FISRIG_FOUND_DAMAGED, 9, 26, 1},
      {27, 5, FISRIG_FOUND_ZEROS, 0, 27, 0}, {32, 8, FISRIG_FOUND_UNREADABLE, 0, 32, 0},  // the D2H names the first bad LBA
  };
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(got[i] == want[i]) << i << ": lba " << got[i].lba << " +" << got[i].lbas << " what "
                                   << int(got[i].what) << " seq " << got[i].seq << " named " << got[i].named
                                   << " bits " << got[i].bits;
  // The stamp writes' own records carry their sequence; the literal ones none.
  for (const auto& x : commands_of(r)) {
    if (x.command == 0x35) {
      EXPECT_EQ(x.seq, x.lbas == 16 ? 5u : 0u);
    }
  }
}

// A span or a read size the VM cannot verify is refused before anything runs.
TEST(ModelProgram, VerifyOfAnImpossibleSpanIsRefused) {
  drive::Drive d(tiny());
  ModelRun r = run(d, ProgramBuilder(d.user_sectors()).verify(d.user_sectors() - 4, 8).build());
  EXPECT_STREQ(r.error_text, "verify span past the end of the drive");
  r = run(d, ProgramBuilder(d.user_sectors()).verify(0, 8, 9).build());
  EXPECT_STREQ(r.error_text, "verify reads 1..8 sectors at a time");
  r = run(d, ProgramBuilder(d.user_sectors()).verify(0, 0).build());
  EXPECT_STREQ(r.error_text, "empty verify span");
  EXPECT_TRUE(commands_of(r).empty());
}
