// The model target's power controller, link and current sampler: cuts, their records,
// the link's fall and rise, the samples; and a drive that hangs.
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

// A power cut in the middle of an NCQ write stream: every outstanding command ends
// LINK_LOST, the cut itself is a record, the run goes on to power up and read.
TEST(ModelPower, CutMidNcqWriteThenRecover) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 50,
                                             FISRIG_EVENT_H2D);
  p.mark(1).raw(arm, ProgramBuilder::ok());
  fisrig_op_workload w = ProgramBuilder::random_4k(32, true, 0, 2000, 1 << 20);
  w.stop_commands = 0;
  w.stop_ticks = 1500000;  // 10 ms: the cut (at the 50th H2D) lands first
  p.mark(2).workload(w);
  p.mark(3).raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_ON, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_LINK, FISRIG_LINK_WAIT_UP, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 0, 8), ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << (r.error_text ? r.error_text : "");
  int lost = 0, ok = 0, cuts = 0;
  std::vector<uint8_t> link;  // the link's falls and rises, as the gateware records them
  for (const auto& x : r.records) {
    if (x.kind == FISRIG_RECORD_POWER && x.cpl.slot == FISRIG_EVENT_REC_POWER_CUT) ++cuts;
    if (x.kind == FISRIG_RECORD_POWER && x.cpl.user_tag == FISRIG_USER_TAG_EVENT &&
        x.cpl.slot != FISRIG_EVENT_REC_POWER_CUT)
      link.push_back(x.cpl.slot);
    if (x.kind != FISRIG_RECORD_COMMAND || x.marker != 2) continue;
    if (x.cpl.result == FISRIG_RESULT_LINK_LOST) ++lost;
    if (x.cpl.result == FISRIG_RESULT_OK) ++ok;
  }
  EXPECT_EQ(cuts, 1);
  EXPECT_EQ(link, (std::vector<uint8_t>{FISRIG_EVENT_REC_LINK_DOWN, FISRIG_EVENT_REC_LINK_UP}));
  EXPECT_GT(lost, 0);
  EXPECT_GT(ok, 0);
  EXPECT_GE(d.ssd().stats().power_cycles, 1u);
  EXPECT_EQ(commands_of(r).back().cpl.result, FISRIG_RESULT_OK);  // the read after power-up
}

// A command's record built where the sink says (the rig's firmware: straight into its
// record ring) is, byte for byte, the record the VM hands to emit: with queued commands out
// of order, an NCQ error and its aborted commands, a power cut and its lost commands, and
// events among them.
TEST(ModelRecords, RecordsBuiltInPlaceAreThoseEmitted) {
  auto programs = [](const drive::Drive& d, int which) {
    ProgramBuilder p(d.user_sectors());
    if (which == 0) {
      p.workload(ProgramBuilder::random_4k(32, true, 50, 2000, d.user_sectors()));
    } else if (which == 1) {
      fisrig_op_workload reads = ProgramBuilder::random_4k(8, true, 100, 128, 1024);
      reads.pattern = FISRIG_PATTERN_SEQUENTIAL;
      p.workload(reads);
    } else {
      p.mark(1).raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 50, FISRIG_EVENT_H2D),
                    ProgramBuilder::ok());
      fisrig_op_workload w = ProgramBuilder::random_4k(32, true, 0, 2000, 1 << 20);
      w.stop_commands = 0;
      w.stop_ticks = 1500000;
      p.mark(2).workload(w);
      p.mark(3).raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_ON, 0, 0), ProgramBuilder::ok());
      p.raw(ProgramBuilder::desc(FISRIG_PROTO_LINK, FISRIG_LINK_WAIT_UP, 0, 0), ProgramBuilder::ok());
    }
    return p.build();
  };
  for (int which = 0; which < 3; ++which) {
    drive::DriveConfig cfg = tiny();
    if (which == 1) cfg.faults.unc.push_back({504, 1});
    drive::Drive a(cfg), b(cfg);
    ModelRun emitted = run(a, programs(a, which)), placed = run(b, programs(b, which), true);
    ASSERT_EQ(emitted.status, FISRIG_VM_DONE) << which;
    ASSERT_EQ(placed.status, FISRIG_VM_DONE) << which;
    ASSERT_GT(commands_of(emitted).size(), 50u) << which;
    ASSERT_EQ(emitted.records.size(), placed.records.size()) << which;
    for (size_t i = 0; i < emitted.records.size(); ++i)
      ASSERT_EQ(std::memcmp(&emitted.records[i], &placed.records[i], sizeof(fisrig_run_record)), 0)
          << "program " << which << ", record " << i;
  }
}

