// What the model target's tests share: a program run through the VM and the engine model
// on a drive, its records, and a tiny drive's profile.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "engine_model.h"
#include "program_builder.h"

namespace fisrig::test {

struct ModelRun {
  fisrig_vm_status status;
  std::vector<fisrig_run_record> records;
  const char* error_text = nullptr;
  uint32_t error_offset = 0;
  drive::SimTime end_ns = 0;
};

inline int collect(void* ctx, const fisrig_run_record* r) {
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

inline ModelRun run(drive::Drive& d, const std::vector<uint8_t>& program, bool in_place = false) {
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

inline drive::DriveConfig tiny() { return drive::load_profile("tiny-1gb"); }

inline std::vector<fisrig_run_record> commands_of(const ModelRun& r) {
  std::vector<fisrig_run_record> out;
  for (const auto& x : r.records)
    if (x.kind == FISRIG_RECORD_COMMAND) out.push_back(x);
  return out;
}

// A record's wire stamps, h2d to status, in ticks from its submit (0: no such stamp). The
// engine takes a run's first descriptor once the rig's CPU has built it (VmCpuTime): 3 us,
// 450 ticks, after the start (2.9 us, 435 ticks, for a queued read).
inline void expect_stamps(const fisrig_cpl_record& c, std::array<uint64_t, 6> want) {
  for (uint64_t& w : want) w = w ? w + c.ts_submit : 0;
  std::array<uint64_t, 6> got{c.ts_h2d, c.ts_accept, c.ts_setup, c.ts_data_first, c.ts_data_last, c.ts_status};
  EXPECT_EQ(got, want) << "h2d, accept, setup, data_first, data_last, status";
}

// One raw command, expected OK, on an idle tiny drive: its completion record.
inline fisrig_cpl_record single_command(const fisrig_cmd_desc& desc) {
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

}  // namespace fisrig::test
