// The rig's SATA PHY control as times on the engine's tick: LiteSATA's (litesata/phy/ctrl.py
// and datapath.py), the same on the board and in the rtl target. When the rig sees its link
// fall, and when after a COMRESET or the drive's own COMINIT it has the link up again: the
// first dword of the drive's signature D2H, which the gateware records as
// FISRIG_EVENT_REC_LINK_UP (tests/rtl/test_link_events.py holds the two targets to it).
#pragma once

#include <cstdint>

#include "fisrig/device/oob.h"

namespace fisrig::model::host_phy {

// The align timer: the PHY takes its link for down once no ALIGN came for 256 * 16 cycles.
// The drive sends an ALIGN pair every 256 dwords, so the timer runs out that long after the
// last one it sent before it went quiet: on average half an interval after it fell silent.
constexpr uint64_t kAlignTimerTicks = 256 * 16;
constexpr uint64_t kAlignEveryDwords = 256;
constexpr uint64_t fall_seen_ticks(int gen) {
  return kAlignTimerTicks - kAlignEveryDwords * device::cycles_per_dword(gen) / 2;
}

// The rig's COMRESET bursts, then the drive's delay before it answers with COMINIT.
constexpr uint64_t kComresetToCominitTicks = FISRIG_COMRESET_CYCLES + device::DeviceOob::kCominitDelay;
// The drive's COMINIT bursts, the rig's COMWAKE, the drive's delay and COMWAKE: then ALIGNs.
constexpr uint64_t kCominitToAlignTicks =
    FISRIG_COMRESET_CYCLES + FISRIG_COMWAKE_CYCLES + device::DeviceOob::kComwakeDelay + FISRIG_COMWAKE_CYCLES;
// The PHY control's READY holds the link back until the ALIGNs have been stable 5 ms
// (its stability_timer, 5e-3 * clk_freq at the rig's 150 MHz).
constexpr uint64_t kStabilityTicks = 750000;
// The ALIGN exchange, and the signature's X_RDY/R_RDY and SOF to its first dword (the rtl
// target's COMRESET: 751,339 ticks from the fall to the signature).
constexpr uint64_t kReadyToSignatureTicks = 21;
// The signature to the record of the COMRESET, POWER ON or link wait that waited for it
// (the rtl target's: 54 and 55 ticks after a power-on and a lost link, 67 after a COMRESET).
constexpr uint64_t kSignatureToOpTicks = 55;
// The engine's COMRESET to the link's fall: the step's next cycle, a timeout's second.
constexpr uint64_t kComresetFallTicks = 1, kTimeoutFallTicks = 2;

// The drive's COMINIT at `cominit_tick` to the signature's first dword.
constexpr uint64_t signature_after(uint64_t cominit_tick) {
  return cominit_tick + kCominitToAlignTicks + kStabilityTicks + kReadyToSignatureTicks;
}

}  // namespace fisrig::model::host_phy