// A cut's record (engine_if.h's struct fisrig_cut_record, carried by the VM as program.h
// says) comes before the records of the commands it ended, and its masks are what those
// records say they had: their H2D, their release, whole Data FISes. 64 KiB writes at QD32
// (8 Data FISes each) are cut while data moves: some lose the cut part-way, with the
// FISes that had ended counted, never a part of one.
TEST(ModelPower, CutRecordNamesTheSlotsStateAndTheLostCommandsAgree) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 0, FISRIG_EVENT_TIME);
  arm.timeout_ticks = 150000;  // 1 ms into the writes
  p.raw(arm, ProgramBuilder::ok());
  fisrig_op_workload w = ProgramBuilder::random_4k(32, true, 0, 4000, 1 << 20);
  w.size_sectors[0] = 128;
  p.workload(w);
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << (r.error_text ? r.error_text : "");
  size_t at = r.records.size();
  for (size_t i = 0; i < r.records.size(); ++i)
    if (r.records[i].kind == FISRIG_RECORD_POWER && r.records[i].cpl.slot == FISRIG_EVENT_REC_POWER_CUT) at = i;
  ASSERT_LT(at, r.records.size());
  const fisrig_run_record& cut = r.records[at];
  EXPECT_EQ(cut.cpl.slot, FISRIG_EVENT_REC_POWER_CUT);
  EXPECT_EQ(cut.cpl.sectors, 0u);  // the masks are in lba, lbas and seq, not in sectors
  EXPECT_EQ(cut.cpl.ts_status - cut.cpl.ts_h2d, 150000u);  // ts_trigger: the arming, for a cut at a time
  uint32_t issued = 0, queued = 0, data = 0;
  int partial = 0, lost = 0;
  for (size_t i = 0; i < r.records.size(); ++i) {
    const fisrig_run_record& x = r.records[i];
    if (x.kind != FISRIG_RECORD_COMMAND || x.cpl.result != FISRIG_RESULT_LINK_LOST) continue;
    EXPECT_GT(i, at) << "a command the cut ended is recorded after the cut";
    ++lost;
    uint32_t bit = 1u << x.cpl.slot;
    if (x.cpl.ts_h2d) issued |= bit;
    if (x.cpl.ts_accept) queued |= bit;
    if (x.cpl.data_dwords) data |= bit;
    EXPECT_EQ(x.cpl.data_dwords % drive::fis_dwords::kMaxDataPayload, 0u) << "whole Data FISes only";
    EXPECT_EQ(x.cpl.sectors, x.cpl.data_dwords / 128);
    EXPECT_LE(x.cpl.ts_data_last, x.cpl.ts_status);
    if (x.cpl.sectors && x.cpl.sectors < 128) ++partial;
  }
  EXPECT_GT(lost, 0);
  EXPECT_EQ(uint32_t(cut.lba), issued);
  EXPECT_EQ(uint32_t(cut.lba >> 32), queued);
  EXPECT_EQ(cut.lbas, data);
  EXPECT_EQ(cut.seq, 0u);  // the model writes a record the moment its status comes
  EXPECT_NE(queued, 0u);
  EXPECT_GT(partial, 0) << "no write was cut part-way through its data";
}

// A cut at a time (FISRIG_EVENT_TIME): the rails go off its delay after the arming, to the
// tick, whatever the commands do meanwhile.
TEST(ModelPower, CutAtATimeFallsItsDelayAfterTheArming) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 0, FISRIG_EVENT_TIME);
  arm.timeout_ticks = 30001;  // 200 us and a tick
  p.raw(arm, ProgramBuilder::ok());
  p.workload(ProgramBuilder::random_4k(8, true, 0, 4000, 1 << 16));
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << (r.error_text ? r.error_text : "");
  uint64_t armed = 0, cut = 0;
  int lost = 0;
  for (const auto& x : r.records) {
    if (x.kind == FISRIG_RECORD_POWER && x.cpl.user_tag != FISRIG_USER_TAG_EVENT) armed = x.cpl.ts_submit;
    if (x.kind == FISRIG_RECORD_POWER && x.cpl.slot == FISRIG_EVENT_REC_POWER_CUT) cut = x.cpl.ts_status;
    if (x.kind == FISRIG_RECORD_COMMAND && x.cpl.result == FISRIG_RESULT_LINK_LOST) ++lost;
  }
  EXPECT_EQ(cut, armed + 30001);
  EXPECT_GT(lost, 0);  // the workload was under way
}

