// The model target's clock: engine_if.h's 150 MHz tick on the drive's ns, and where on it
// a FIS's dwords cross the wire, so that the engine model stamps what engine_if.h defines
// (the tick a FIS's first dword, or a data dword, crossed the rig's pins).
#pragma once

#include <cstdint>

#include "fisrig/ssd/config.h"
#include "fisrig/sata/link_timing.h"

extern "C" {
#include "fisrig/engine_if.h"
}

namespace fisrig::model {

using drive::SimTime;

// The tick as engine_if.h defines it (FISRIG_TICK_NS_NUM / FISRIG_TICK_NS_DEN ns). The
// model schedules in ns, so a time in ticks becomes the first ns at or after it (rounded
// up), and that ns maps back to the same tick: a deadline never fires a tick early.
constexpr uint64_t ns_to_ticks(SimTime ns) { return ns * FISRIG_TICK_NS_DEN / FISRIG_TICK_NS_NUM; }
constexpr SimTime ticks_to_ns(uint64_t ticks) {
  return (ticks * FISRIG_TICK_NS_NUM + FISRIG_TICK_NS_DEN - 1) / FISRIG_TICK_NS_DEN;
}

// Where a FIS's dwords cross the wire inside its reservation on the drive's link
// (link_timing.h): the reservation starts with X_RDY/R_RDY (2 dwords) and SOF, then the
// FIS's own dwords (its type first), then CRC, EOF, WTRM and R_IP/R_OK (5 dwords); of its
// ALIGN pairs, one pair per 256 dwords falls inside a long FIS and one pair ends it; then
// the SYNC between frames. So the FIS's first dword is 3 dwords after the start, a Data
// FIS's first data dword 4, and its last data dword 8 dwords before the end, whatever its
// length.
class WireStamps {
 public:
  static constexpr uint32_t kBeforeFis = 3;       // X_RDY/R_RDY, SOF
  static constexpr uint32_t kAfterPayload = 5 + 2 + 1;  // CRC, EOF, WTRM, R_IP/R_OK; one ALIGN pair; SYNC
  // The rig's reaction to a DMA Activate, DMA Setup or PIO Setup asking for data: its first
  // data dword comes 6 ticks after the drive's booking back to back would put it (on
  // targets-agree, the gateware's DMA writes, PIO out and TRIMs: 220 against 180 ns from the
  // H2D for a DMA write's, the setup 1 tick later); the link's R_OK to the setup FIS and
  // LiteSATA's transmit path (tests/rtl/test_targets_agree.py).
  static constexpr uint64_t kHostDataTurnaroundTicks = 6;
  // From taking a descriptor (ts_submit) to the start of its Register H2D on the wire: the
  // sequencer's ISSUE and H2D states and LiteSATA's transmit path. On targets-agree-qd32's
  // rtl run, 2,434 of 3,000 4 KiB reads whose wire was free had their H2D's first dword
  // 60 ns after ts_submit (the model's 20 without it: 3 dwords of X_RDY, R_RDY and SOF);
  // with it alone, the model's reads held 5.0 commands in flight where they held 6.0 (rtl 4.5).
  static constexpr uint64_t kTakeToH2dTicks = 6;
  // A queued write's successor, taken before the write's DMA Setup came, sends its H2D
  // 13 ticks (87 ns) after that setup's reservation: the sequencer takes in the setup first.
  // On targets-agree-qd32's rtl run the successor's H2D came 206 or 207 ns after the setup's
  // first dword (2,542 of 2,984 4 KiB writes; 99 of 125 at 128 KiB), the setup's 18 dwords
  // being 120 ns here; the model's came at once without this, 94 ns a write faster than the
  // rig (4 KiB writes 134,789 IOPS against 131,899). 14 ticks before the SYNC dword.
  static constexpr uint64_t kSetupToCutInTicks = 13;
  // A queued write's data phase is over for the sequencer once its data path has handed
  // the last Data FIS on: it takes the next descriptor 7 to 15 ticks before the last data
  // dword crosses (targets-agree-qd32's rtl run: 4 KiB writes 7 ticks 1,383 times, 9 ticks
  // 106, 11 ticks 1,411, 12 ticks 9, 13 ticks 84; 128 KiB writes 13 ticks 117 times, 15
  // ticks 9), so 17 ticks before the end of its reservation here, 9 before its last dword
  // (8 dwords before that end: kAfterPayload).
  static constexpr uint64_t kDataOutDoneTicks = 17;
  // The sequencer writes each completion's record (engine/records.py) before it takes
  // another descriptor: from 16 ticks after the status FIS's first dword, 44 ticks a record
  // (EngineModel::records_until_). On targets-agree-qd32's rtl run the first take after an
  // SDB ending one 128 KiB read came 400 (p10) to 410 ns (p50) after its first dword, after
  // an SDB ending two 700 to 706: 60 and 105 ticks. 16 is the p10: at 17 the model's takes
  // lose, by a tick, the race at a 4 KiB write phase's start by which the rig's write
  // pipeline forms (docs/model-target.md, "Queue depth 32"), and its writes held one.
  static constexpr uint64_t kStatusToRecordTicks = 16;
  static constexpr uint64_t kRecordTicks = 44;
  // ... when the CPU is idle, or after a status that is not a queued read's. After a 4 KiB
  // read's status that ended a run of data phases, with a descriptor waiting and the
  // accept in by 46 ticks, the first take on targets-agree-qd32's rtl run came 115 to 175
  // ticks after the status (249 of 410, mean 143) or 74 to 114 (161, mean 97), where an
  // idle CPU's 128 KiB reads had it at 60 (16 + 44): the record writer shares the SoC's bus
  // with the CPU. The two modes split as the CPU's time does between reaping and building
  // descriptors (4,590 and 2,900 ns a read), so the upper is taken for the CPU reaping and
  // the lower for it building (inferred from the records: the bus is not observed). After
  // 4 KiB writes' statuses the rig shows none of it with the CPU as busy (the next take 60
  // to 66 ticks after the status: the pipeline forming at a phase's start on three seeds,
  // and re-forming after each of the 6 writes that went alone), why is not known; the model
  // holds only a queued read's. So the first record of such a status waits 83 ticks more
  // (+-25: the rig's 55 to 115) while the CPU reaps, 37 more (+-20: 14 to 54) while it
  // builds, drawn from where in the CPU's work it came (EngineModel::record_stall_ticks).
  // Without it the model took the first descriptor of a burst 250 to 550 ns early and fit
  // one or two H2Ds more into it before the run's first data phase: 4 KiB reads held 5.31
  // where the rig held 5.10 (mean submit-to-status 39.69 against 38.16 us), and in bursts
  // of 9 where the rig's were of 7 and 8 (p99 from the H2D 64.80 against 57.47 us).
  static constexpr uint64_t kRecordStallReapingTicks = 83;
  static constexpr uint64_t kRecordStallReapingSpread = 25;
  static constexpr uint64_t kRecordStallBuildingTicks = 37;
  static constexpr uint64_t kRecordStallBuildingSpread = 20;
  // The rig's own time in its NCQ error recovery, beyond what the wire costs: taking in the
  // error SDB and starting its READ LOG EXT 10h, and from the log's last data dword to the
  // records it ends (engine/sequencer.py, RECOVERED). Measured as one sum on the gateware: a failing
  // queued read's status came 18 ticks (120 ns) after the model's (targets-agree's NCQ
  // error plan, tests/rtl/test_targets_agree.py); the model puts it before the log's H2D.
  static constexpr uint64_t kNcqRecoveryTicks = 18;
  explicit WireStamps(const drive::InterfaceConfig& cfg)
      : link_(cfg), ticks_per_dword_(uint64_t(FISRIG_TICK_HZ / cfg.dwords_per_s())) {}
  // The FIS of `dwords` (header included) whose reservation ended at `end`: its first dword.
  uint64_t first_dword(SimTime end, uint32_t dwords) const {
    SimTime len = link_.fis_ns(dwords);
    return ns_to_ticks(end > len ? end - len : 0) + kBeforeFis * ticks_per_dword_;
  }
  // The FIS whose reservation started at `start`: its first dword (its type).
  uint64_t fis_dword(SimTime start) const { return ns_to_ticks(start) + kBeforeFis * ticks_per_dword_; }
  // The Data FIS whose reservation started at `start`: its first data dword.
  uint64_t first_data_dword(SimTime start) const {
    return ns_to_ticks(start) + (kBeforeFis + 1) * ticks_per_dword_;
  }
  // The Data FIS whose reservation ended at `end`: its last data dword.
  uint64_t last_data_dword(SimTime end) const {
    return ns_to_ticks(end) - kAfterPayload * ticks_per_dword_;
  }

 private:
  drive::LinkTiming link_;
  uint64_t ticks_per_dword_;
};

}  // namespace fisrig::model
