// The rig's memory as the NVMe controller reaches it over PCIe (the model target's NVMe
// engine, nvme_engine.h): the engine's queues and PRP lists, and a data buffer for each of
// its slots. A write's buffer of a generated pattern (engine_if.h's data sources) is said to
// hold the pattern, which the SSD stores as its word, as the SATA drive does; a read's
// buffer whose data the descriptor drops takes no bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "fisrig/nvme/queue_host.h"
#include "pattern_styles.h"

extern "C" {
#include "fisrig/engine_if.h"
}

namespace fisrig::model {

class NvmeRigMemory : public nvme::SparseMemory {
 public:
  static constexpr uint64_t kData = FISRIG_NVME_RIG_DATA;  // slot s's buffer at kData + s * kSlotBytes
  static constexpr uint64_t kSlotBytes = FISRIG_NVME_DATA_MAX;
  static constexpr uint64_t kLists = FISRIG_NVME_RIG_LISTS;  // slot s's PRP list at kLists + s * 4096
  // The queues where the gateware engine has them (engine_if.h's map).
  static_assert(nvme::QueueHost::kData == kData && nvme::QueueHost::kAsq == FISRIG_NVME_RIG_ASQ &&
                    nvme::QueueHost::kAcq == FISRIG_NVME_RIG_ACQ && nvme::QueueHost::kIoQueues == FISRIG_NVME_RIG_IO_QUEUES &&
                    nvme::QueueHost::kAdminEntries == FISRIG_NVME_RIG_ADMIN_ENTRIES,
                "the host's queues where engine_if.h's map puts them");
  static constexpr uint32_t kSlots = 256;

  NvmeRigMemory() : slots_(kSlots) {}

  // The engine's generated data: its payloads, and how they read back.
  PatternStyles styles;
  bool renders() const override { return true; }
  bool render(uint32_t word, uint64_t lba, uint8_t* out) const override { return styles.render(word, lba, out); }

  static uint64_t buffer(uint32_t slot) { return kData + slot * kSlotBytes; }
  static uint64_t list(uint32_t slot) { return kLists + uint64_t(slot) * 4096; }

  // What slot's buffer holds from now on: a pattern (a write of generated data), bytes
  // (written into it), or nothing kept (a read whose data is dropped).
  void hold_pattern(uint32_t slot, const drive::WritePayload& p) { slots_[slot] = Slot{true, false, p}; }
  void hold_bytes(uint32_t slot) { slots_[slot] = Slot{}; }
  void drop_writes(uint32_t slot) { slots_[slot] = Slot{false, true, {}}; }

  bool pattern(uint64_t addr, drive::WritePayload& out) const override {
    const Slot* s = slot_of(addr);
    if (!s || !s->pattern) return false;
    out = s->payload;
    return true;
  }
  void write(uint64_t addr, const void* in, size_t n) override {
    const Slot* s = slot_of(addr);
    if (s && s->drop) return;
    SparseMemory::write(addr, in, n);
  }

 private:
  struct Slot {
    bool pattern = false, drop = false;
    drive::WritePayload payload;
  };
  const Slot* slot_of(uint64_t addr) const {
    if (addr < kData || addr >= kData + kSlots * kSlotBytes) return nullptr;
    return &slots_[(addr - kData) / kSlotBytes];
  }
  std::vector<Slot> slots_;
};

}  // namespace fisrig::model