// The program's own power-off disarms a cut still waiting (as the gateware's power
// controller: engine/power.py): it must not fire later, in the power-on or the reads after.
TEST(ModelPower, PowerOffDisarmsACutNotYetFired) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc arm = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF_AT_EVENT, 0, 1, FISRIG_EVENT_H2D);
  arm.timeout_ticks = 150000000;  // 1 s after the next H2D: long after the power-off below
  p.raw(arm, ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_NON_DATA, 0xEA, 0, 0), ProgramBuilder::ok());  // FLUSH: the H2D
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_ON, 0, 0), ProgramBuilder::ok());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_LINK, FISRIG_LINK_WAIT_UP, 0, 0), ProgramBuilder::ok());
  p.idle_ticks(300000000);  // 2 s: past where the armed cut would have fallen
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 0, 8), ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << (r.error_text ? r.error_text : "");
  for (const auto& x : r.records)
    EXPECT_FALSE(x.kind == FISRIG_RECORD_POWER && x.cpl.slot == FISRIG_EVENT_REC_POWER_CUT) << "a cut fired";
  EXPECT_EQ(d.ssd().stats().power_cycles, 1u);
}

// The current sampler (FISRIG_POWER_SAMPLE), as the gateware's (tests/rtl/test_rig_core.py,
// test_the_current_sampler_takes_every_period_from_its_start_to_its_stop): a sample every
// period from the descriptor's tick, 30 to a record and no gap between records; the idle
// draw while nothing runs, more while the flush programs NAND, 0 once the rails are off;
// the stop sends what was taken since the last record.
struct Samples {
  std::vector<std::pair<uint64_t, uint16_t>> at;  // (tick, mA)
  std::vector<fisrig_current_record> records;
};
Samples samples_of(const ModelRun& r) {
  Samples s;
  for (const auto& x : r.records) {
    if (x.kind != FISRIG_RECORD_CURRENT) continue;
    fisrig_current_record c;
    std::memcpy(&c, &x.cpl, sizeof c);
    s.records.push_back(c);
    for (uint32_t i = 0; i < c.samples; ++i) s.at.emplace_back(c.ts_first + i * c.period_ticks, c.ma[i]);
  }
  return s;
}

TEST(ModelEngine, CurrentSamplerTakesEveryPeriodFromItsStart) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc start = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_SAMPLE, 0, 1);
  start.timeout_ticks = 150;
  p.raw(start, ProgramBuilder::ok());
  p.idle_ticks(3000);
  p.workload(ProgramBuilder::random_4k(8, true, 0, 64, 1 << 16));
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_NON_DATA, 0xEA, 0, 0), ProgramBuilder::ok());  // FLUSH
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_OFF, 0, 0), ProgramBuilder::ok());
  p.idle_ticks(3000);
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_SAMPLE, 0, 0), ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << (r.error_text ? r.error_text : "");
  std::vector<fisrig_run_record> power;
  const fisrig_run_record* flush = nullptr;
  for (const auto& x : r.records) {
    if (x.kind == FISRIG_RECORD_POWER && x.cpl.user_tag != FISRIG_USER_TAG_EVENT) power.push_back(x);
    if (x.kind == FISRIG_RECORD_COMMAND && x.command == 0xEA) flush = &x;
  }
  ASSERT_EQ(power.size(), 3u);
  ASSERT_NE(flush, nullptr);
  Samples s = samples_of(r);
  ASSERT_GT(s.records.size(), 2u);
  EXPECT_EQ(s.records[0].ts_first, power[0].cpl.ts_submit);
  for (size_t i = 0; i + 1 < s.records.size(); ++i) {
    EXPECT_EQ(s.records[i].samples, FISRIG_CURRENT_SAMPLES);
    EXPECT_EQ(s.records[i + 1].ts_first, s.records[i].ts_first + FISRIG_CURRENT_SAMPLES * 150);
  }
  uint64_t stop = power[2].cpl.ts_submit, off = power[1].cpl.ts_submit;
  EXPECT_LE(s.at.back().first, stop);
  EXPECT_GT(s.at.back().first + 150, stop);
  uint16_t busiest = 0;
  size_t idle = 0, unpowered = 0;
  for (auto [tick, ma] : s.at) {
    if (tick < power[0].cpl.ts_submit + 3000) {
      EXPECT_EQ(ma, 60) << tick;  // tiny-1gb's idle draw
      ++idle;
    }
    if (tick >= flush->cpl.ts_submit && tick < flush->cpl.ts_status) busiest = std::max(busiest, ma);
    if (tick >= off) {
      EXPECT_EQ(ma, 0) << tick;
      ++unpowered;
    }
  }
  EXPECT_EQ(idle, 20u);
  EXPECT_GT(unpowered, 15u);
  EXPECT_GT(busiest, 60);
}

