// Which SATA protocol each ATA command runs (ACS-3 / SATA 3.x), as far as the Drive
// implements the command set. Commands the Drive does not know are non-data: it aborts
// them with ABRT in a Register D2H.
#pragma once

#include <cstdint>

#include "fisrig/drive/ata.h"
#include "fisrig/drive/smart.h"

namespace fisrig::device {

enum class Protocol : uint8_t {
  kNonData,   // H2D, then D2H
  kPioIn,     // H2D, per 512-byte block PIO Setup + Data; the last PIO Setup's E_Status ends it
  kPioOut,    // H2D, PIO Setup, the host's Data FIS, D2H
  kDmaIn,     // H2D, Data FISes of up to 8 KiB, D2H
  kDmaOut,    // H2D, DMA Activate before each of the host's Data FISes, D2H
  kFpdmaIn,   // H2D, D2H releasing the bus; later DMA Setup + Data FISes; SDB
  kFpdmaOut,  // H2D, D2H; later DMA Setup, DMA Activate before each host Data FIS; SDB
};

// SMART's protocol depends on its subcommand (FEATURES 7:0): host/fisrig/compile.py's
// PROTOCOL_OF and SMART_PROTOCOL_OF say the same for the host.
constexpr Protocol protocol_of(uint8_t command, uint16_t features) {
  namespace ata = drive::ata;
  switch (command) {
    case ata::kSmart:
      return (features & 0xFF) == drive::smart::kReadData || (features & 0xFF) == drive::smart::kReadThresholds
                 ? Protocol::kPioIn
                 : Protocol::kNonData;
    case ata::kIdentifyDevice:
    case ata::kReadLogExt:
      return Protocol::kPioIn;
    case ata::kSecuritySetPassword:
    case ata::kSecurityEraseUnit:
      return Protocol::kPioOut;
    case ata::kReadDmaExt:
    case ata::kReadLogDmaExt:
      return Protocol::kDmaIn;
    case ata::kWriteDmaExt:
    case ata::kWriteDmaFuaExt:
    case ata::kDataSetManagement:
      return Protocol::kDmaOut;
    case ata::kReadFpdmaQueued:
      return Protocol::kFpdmaIn;
    case ata::kWriteFpdmaQueued:
    case ata::kSendFpdmaQueued:
      return Protocol::kFpdmaOut;
    default:
      return Protocol::kNonData;
  }
}

constexpr bool is_queued(Protocol p) { return p == Protocol::kFpdmaIn || p == Protocol::kFpdmaOut; }
constexpr bool is_data_out(Protocol p) {
  return p == Protocol::kPioOut || p == Protocol::kDmaOut || p == Protocol::kFpdmaOut;
}
constexpr bool is_data_in(Protocol p) {
  return p == Protocol::kPioIn || p == Protocol::kDmaIn || p == Protocol::kFpdmaIn;
}

}  // namespace fisrig::device
