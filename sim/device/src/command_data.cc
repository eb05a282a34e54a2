// Data phases: one at a time, device to host (DMA Setup for NCQ, PIO Setup per block for
// PIO, then Data FISes of up to 8 KiB) or host to device (DMA Setup for NCQ, PIO Setup for
// PIO, DMA Activate before each of the host's Data FISes).
#include <algorithm>
#include <cstring>

#include "fisrig/device/command_layer.h"

namespace fisrig::device {

namespace ata = drive::ata;
using drive::Completion;
using drive::SimTime;

namespace {
constexpr uint8_t kStatusDrq = ata::kStatusDrdy | ata::kStatusDrq;  // PIO Setup: a block is ready
constexpr uint8_t kStatusBusy = ata::kStatusBsy | ata::kStatusDrdy;  // E_Status: more to come
}  // namespace

// Bytes a data-in command sends: the sectors the Drive read (up to a UNC sector; up to and
// including the Data FIS that fails its CRC), or the IDENTIFY/log bytes.
uint32_t CommandLayer::data_in_total(const Slot& s, const Completion& c) const {
  if (!c.t_data_start) return 0;
  if (!s.sector_read) return uint32_t(s.pio.size());
  uint64_t lba = s.lba & 0xFFFFFFFFFFFFull;
  uint64_t end = lba + s.sectors;
  if (c.error & ata::kErrorIcrc) end = std::min<uint64_t>(end, c.lba + fis::kMaxDataBytes / ata::kSectorBytes);
  else if (c.error & ata::kErrorUnc) end = c.lba;
  return uint32_t((end - lba) * ata::kSectorBytes);
}

void CommandLayer::fill_data(const Slot& s, uint32_t offset, uint32_t bytes, uint32_t* out) const {
  if (!s.sector_read) {
    std::memcpy(out, s.pio.data() + offset, bytes);
    return;
  }
  uint32_t first = offset / ata::kSectorBytes;
  uint64_t lba = s.lba & 0xFFFFFFFFFFFFull;
  for (uint32_t k = 0; k < bytes / ata::kSectorBytes; ++k) {
    uint32_t i = first + k;
    const uint8_t* literal = s.has_literal ? s.bytes.data() + size_t(i) * ata::kSectorBytes : nullptr;
    codec_.expand(s.words[i], lba + i, literal, out + k * kSectorDwords);
  }
}

SimTime CommandLayer::data_due(const Slot& s, const Completion& c) const {
  bool queued = &s != &slots_[kNonQueued];
  uint32_t setup = queued ? drive::fis_dwords::kDmaSetup : s.proto == Protocol::kPioIn ? drive::fis_dwords::kPioSetup : 0;
  SimTime len = setup ? drive_.link_timing().fis_ns(setup) : 0;
  return c.t_data_start > len ? c.t_data_start - len : 0;
}

int CommandLayer::due_phase(SimTime now) {
  int best = -1;
  SimTime best_t = drive::kNever;
  for (uint8_t i = 0; i < kSlots; ++i) {
    Slot& s = slots_[i];
    SimTime t;
    if (s.phase == Phase::kAwaitData) {
      if (halted_) continue;
      t = s.ready_ns;
    } else if (s.phase == Phase::kExecuting && is_data_in(s.proto) && !s.data_started) {
      const Completion* c = completion(s);
      if (!c) continue;  // ignored by a hung drive
      if (c->aborted_by_ncq_error || !c->t_data_start) {
        s.data_started = s.data_done = true;  // no data will go, whatever happens next
        continue;
      }
      t = data_due(s, *c);
    } else {
      continue;
    }
    if (t <= now && t < best_t) best = i, best_t = t;
  }
  return best;
}

uint32_t CommandLayer::phase_bytes(uint8_t idx) const {
  const Slot& s = slots_[idx];
  if (s.phase == Phase::kAwaitData) return s.total_bytes;
  const Completion* c = completion(s);
  return c ? data_in_total(s, *c) : 0;
}

bool CommandLayer::start_phase(TxFrame& out, uint8_t best) {
  Slot& s = slots_[best];
  active_ = best;
  s.data_started = true;
  s.done_bytes = 0;
  bool queued = best != kNonQueued;
  if (s.phase == Phase::kAwaitData) {
    s.phase = Phase::kDataOut;
    s.step = queued ? Step::kSetup : s.proto == Protocol::kPioOut ? Step::kSetup : Step::kActivate;
  } else {
    const Completion& c = *completion(s);
    s.total_bytes = data_in_total(s, c);
    s.bad_fis_at = c.error & ata::kErrorIcrc ? uint32_t((c.lba - (s.lba & 0xFFFFFFFFFFFFull)) * ata::kSectorBytes) : ~0u;
    s.step = queued || s.proto == Protocol::kPioIn ? Step::kSetup : Step::kData;
  }
  return continue_phase(out);
}

void CommandLayer::end_phase() {
  slots_[active_].data_done = true;
  active_ = -1;
}

bool CommandLayer::continue_phase(TxFrame& out) {
  Slot& s = slots_[active_];
  bool queued = active_ != kNonQueued;
  uint32_t left = s.total_bytes - s.done_bytes;
  if (s.phase == Phase::kDataOut) {
    switch (s.step) {
      case Step::kSetup:
        if (queued) {
          out.n = fis::dma_setup(out.dw, false, uint8_t(active_), s.total_bytes);
          s.step = Step::kActivate;
        } else {
          out.n = fis::pio_setup(out.dw, false, kStatusDrq, kStatusBusy, uint16_t(std::min(left, 512u)));
          s.step = Step::kWaitHost;
        }
        return true;
      case Step::kActivate:
        out.n = fis::dma_activate(out.dw);
        s.step = Step::kWaitHost;
        return true;
      default:
        return false;  // the host's Data FIS is next
    }
  }

  // Device to host. A queued read the Drive has since aborted (NCQ error) sends no more.
  if (queued) {
    const Completion* c = completion(s);
    if (!c || c->aborted_by_ncq_error) {
      end_phase();
      wake_ = 0;
      return false;
    }
  }
  bool pio = s.proto == Protocol::kPioIn;
  if (s.step == Step::kSetup) {
    if (queued) {
      out.n = fis::dma_setup(out.dw, true, uint8_t(active_), s.total_bytes);
    } else {
      // Each DRQ block: its PIO Setup; the last one's E_Status is the command's status.
      const Completion& c = *completion(s);
      bool last = left <= ata::kSectorBytes;
      out.n = fis::pio_setup(out.dw, true, kStatusDrq, last ? c.status : kStatusBusy,
                             uint16_t(std::min(left, 512u)));
    }
    s.step = Step::kData;
    return true;
  }
  uint32_t bytes = std::min(left, pio ? ata::kSectorBytes : fis::kMaxDataBytes);
  out.dw[0] = fis::kData;
  fill_data(s, s.done_bytes, bytes, out.dw + 1);
  out.n = 1 + bytes / 4;
  if (s.done_bytes == s.bad_fis_at) {
    out.corrupt_crc = true;
    ++counters_.tx_crc_corrupted;
  }
  last_was_data_ = true;
  s.done_bytes += bytes;
  if (pio) s.step = Step::kSetup;
  if (s.done_bytes >= s.total_bytes) end_phase();
  return true;
}

void CommandLayer::host_data(const uint32_t* payload, size_t dwords, bool ok, uint64_t cycle) {
  if (active_ < 0 || slots_[active_].phase != Phase::kDataOut || slots_[active_].step != Step::kWaitHost) {
    if (ok) ++counters_.protocol_errors;  // data nobody asked for
    return;
  }
  uint8_t idx = uint8_t(active_);
  Slot& s = slots_[idx];
  if (!ok) {
    s.transfer_failed = true;
  } else {
    uint32_t bytes = uint32_t(dwords * 4);
    uint32_t left = s.total_bytes - s.done_bytes;
    if (bytes > left) {
      ++counters_.protocol_errors;  // more than the command carries: the rest is dropped
      bytes = left;
    }
    s.bytes.resize(s.total_bytes);
    std::memcpy(s.bytes.data() + s.done_bytes, payload, bytes);
    s.done_bytes += bytes;
  }
  if (s.transfer_failed || s.done_bytes >= s.total_bytes) {
    active_ = -1;
    finish_data_out(idx, cycle);
    return;
  }
  s.step = s.proto == Protocol::kPioOut ? Step::kSetup : Step::kActivate;
}

}  // namespace fisrig::device