// A long idle with the sampler on: the VM takes the records as they come (the completion
// ring holds 1,024; a second makes 8,334), so none is lost and none is late.
TEST(ModelEngine, CurrentSamplesOfALongIdleAreAllKept) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_SAMPLE, 0, 1), ProgramBuilder::ok());
  p.idle_ticks(FISRIG_TICK_HZ);
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_SAMPLE, 0, 0), ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE) << (r.error_text ? r.error_text : "");
  Samples s = samples_of(r);
  // A sample every period from the start's take to the stop's, the idle and the CPU's time
  // between them (VmCpuTime); on the stop's tick, none, as the gateware's.
  std::vector<fisrig_run_record> power;
  for (const auto& x : r.records)
    if (x.kind == FISRIG_RECORD_POWER) power.push_back(x);
  ASSERT_EQ(power.size(), 2u);
  uint64_t span = power[1].cpl.ts_submit - power[0].cpl.ts_submit;
  ASSERT_GE(span, FISRIG_TICK_HZ);
  ASSERT_EQ(s.at.size(), (span + FISRIG_CURRENT_PERIOD_TICKS - 1) / FISRIG_CURRENT_PERIOD_TICKS);
  for (size_t i = 1; i < s.at.size(); ++i) ASSERT_EQ(s.at[i].first, s.at[i - 1].first + FISRIG_CURRENT_PERIOD_TICKS);
}

// A completion ring nobody takes from: the sampler's records fill it, and those with no room
// are dropped, as the gateware's are; the first record after room is made says how many,
// and the ticks' gap is exactly their samples.
TEST(ModelEngine, CurrentRecordsWithNoRoomAreDroppedAndSaidSo) {
  drive::Drive d(tiny());
  model::EngineModel engine(d);
  fisrig_engine_ops ops = engine.ops();
  ops.sq[0] = ProgramBuilder::desc(FISRIG_PROTO_POWER, FISRIG_POWER_SAMPLE, 0, 1);
  ops.doorbell(ops.ctx, 1);
  uint64_t period = FISRIG_CURRENT_PERIOD_TICKS, per_record = FISRIG_CURRENT_SAMPLES * period;
  // Records for 1,024 slots (the sampler's start's own included) and 10 more.
  uint64_t until = (ops.cq_entries + 10) * per_record;
  while (ops.now(ops.ctx) < until) ops.wait(ops.ctx, until);
  ASSERT_EQ(ops.cq_tail(ops.ctx), ops.cq_entries);
  ops.cq_consumed(ops.ctx, ops.cq_entries);  // the ring taken at last
  until += 2 * per_record;
  while (ops.now(ops.ctx) < until) ops.wait(ops.ctx, until);
  ASSERT_GT(ops.cq_tail(ops.ctx), ops.cq_entries);
  fisrig_current_record last, next;
  std::memcpy(&last, &ops.cq[(ops.cq_entries - 1) & (ops.cq_entries - 1)], sizeof last);
  std::memcpy(&next, &ops.cq[ops.cq_entries & (ops.cq_entries - 1)], sizeof next);
  EXPECT_EQ(last.dropped, 0);
  ASSERT_EQ(next.slot, FISRIG_EVENT_REC_CURRENT);
  EXPECT_GE(next.dropped, 10);
  EXPECT_EQ(next.ts_first - last.ts_first, (1u + next.dropped) * per_record);
}

// A drive that stops answering: the engine's per-slot timeout ends the command, the run
// does not hang, and a COMRESET brings the drive back.
TEST(ModelFaults, HangTimesOutAndComresetRecovers) {
  drive::DriveConfig cfg = tiny();
  cfg.faults.hang_after_commands = 3;
  drive::Drive d(cfg);
  ProgramBuilder p(d.user_sectors());
  fisrig_cmd_desc rd = ProgramBuilder::desc(FISRIG_PROTO_DMA_IN, 0x25, 0, 8);
  rd.timeout_ticks = 150000;  // 1 ms
  for (int i = 0; i < 4; ++i) p.raw(rd);
  p.raw(ProgramBuilder::desc(FISRIG_PROTO_LINK, FISRIG_LINK_COMRESET, 0, 0), ProgramBuilder::ok());
  p.raw(rd, ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  ASSERT_EQ(r.status, FISRIG_VM_DONE);
  auto cmds = commands_of(r);
  ASSERT_EQ(cmds.size(), 5u);
  EXPECT_EQ(cmds[3].cpl.result, FISRIG_RESULT_TIMEOUT);
  EXPECT_EQ(cmds[3].cpl.ts_status - cmds[3].cpl.ts_submit, 150000u);
  EXPECT_EQ(cmds[4].cpl.result, FISRIG_RESULT_OK);
}
