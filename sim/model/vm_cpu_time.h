// The rig's CPU time in the VM, on the model target's clock. The model runs the VM natively,
// in no time; on the rig it runs on the SoC's VexRiscv, which takes time to build each
// descriptor and to reap each completion into its record. At queue depth 1 that time is the
// gap between a status and the next command's submit (rtl 8.2 to 8.7 us, model 0.06 without
// it: targets-agree's QD1 4 KiB phases ran 110 to 116% faster on the model, its TRIMs 870%).
// Deeper, it is how fast the queue fills at a phase's start, and the rate at which the CPU
// keeps the queue full (1,139 CPU cycles a command at 150 MHz on 4 KiB writes, 7.6 us,
// against the link's 7.4: docs/rtl-engine.md, "A plan at line rate").
//
// The engine model keeps the VM's clock (EngineModel::cpu_ns_): a descriptor reaches the
// engine when the CPU rings for it, the engine's events up to the CPU's time are handled
// before the CPU looks at the completion ring, and a CPU that waits catches up with the
// engine. The costs are fitted to the rtl target's runs of targets-agree (QD1) and
// targets-agree-qd32 (tests/rtl/test_targets_agree.py and test_line_rate.py hold the model
// to them).
#pragma once

extern "C" {
#include "fisrig/engine_if.h"
}

#include "fisrig/sata/ata.h"
#include "fisrig/ssd/config.h"

namespace fisrig::model {

struct VmCpuTime {
  // From a record put in the completion ring to the CPU's look at it: the record's write
  // to the ring (WireStamps::kRecordTicks) and the CPU's poll of its tail.
  static constexpr drive::SimTime kSeeNs = 750;
  // More, where the CPU waited with nothing else in flight (queue depth 1): the rig's gap
  // from a status to the next submit there is 8.45 to 8.73 us on targets-agree's 4 KiB
  // phases, 130 to 350 ns over kSeeNs + kReapNs + the submit, which at depth 32, where the
  // CPU looks between other commands, would cost the 4 KiB reads their fit (kSeeNs 850
  // put their p99 9.7% off). A fit, as the others: the QD1 phases' IOPS 0.9% of the rig's
  // with it, 2.2% without (docs/model-target.md, "The rig's CPU").
  static constexpr drive::SimTime kIdleWakeNs = 200;
  // A completion reaped into its record and the ring's head written, per completion.
  static constexpr drive::SimTime kReapNs = 4590;
  // A read, write or non-data descriptor built and rung for. With kReapNs, the gap between
  // a status and the next submit at QD1 is 8.40 us (rtl 8.24 to 8.69) and a command at QD32
  // costs the CPU 7.59 us.
  static constexpr drive::SimTime kSubmitNs = 3000;
  // A queued read's, 100 ns less: fitted to targets-agree-qd32's 4 KiB reads, which the rig
  // ran at 133,474 IOPS in bursts of 6.3 H2Ds between data phases with 4.5 commands held;
  // the model with it 133,639, 6.3 and 4.4 (with kSubmitNs 132,066, 5.0 and 3.9). The rig's
  // CPU keeps its queue only just ahead of the link there, so 40 ns more or less a command
  // moves how full it stays (docs/model-target.md, "Queue depth 32", has today's figures).
  static constexpr drive::SimTime kSubmitQueuedReadNs = 2900;
  // A queued write's, 40 ns less than kSubmitNs. The rig's 4 KiB writes at QD32 run at the
  // link's rate, their pipeline unbroken (targets-agree-qd32: 6 of 3,000 writes went without
  // a successor cutting in, on three seeds alike): its CPU keeps its ring ahead of the link
  // through a whole batch of reaps. With kSubmitNs the model's CPU took 7.59 us a write
  // against its link's 7.57 (7.55 with this), fell behind it through each batch (up to 20
  // completions, 92 us), found its ring empty at the batch's end from the 1,231st write on,
  // and 132 writes went alone (mean submit-to-status 18.39 against the rig's 18.97 us; with
  // this 2 alone, 18.97). A whole number of ticks, as the other costs: 2,970 put the passes
  // of ModelProgram.UntilSteadyLoopStopsAtTheFirstSteadyWindow a tick apart in turn.
  static constexpr drive::SimTime kSubmitQueuedWriteNs = 2960;
  // A DSM range block built and staged in the data window for a TRIM (memset, the ranges,
  // the copy, and the count of its LBAs for the record): targets-agree's TRIMs, 30.3 us
  // from a status to the next submit on rtl against 8.4 for a read.
  static constexpr drive::SimTime kDsmBlockNs = 21900;

  static drive::SimTime submit_ns(const fisrig_cmd_desc& d) {
    if (d.protocol == FISRIG_PROTO_FPDMA_IN) return kSubmitQueuedReadNs;
    if (d.command == drive::ata::kWriteFpdmaQueued) return kSubmitQueuedWriteNs;
    bool dsm = d.command == drive::ata::kDataSetManagement || d.command == drive::ata::kSendFpdmaQueued;
    return kSubmitNs + (dsm && d.data_source == FISRIG_DATA_RAM ? kDsmBlockNs : 0);
  }
};

}  // namespace fisrig::model
