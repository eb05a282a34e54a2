// What a descriptor says, read as the engine model needs it (engine_if.h's struct fisrig_cmd_desc).
#pragma once

#include <cstdint>

#include "engine_model.h"
#include "protocol_mismatch.h"

namespace fisrig::model {

namespace ata = drive::ata;

inline bool is_queued(const fisrig_cmd_desc& d) { return mismatch::queued(d.protocol); }
inline uint64_t lba_of(const fisrig_cmd_desc& d) {
  uint64_t v = 0;
  for (int i = 5; i >= 0; --i) v = (v << 8) | d.lba[i];
  return v;
}
inline void put_lba(uint8_t out[6], uint64_t v) {
  for (int i = 0; i < 6; ++i) out[i] = uint8_t(v >> (8 * i));
}
inline uint32_t sectors_of(const fisrig_cmd_desc& d) {
  uint32_t n = is_queued(d) ? d.features : d.count;
  return n ? n : 65536;
}
// The dwords of the FIS that asks for a protocol's data (the ts_setup stamp's); 0 for READ
// DMA EXT and non-data commands, which have none.
inline uint32_t setup_dwords(uint8_t proto) {
  namespace fd = drive::fis_dwords;
  switch (proto) {
    case FISRIG_PROTO_FPDMA_IN:
    case FISRIG_PROTO_FPDMA_OUT: return fd::kDmaSetup;
    case FISRIG_PROTO_DMA_OUT: return fd::kDmaActivate;
    case FISRIG_PROTO_PIO_IN:
    case FISRIG_PROTO_PIO_OUT: return fd::kPioSetup;
    default: return 0;
  }
}
// A descriptor's timeout, the engine's default when it says 0 (engine_if.h).
inline uint64_t timeout_ticks_of(const fisrig_cmd_desc& d) {
  return d.timeout_ticks ? d.timeout_ticks : EngineModel::kDefaultTimeoutTicks;
}
constexpr uint64_t kSectorsPerDataFis = drive::fis_dwords::kMaxDataPayload / (drive::ata::kSectorBytes / 4);

}  // namespace fisrig::model
