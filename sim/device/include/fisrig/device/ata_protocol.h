// Which SATA protocol each ATA command runs (ACS-3 / SATA 3.x), as far as the Drive
// implements the command set. Commands the Drive does not know are non-data: it aborts
// them with ABRT in a Register D2H.
#pragma once

#include <cstdint>

#include "fisrig/sata/ata.h"

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

// The protocol of each opcode is fisrig/ata.h's, and Protocol's values are engine_if.h's.
static_assert(uint8_t(Protocol::kNonData) == FISRIG_PROTO_NON_DATA && uint8_t(Protocol::kPioIn) == FISRIG_PROTO_PIO_IN &&
                  uint8_t(Protocol::kPioOut) == FISRIG_PROTO_PIO_OUT && uint8_t(Protocol::kDmaIn) == FISRIG_PROTO_DMA_IN &&
                  uint8_t(Protocol::kDmaOut) == FISRIG_PROTO_DMA_OUT && uint8_t(Protocol::kFpdmaIn) == FISRIG_PROTO_FPDMA_IN &&
                  uint8_t(Protocol::kFpdmaOut) == FISRIG_PROTO_FPDMA_OUT,
              "engine_if.h's enum fisrig_protocol");
inline Protocol protocol_of(uint8_t command, uint16_t features) {
  return Protocol(fisrig_ata_protocol(command, features));
}

constexpr bool is_queued(Protocol p) { return p == Protocol::kFpdmaIn || p == Protocol::kFpdmaOut; }
constexpr bool is_data_out(Protocol p) {
  return p == Protocol::kPioOut || p == Protocol::kDmaOut || p == Protocol::kFpdmaOut;
}
constexpr bool is_data_in(Protocol p) {
  return p == Protocol::kPioIn || p == Protocol::kDmaIn || p == Protocol::kFpdmaIn;
}

}  // namespace fisrig::device
