// The rig's generated data (engine_if.h's ZEROS, STAMP and LFSR sources) as the SSD keeps
// it and as it reads back. The SSD stores a pattern's sector as one content word (1 + the
// descriptor's data_word), so a whole-drive fill fits in memory; the engine that wrote it
// knows its bytes: the integrity stamp at compress_pct 100 unless the write said otherwise.
// With remembering on, the writes that did (LFSR data, another compress_pct) are kept, one
// entry each, which runs without read-back do not need. Both engine models use it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "fisrig/ssd/content.h"

extern "C" {
#include "fisrig/engine_if.h"
#include "fisrig/pattern.h"
}

namespace fisrig::model {

class PatternStyles {
 public:
  void remember(bool on) { remember_ = on; }

  // A write's payload for a generated source (ZEROS, STAMP, LFSR), its style noted.
  drive::WritePayload payload(uint8_t data_source, uint32_t data_word, uint8_t compress_pct) {
    drive::WritePayload p;
    if (data_source == FISRIG_DATA_ZEROS) {
      p.kind = drive::WritePayload::Kind::kZeros;
      return p;
    }
    // The pattern generator's sector is fully described by its word and the LBA.
    p.kind = drive::WritePayload::Kind::kWord;
    p.word = 1 + data_word % drive::kMaxUserWord;
    p.compress_pct = data_source == FISRIG_DATA_LFSR || !compress_pct ? 100 : compress_pct;
    if (remember_) {
      uint16_t style = uint16_t(data_source << 8 | std::min<uint8_t>(compress_pct, 100));
      if (style != (FISRIG_DATA_STAMP << 8 | 100)) styles_[p.word] = style;
      else styles_.erase(p.word);
    }
    return p;
  }

  // The bytes of a sector holding content word `word` (zeros, or a pattern's, damaged where
  // a power fault flipped a bit), as the rig's DMA would land them; false for a word of
  // literal bytes or past the patterns', which the SSD's content has.
  bool render(uint32_t word, uint64_t lba, uint8_t* out) const {
    uint32_t dw[FISRIG_SECTOR_DWORDS];
    uint32_t w = drive::is_damaged(word) ? word & ~drive::kDamagedBit : word;
    if (w == drive::kZeroWord) {
      std::memset(out, 0, drive::kSectorBytes);
      return true;
    }
    if (w == drive::kLiteralWord || w > drive::kMaxUserWord) return false;
    auto it = styles_.find(w);
    uint16_t style = it == styles_.end() ? uint16_t(FISRIG_DATA_STAMP << 8 | 100) : it->second;
    fisrig_pattern_sector(style >> 8, lba, w - 1, uint8_t(style & 0xFF), dw);
    if (drive::is_damaged(word)) drive::damage_sector(dw, lba);
    for (uint32_t i = 0; i < FISRIG_SECTOR_DWORDS; ++i)
      for (int b = 0; b < 4; ++b) out[4 * i + b] = uint8_t(dw[i] >> (8 * b));
    return true;
  }

 private:
  bool remember_ = false;
  std::unordered_map<uint32_t, uint16_t> styles_;  // word -> data_source << 8 | compress_pct
};

}  // namespace fisrig::model
