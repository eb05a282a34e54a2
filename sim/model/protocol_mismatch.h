// A descriptor whose protocol disagrees with its command (`fisrig raw --protocol`): what
// the engine model does, as the gateware does it (hw/fisrig_hw/engine/sequencer.py).
//
// The drive answers by its opcode, whatever the host believes: sim/device's
// ata_protocol.h says with which protocol for the Drive's command set (what the rtl
// target's device side runs, and what the Drive books on the model's wire). The gateware
// runs the descriptor's protocol only where it decides something, and otherwise follows
// the FISes that come:
//   - a queued descriptor takes the first D2H as the one that releases it (an ERR in it
//     ends it ATA_ERROR) and then waits for a Set Device Bits with its tag;
//   - a non-queued one ends at the first D2H without BSY, or, after a PIO Setup and its
//     Data FIS, with that PIO Setup's ending status;
//   - DMA out alone knows its data's length before the drive asks for it: a DMA Activate
//     under another non-queued protocol gets an empty Data FIS, and the drive asks again;
//     under a queued one it gets nothing;
//   - a DMA Setup, PIO Setup or Data FIS is taken whatever the descriptor said;
//   - the record says LENGTH where a DMA or FPDMA descriptor moved other than it asked.
// So, by the drive's answer and the descriptor's protocol:
//   - the same, or both queued, or both non-queued (but DMA out's below): the command
//     runs as the drive answers it, stamped by the drive's FISes (its setup FIS, a PIO-in
//     answer's status at its last data dword);
//   - a queued command under a non-queued protocol ends at its releasing D2H (OK, or
//     LENGTH for DMA), and its data and SDB come later for no one;
//   - a non-queued command under a queued protocol: a PIO-in answer ends as PIO in does;
//     an error D2H ends it ATA_ERROR; a good D2H is taken for its release and the SDB
//     never comes (TIMEOUT); a DMA Activate gets no data (TIMEOUT);
//   - DMA out under another non-queued protocol: empty Data FISes until TIMEOUT.
// The drive that asked for data and got none writes nothing (AtaCommand::
// host_sends_no_data). tests/rtl/test_raw_mismatch.py holds the two targets to each other
// on every pair.
#pragma once

#include <cstdint>

#include "fisrig/device/ata_protocol.h"
#include "fisrig/sata/ata.h"

extern "C" {
#include "fisrig/engine_if.h"
}

namespace fisrig::model::mismatch {

static_assert(uint8_t(device::Protocol::kNonData) == FISRIG_PROTO_NON_DATA &&
                  uint8_t(device::Protocol::kPioIn) == FISRIG_PROTO_PIO_IN &&
                  uint8_t(device::Protocol::kPioOut) == FISRIG_PROTO_PIO_OUT &&
                  uint8_t(device::Protocol::kDmaIn) == FISRIG_PROTO_DMA_IN &&
                  uint8_t(device::Protocol::kDmaOut) == FISRIG_PROTO_DMA_OUT &&
                  uint8_t(device::Protocol::kFpdmaIn) == FISRIG_PROTO_FPDMA_IN &&
                  uint8_t(device::Protocol::kFpdmaOut) == FISRIG_PROTO_FPDMA_OUT,
              "ata_protocol.h's Protocol numbers as enum fisrig_protocol");

// ata_protocol.h's, on a descriptor's protocol number (the same numbers: above).
constexpr bool queued(uint8_t p) { return device::is_queued(device::Protocol(p)); }
constexpr bool data_in(uint8_t p) { return device::is_data_in(device::Protocol(p)); }
constexpr bool data_out(uint8_t p) { return device::is_data_out(device::Protocol(p)); }
// A DMA or FPDMA descriptor: its record says LENGTH when it moved other than it asked.
constexpr bool sized(uint8_t p) {
  return p == FISRIG_PROTO_DMA_IN || p == FISRIG_PROTO_DMA_OUT || queued(p);
}

// The protocol the drive answers `command` with (FEATURES: SMART's subcommand).
inline uint8_t answer_of(uint8_t command, uint16_t features) {
  return uint8_t(device::protocol_of(command, features));
}

// The drive asks for data (DMA Activate) that the host's protocol does not send.
constexpr bool host_sends_no_data(uint8_t host, uint8_t answer) {
  return answer == FISRIG_PROTO_DMA_OUT && host != FISRIG_PROTO_DMA_OUT;
}

enum class End : uint8_t {
  kAsAnswered,  // by the drive's own status (or its PIO-in data), stamped by its FISes
  kAtRelease,   // a queued command under a non-queued protocol: at its releasing D2H
  kTimeout,     // the rig waits for what never comes: its timeout, then a COMRESET
};

// How the command ends, from the drive's completion as it booked it.
inline End end_of(uint8_t host, uint8_t answer, const drive::Completion& c) {
  if (host == answer) return End::kAsAnswered;
  if (!queued(host) && queued(answer)) return c.t_accept ? End::kAtRelease : End::kTimeout;  // refused: an SDB
  if (host_sends_no_data(host, answer)) return c.t_data_start ? End::kTimeout : End::kAsAnswered;
  if (queued(host) && !queued(answer) && answer != FISRIG_PROTO_PIO_IN)
    return c.ok() ? End::kTimeout : End::kAsAnswered;  // its D2H taken for the release
  return End::kAsAnswered;
}

// Data dwords a sized descriptor asks for (engine/records.py: COUNT, or FEATURES for NCQ, 0
// meaning 65536 sectors); 0 for the others.
inline uint32_t asked_dwords(const fisrig_cmd_desc& d) { return fisrig_desc_dma_sectors(&d) * 128u; }

}  // namespace fisrig::model::mismatch
