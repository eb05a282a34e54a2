// The model target end to end: the firmware core's VM running programs through the
// engine model's descriptor rings against the simulated drive.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>

#include "engine_model.h"
#include "program_builder.h"

extern "C" {
#include "fisrig/pattern.h"
}

using namespace fisrig;
using test::ProgramBuilder;

namespace {

struct ModelRun {
  fisrig_vm_status status;
  std::vector<fisrig_run_record> records;
  const char* error_text = nullptr;
  uint32_t error_offset = 0;
  drive::SimTime end_ns = 0;
};

int collect(void* ctx, const fisrig_run_record* r) {
  static_cast<std::vector<fisrig_run_record>*>(ctx)->push_back(*r);
  return 0;
}

// A sink that says where each record goes (vm.h's place and placed, as the rig's firmware
// gives the VM its record ring): a slot filled with 0xA5 before each record, so that a
// field the VM left unwritten shows.
struct InPlace {
  std::vector<fisrig_run_record> records;
  fisrig_run_record slot;
  static fisrig_run_record* place(void* ctx) {
    auto* s = static_cast<InPlace*>(ctx);
    std::memset(&s->slot, 0xA5, sizeof s->slot);
    return &s->slot;
  }
  static int placed(void* ctx) {
    auto* s = static_cast<InPlace*>(ctx);
    s->records.push_back(s->slot);
    return 0;
  }
  static int emit(void* ctx, const fisrig_run_record* r) {
    static_cast<InPlace*>(ctx)->records.push_back(*r);
    return 0;
  }
};

ModelRun run(drive::Drive& d, const std::vector<uint8_t>& program, bool in_place = false) {
  model::EngineModel engine(d);
  fisrig_engine_ops ops = engine.ops();
  ModelRun r;
  InPlace place_sink;
  fisrig_record_sink sink = in_place ? fisrig_record_sink{&place_sink, &InPlace::emit, &InPlace::place, &InPlace::placed}
                                     : fisrig_record_sink{&r.records, &collect, nullptr, nullptr};
  fisrig_vm vm;
  fisrig_vm_init(&vm, &ops, &sink);
  r.status = fisrig_vm_run(&vm, program.data(), uint32_t(program.size()));
  if (in_place) r.records = place_sink.records;
  r.error_text = vm.error_text;
  r.error_offset = vm.error_offset;
  r.end_ns = engine.now_ns();
  return r;
}

drive::DriveConfig tiny() { return drive::load_profile("tiny-1gb"); }

std::vector<fisrig_run_record> commands_of(const ModelRun& r) {
  std::vector<fisrig_run_record> out;
  for (const auto& x : r.records)
    if (x.kind == FISRIG_RECORD_COMMAND) out.push_back(x);
  return out;
}

// A record's wire stamps, h2d to status, in ticks from its submit (0: no such stamp). The
// engine takes a run's first descriptor once the rig's CPU has built it (VmCpuTime): 3 us,
// 450 ticks, after the start (2.9 us, 435 ticks, for a queued read).
void expect_stamps(const fisrig_cpl_record& c, std::array<uint64_t, 6> want) {
  for (uint64_t& w : want) w = w ? w + c.ts_submit : 0;
  std::array<uint64_t, 6> got{c.ts_h2d, c.ts_accept, c.ts_setup, c.ts_data_first, c.ts_data_last, c.ts_status};
  EXPECT_EQ(got, want) << "h2d, accept, setup, data_first, data_last, status";
}

// One raw command, expected OK, on an idle tiny drive: its completion record.
fisrig_cpl_record single_command(const fisrig_cmd_desc& desc) {
  drive::Drive d(tiny());
  ProgramBuilder p(d.user_sectors());
  p.raw(desc, ProgramBuilder::ok());
  ModelRun r = run(d, p.build());
  EXPECT_EQ(r.status, FISRIG_VM_DONE);
  auto cmds = commands_of(r);
  EXPECT_EQ(cmds.size(), 1u);
  if (cmds.empty()) return fisrig_cpl_record{};
  EXPECT_EQ(cmds[0].cpl.ts_submit, model::ns_to_ticks(model::VmCpuTime::submit_ns(desc)));  // a whole tick
  return cmds[0].cpl;
}

}  // namespace

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
  EXPECT_EQ(d.ftl().valid_slots(), 0u);  // the whole drive was trimmed
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
  EXPECT_GE(d.stats().power_cycles, 1u);
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
  EXPECT_EQ(d.stats().power_cycles, 1u);
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
