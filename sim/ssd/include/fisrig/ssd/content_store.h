// What each sector holds, as the host will read it back.
//
// One 32-bit entry per 4 KiB logical page: either a content word shared by its 8 sectors
// (the common case) or, with the top bit set, an index into a table of per-sector words
// for pages written in pieces. Literal bytes live in a sparse map for the sectors that
// were written with them. This keeps a 256 GB drive at 4 bytes per 4 KiB.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fisrig/ssd/content.h"
#include "fisrig/ssd/page_table.h"

namespace fisrig::drive {

class ContentStore {
 public:
  static constexpr uint32_t kSectorsPerPage = 8;
  using PageWords = std::array<uint32_t, kSectorsPerPage>;
  using SectorBytes = std::array<uint8_t, kSectorBytes>;

  // `table` holds one content entry per page (shared with the FTL's mapping).
  ContentStore(uint64_t sectors, PageTable& table);

  uint32_t word(uint64_t lba) const;
  // Sets n sectors from lba to one word. Literal data goes through write_literal.
  void fill(uint64_t lba, uint64_t n, uint32_t word);
  void write_literal(uint64_t lba, const uint8_t* bytes);  // one sector
  const SectorBytes* literal(uint64_t lba) const;
  // Fills 512 bytes as the sector reads: zeros, its literal bytes or the word's signature.
  void read_bytes(uint64_t lba, uint8_t* out) const;

  // A page's words, for undo records (power loss) and restoring them.
  PageWords page(uint64_t lpn) const;
  void restore_page(uint64_t lpn, const PageWords& words);
  bool page_is_uniform(uint64_t lpn, uint32_t* word) const;

  void clear();  // everything reads zeros (secure erase)
  void prefetch(uint64_t lpn) const { pages_.prefetch(lpn); }
  uint64_t sectors() const { return sectors_; }
  size_t mixed_pages() const { return mixed_.size() - free_mixed_.size(); }
  size_t literal_sectors() const { return literal_.size(); }

 private:
  static constexpr uint32_t kMixedBit = 0x80000000u;
  void set_sector(uint64_t lba, uint32_t word);
  void make_uniform(uint64_t lpn, uint32_t word);

  uint64_t sectors_;
  PageTable& pages_;
  std::vector<PageWords> mixed_;
  std::vector<uint32_t> free_mixed_;
  std::unordered_map<uint64_t, SectorBytes> literal_;
};

// The bytes a sector with a content word reads as, when no literal bytes were written:
// the word and the LBA repeated, so that misplaced or stale data is recognisable.
void signature_bytes(uint32_t word, uint64_t lba, uint8_t* out);

}  // namespace fisrig::drive
