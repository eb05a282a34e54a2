#include "fisrig/ssd/content_store.h"

#include <cstring>


namespace fisrig::drive {

ContentStore::ContentStore(uint64_t sectors, PageTable& table) : sectors_(sectors), pages_(table) {}

uint32_t ContentStore::word(uint64_t lba) const {
  uint32_t e = pages_.content(lba / kSectorsPerPage);
  if (e & kMixedBit) return mixed_[e & ~kMixedBit][lba % kSectorsPerPage];
  return e;
}

void ContentStore::make_uniform(uint64_t lpn, uint32_t word) {
  uint32_t& e = pages_.content(lpn);
  if (e & kMixedBit) free_mixed_.push_back(e & ~kMixedBit);
  e = word;
}

void ContentStore::set_sector(uint64_t lba, uint32_t word) {
  uint64_t lpn = lba / kSectorsPerPage;
  uint32_t& e = pages_.content(lpn);
  if (!(e & kMixedBit)) {
    if (e == word) return;
    uint32_t idx;
    if (!free_mixed_.empty()) {
      idx = free_mixed_.back();
      free_mixed_.pop_back();
    } else {
      idx = uint32_t(mixed_.size());
      mixed_.emplace_back();
    }
    mixed_[idx].fill(e);
    e = idx | kMixedBit;
  }
  PageWords& w = mixed_[e & ~kMixedBit];
  w[lba % kSectorsPerPage] = word;
  // Fold back to one word once the page is whole again.
  for (uint32_t x : w)
    if (x != w[0]) return;
  make_uniform(lpn, w[0]);
}

void ContentStore::fill(uint64_t lba, uint64_t n, uint32_t word) {
  uint64_t end = lba + n;
  while (lba < end) {
    bool page_aligned = lba % kSectorsPerPage == 0;
    if (page_aligned && end - lba >= kSectorsPerPage) {
      uint64_t lpn = lba / kSectorsPerPage;
      if (!literal_.empty() && (pages_.content(lpn) == kLiteralWord || (pages_.content(lpn) & kMixedBit))) {
        for (uint32_t i = 0; i < kSectorsPerPage; ++i) literal_.erase(lba + i);
      }
      make_uniform(lpn, word);
      lba += kSectorsPerPage;
    } else {
      if (!literal_.empty()) literal_.erase(lba);
      set_sector(lba, word);
      ++lba;
    }
  }
}

void ContentStore::write_literal(uint64_t lba, const uint8_t* bytes) {
  std::memcpy(literal_[lba].data(), bytes, kSectorBytes);
  set_sector(lba, kLiteralWord);
}

const ContentStore::SectorBytes* ContentStore::literal(uint64_t lba) const {
  auto it = literal_.find(lba);
  return it == literal_.end() ? nullptr : &it->second;
}

void ContentStore::read_bytes(uint64_t lba, uint8_t* out) const {
  uint32_t w = word(lba);
  if (w == kZeroWord) {
    std::memset(out, 0, kSectorBytes);
  } else if (w == kLiteralWord) {
    const SectorBytes* b = literal(lba);
    if (b) std::memcpy(out, b->data(), kSectorBytes);
    else std::memset(out, 0, kSectorBytes);
  } else {
    signature_bytes(w, lba, out);
  }
}

ContentStore::PageWords ContentStore::page(uint64_t lpn) const {
  uint32_t e = pages_.content(lpn);
  if (e & kMixedBit) return mixed_[e & ~kMixedBit];
  PageWords w;
  w.fill(e);
  return w;
}

void ContentStore::restore_page(uint64_t lpn, const PageWords& words) {
  make_uniform(lpn, words[0]);
  for (uint32_t i = 1; i < kSectorsPerPage; ++i) {
    if (words[i] != words[0]) {
      for (uint32_t j = 0; j < kSectorsPerPage; ++j) set_sector(lpn * kSectorsPerPage + j, words[j]);
      return;
    }
  }
}

bool ContentStore::page_is_uniform(uint64_t lpn, uint32_t* word) const {
  uint32_t e = pages_.content(lpn);
  if (e & kMixedBit) return false;
  if (word) *word = e;
  return true;
}

void ContentStore::clear() {
  pages_.clear_content();
  mixed_.clear();
  free_mixed_.clear();
  literal_.clear();
}

void signature_bytes(uint32_t word, uint64_t lba, uint8_t* out) {
  for (uint32_t i = 0; i < kSectorBytes; i += 16) {
    std::memcpy(out + i, "FSRG", 4);
    std::memcpy(out + i + 4, &word, 4);
    std::memcpy(out + i + 8, &lba, 8);
  }
}

}  // namespace fisrig::drive
