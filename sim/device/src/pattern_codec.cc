#include "fisrig/device/pattern_codec.h"

#include <bit>
#include <cstring>

#include "fisrig/ssd/content_store.h"

extern "C" {
#include "fisrig/pattern.h"
}

namespace fisrig::device {

// Sector bytes are the little-endian bytes of the dwords on the wire; the codec copies
// between the two with memcpy.
static_assert(std::endian::native == std::endian::little);

uint32_t PatternCodec::xorshift32_inverse(uint32_t x) {
  // Each step x ^= x << k (or >> k) is undone by XORing in every multiple of the shift.
  x ^= x << 5, x ^= x << 10, x ^= x << 20;  // x << 5
  x ^= x >> 17;                            // x >> 17 (34 > 32: one term)
  x ^= x << 13, x ^= x << 26;              // x << 13
  return x;
}

uint32_t PatternCodec::word_for(const Entry& e) {
  uint64_t key = uint64_t(e.kind) << 40 | uint64_t(e.compress_pct) << 32 | e.data_word;
  auto it = lookup_.find(key);
  if (it != lookup_.end()) return it->second;
  if (entries_.size() >= drive::kMaxUserWord) return 0;  // full: the caller stores literal bytes
  entries_.push_back(e);
  uint32_t w = uint32_t(entries_.size());
  lookup_.emplace(key, w);
  return w;
}

PatternCodec::Content PatternCodec::classify(uint64_t lba, const uint32_t* d) {
  using PK = drive::WritePayload::Kind;
  uint32_t all = 0;
  for (uint32_t i = 0; i < kSectorDwords; ++i) all |= d[i];
  if (!all) return Content{PK::kZeros, drive::kZeroWord, 0};

  uint32_t expect[kSectorDwords];
  Entry e;
  if (d[1] >> 24 == FISRIG_STAMP_MAGIC && d[0] == uint32_t(lba) && (d[1] & 0xFFFF) == ((lba >> 32) & 0xFFFF) &&
      ((d[1] >> 16) & 0xFF) <= 100) {
    e = Entry{Kind::kStamp, d[2], uint8_t(d[1] >> 16)};
  } else {
    // LFSR: dword 0 is one xorshift32 step from the seed.
    uint32_t seed = xorshift32_inverse(d[0]);
    uint32_t hi = uint32_t(lba >> 32) & 0xFFFFu;
    e = Entry{Kind::kLfsr, seed ^ uint32_t(lba) ^ (hi << 16) ^ (hi >> 16) ^ 0xA5A5A5A5u, 100};
  }
  fisrig_pattern_sector(int(e.kind), lba, e.data_word, e.compress_pct, expect);
  if (std::memcmp(expect, d, sizeof expect) != 0) return Content{};
  uint32_t w = word_for(e);
  if (!w) return Content{};
  return Content{PK::kWord, w, e.compress_pct};
}

void PatternCodec::expand(uint32_t word, uint64_t lba, const uint8_t* literal, uint32_t* out) const {
  if (drive::is_damaged(word)) {
    expand(word & ~drive::kDamagedBit, lba, literal, out);
    drive::damage_sector(out, lba);
  } else if (word == drive::kZeroWord) {
    std::memset(out, 0, kSectorDwords * 4);
  } else if (word == drive::kLiteralWord && literal) {
    std::memcpy(out, literal, kSectorDwords * 4);
  } else if (const Entry* e = entry(word)) {
    fisrig_pattern_sector(int(e->kind), lba, e->data_word, e->compress_pct, out);
  } else {
    uint8_t bytes[drive::ata::kSectorBytes];
    drive::signature_bytes(word, lba, bytes);
    std::memcpy(out, bytes, sizeof bytes);
  }
}

}  // namespace fisrig::device
