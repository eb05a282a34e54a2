// What the SSD stores and hands back, whatever protocol carries it: the 512-byte logical
// block, what a write brings (a content word per sector, or literal bytes), where a read
// delivers, and the content words with a fixed meaning.
#pragma once

#include <cstdint>

namespace fisrig::drive {

constexpr uint32_t kSectorBytes = 512;

// What a write carries. The drive stores a 31-bit content word per sector rather than
// the bytes (a 256 GB drive must fit in memory); a generated pattern is fully described
// by its word and the LBA, so the word is the data. Literal bytes are kept only for the
// sectors that were written with them.
struct WritePayload {
  enum class Kind : uint8_t { kZeros, kWord, kLiteral };
  Kind kind = Kind::kWord;
  uint32_t word = 1;             // kWord: 1 .. kMaxUserWord, the same for every sector
  uint8_t compress_pct = 100;    // physical size after compression, percent (compressing drives)
  const uint8_t* bytes = nullptr;  // kLiteral: 512 bytes per sector
};

// A payload the SSD can store: a word in the user range, or literal bytes given.
inline bool payload_ok(const WritePayload& pl);

// Where a read delivers its data: one content word per sector and/or the bytes.
// Either may be null. Words of sectors written with literal data read as kLiteralWord.
struct ReadSink {
  uint32_t* words = nullptr;
  uint8_t* bytes = nullptr;
};

// Content words with a fixed meaning.
constexpr uint32_t kZeroWord = 0;
constexpr uint32_t kLiteralWord = 0x7FFFFFFF;
constexpr uint32_t kTornWord = 0x7FFFFFFE;  // a program cut by power loss: reads UNC
constexpr uint32_t kMaxUserWord = 0x3FFFFFFF;
// A user word with this bit set reads as that word's data with one bit flipped (a page a
// power fault damaged: PowerConfig::bit_errors_ns); damage_sector says which bit.
constexpr uint32_t kDamagedBit = 0x40000000;
inline bool is_damaged(uint32_t w) { return (w & kDamagedBit) && w < kTornWord; }
// The bit a damaged sector has flipped: one of the payload dwords 3..126 (an integrity
// stamp's body, pattern.h), picked by the LBA, so a checker sees a 1-bit CRC failure.
inline void damage_sector(uint32_t* dwords, uint64_t lba) { dwords[3 + lba % 124] ^= 1u << (lba % 32); }

inline bool payload_ok(const WritePayload& pl) {
  return !((pl.kind == WritePayload::Kind::kWord && (pl.word == 0 || pl.word > kMaxUserWord)) ||
           (pl.kind == WritePayload::Kind::kLiteral && !pl.bytes));
}

}  // namespace fisrig::drive
