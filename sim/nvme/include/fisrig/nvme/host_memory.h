// The host's memory as the NVMe controller reaches it over PCIe: the queues, the PRP lists
// and the data buffers are there, and the controller reads and writes them by address. A
// rig's engine (and a test) gives it its own.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "fisrig/ssd/content.h"

namespace fisrig::nvme {

class HostMemory {
 public:
  virtual ~HostMemory() = default;
  virtual void read(uint64_t addr, void* out, size_t n) = 0;
  virtual void write(uint64_t addr, const void* in, size_t n) = 0;
  // A host that fills a write's buffer with a generated pattern (the rig's pattern source)
  // says so for the buffer at `addr`: the SSD stores the pattern's word, not its bytes, as
  // the SATA drive does (a whole-drive fill must fit in memory). False: the bytes are the data.
  virtual bool pattern(uint64_t addr, drive::WritePayload& out) const {
    (void)addr, (void)out;
    return false;
  }
  // And what its patterns read back as: a sector holding the SSD's content word `word` at
  // `lba` rendered into `out` (512 bytes), false where the word is not one of its patterns
  // (the SSD's own bytes go then). Asked only of a host that renders().
  virtual bool renders() const { return false; }
  virtual bool render(uint32_t word, uint64_t lba, uint8_t* out) const {
    (void)word, (void)lba, (void)out;
    return false;
  }
};

// Memory of any address, in 4 KiB pages made when first written (zeros until then).
class SparseMemory : public HostMemory {
 public:
  static constexpr uint64_t kPage = 4096;
  void read(uint64_t addr, void* out, size_t n) override {
    auto* o = static_cast<uint8_t*>(out);
    while (n) {
      size_t off = addr % kPage, k = std::min<size_t>(n, kPage - off);
      auto it = pages_.find(addr / kPage);
      if (it == pages_.end()) std::memset(o, 0, k);
      else std::memcpy(o, it->second->data() + off, k);
      addr += k, o += k, n -= k;
    }
  }
  void write(uint64_t addr, const void* in, size_t n) override {
    auto* i = static_cast<const uint8_t*>(in);
    while (n) {
      size_t off = addr % kPage, k = std::min<size_t>(n, kPage - off);
      auto& p = pages_[addr / kPage];
      if (!p) p = std::make_unique<std::array<uint8_t, kPage>>(), p->fill(0);
      std::memcpy(p->data() + off, i, k);
      addr += k, i += k, n -= k;
    }
  }
  // Writes from [begin, end) carry `p` (HostMemory::pattern): a bench's or a test's pattern
  // source, whose bytes it need not write.
  void describe_pattern(uint64_t begin, uint64_t end, drive::WritePayload p) {
    pattern_begin_ = begin, pattern_end_ = end, pattern_ = p;
  }
  bool pattern(uint64_t addr, drive::WritePayload& out) const override {
    if (addr < pattern_begin_ || addr >= pattern_end_) return false;
    out = pattern_;
    return true;
  }

 private:
  uint64_t pattern_begin_ = 0, pattern_end_ = 0;
  drive::WritePayload pattern_;
  std::unordered_map<uint64_t, std::unique_ptr<std::array<uint8_t, kPage>>> pages_;
};

}  // namespace fisrig::nvme
