// The rig's data patterns (firmware/core/include/fisrig/pattern.h) in and out of the
// Drive's content words.
//
// The Drive keeps one 31-bit content word per sector, not the bytes. The host's pattern
// generator sends real bytes, but every ZEROS, STAMP or LFSR sector is a function of its
// LBA, the descriptor's data_word and compress_pct alone, so a received sector that is
// exactly such a sector is stored as a word: 0 for zeros, otherwise an id (1, 2, 3, ...)
// in a dictionary of (kind, data_word, compress_pct). STAMP carries data_word and
// compress_pct in its dwords 2 and 1; LFSR's seed comes back from its first dword because
// xorshift32 is invertible, and data_word from the seed. Anything else is literal bytes.
// Reads regenerate the bytes from the words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fisrig/sata/ata.h"

namespace fisrig::device {

constexpr uint32_t kSectorDwords = 128;

class PatternCodec {
 public:
  enum class Kind : uint8_t { kZeros = 2, kStamp = 3, kLfsr = 4 };  // pattern.h's numbers
  struct Entry {
    Kind kind = Kind::kZeros;
    uint32_t data_word = 0;
    uint8_t compress_pct = 100;
  };
  // What a received sector holds, as the Drive stores it.
  struct Content {
    drive::WritePayload::Kind kind = drive::WritePayload::Kind::kLiteral;
    uint32_t word = 0;  // kWord: the dictionary word; kZeros: 0
    uint8_t compress_pct = 100;
    bool operator==(const Content&) const = default;
  };

  // One sector as it came off the wire (128 dwords) for `lba`. New pattern parameters get
  // the next dictionary word.
  Content classify(uint64_t lba, const uint32_t* dwords);
  // The 128 dwords a sector reads as: zeros, the literal bytes (`literal`, 512 bytes, for
  // kLiteralWord), the pattern of a dictionary word, or else the Drive's own signature.
  void expand(uint32_t word, uint64_t lba, const uint8_t* literal, uint32_t* out) const;

  const Entry* entry(uint32_t word) const {
    return word >= 1 && word <= entries_.size() ? &entries_[word - 1] : nullptr;
  }
  size_t dictionary_size() const { return entries_.size(); }

  // xorshift32 backwards: the state before one step.
  static uint32_t xorshift32_inverse(uint32_t x);

 private:
  uint32_t word_for(const Entry& e);
  std::vector<Entry> entries_;                      // word w is entries_[w - 1]
  std::unordered_map<uint64_t, uint32_t> lookup_;  // (kind, pct, data_word) -> word
};

}  // namespace fisrig::device
