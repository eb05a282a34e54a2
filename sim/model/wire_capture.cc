// The model target's capture windows (wire_capture.h).
#include "wire_capture.h"

#include <algorithm>

extern "C" {
#include "fisrig/ata.h"
}

namespace fisrig::model {

namespace {
constexpr uint64_t kNoTick = ~uint64_t(0);
}  // namespace

bool WireCapture::take(const fisrig_cmd_desc& d, uint64_t tick) {
  if (d.command == FISRIG_CAPTURE_STOP) {
    // The VM stops a capture with nothing in flight: what the window holds is all there is.
    if (on_ && fired_) write_window(tick < fire_tick_ + after_);
    on_ = false;
    kept_.clear();
    return true;
  }
  if (d.command != FISRIG_CAPTURE_ARM || d.features > FISRIG_TRIGGER_ERROR) return false;
  // A new arming ends the capture before it: a window that has fired is kept, cut short if
  // it had not passed, as the gateware holds it for the host.
  if (on_ && fired_) write_window(tick < fire_tick_ + after_);
  on_ = true;
  trigger_ = uint8_t(d.features);
  value_ = d.count;
  before_ = d.data_word;
  after_ = d.timeout_ticks;
  windows_left_ = std::max<uint32_t>(1, d.lba[0] | uint32_t(d.lba[1]) << 8);
  from_ = tick;
  fired_ = false;
  later_ = kNoTick;
  kept_.clear();
  if (trigger_ == FISRIG_TRIGGER_ARMED) fired_at(tick);
  return true;
}

bool WireCapture::matches(const fisrig_capture_entry& e) const {
  if (e.kind != FISRIG_CAPTURE_FIS) return false;
  switch (trigger_) {
    case FISRIG_TRIGGER_FIS:
      return e.type == value_;
    case FISRIG_TRIGGER_COMMAND:
      return e.type == FISRIG_FIS_REG_H2D && (e.header[0] >> 16 & 0xFF) == value_;
    case FISRIG_TRIGGER_TAG:
      return e.type == FISRIG_FIS_REG_H2D && e.tag == value_ &&
             ((e.header[0] >> 16 & 0xFF) == FISRIG_ATA_READ_FPDMA_QUEUED ||
              (e.header[0] >> 16 & 0xFF) == FISRIG_ATA_WRITE_FPDMA_QUEUED ||
              (e.header[0] >> 16 & 0xFF) == FISRIG_ATA_SEND_FPDMA_QUEUED);
    case FISRIG_TRIGGER_R_ERR:
      return (e.flags & FISRIG_CAPTURE_BAD) != 0;
    default:
      return false;
  }
}

void WireCapture::add(fisrig_capture_entry e) {
  if (!on_ || e.tick < from_) return;
  kept_.push_back(e);
  if (matches(e)) fired_at(e.tick);
}

void WireCapture::fire(uint8_t trigger, uint32_t value, uint64_t tick) {
  if (!on_ || trigger != trigger_ || tick < from_) return;
  if (trigger == FISRIG_TRIGGER_RESULT && value != value_) return;
  fired_at(tick);
}

// The earliest trigger after the last window wins, whatever order the engine found them in;
// one past the open window's end waits for the next window.
void WireCapture::fired_at(uint64_t tick) {
  if (fired_ && tick > fire_tick_ + after_) {
    later_ = std::min(later_, tick);
    return;
  }
  if (!fired_ || tick < fire_tick_) fire_tick_ = tick;
  fired_ = true;
}

void WireCapture::settle(uint64_t settled) {
  if (!on_) return;
  if (fired_ && settled > fire_tick_ + after_) return write_window(false);
  if (kept_.size() < prune_at_) return;
  // A trigger still to come fires at or after `settled`; an open window starts before it.
  const uint64_t start = fired_ ? fire_tick_ : settled;
  const uint64_t keep_from = start > before_ ? start - before_ : 0;
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(),
                             [keep_from](const fisrig_capture_entry& e) { return e.tick < keep_from; }),
              kept_.end());
  // Pruned again once it has doubled: a long window keeps all it holds, and each entry is
  // looked at a bounded number of times over the run, not at every record.
  prune_at_ = std::max(kPruneFrom, 2 * kept_.size());
}

void WireCapture::write_window(bool cut_short) {
  const uint64_t start = std::max(from_, fire_tick_ > before_ ? fire_tick_ - before_ : 0);
  const uint64_t end = fire_tick_ + after_;
  std::vector<fisrig_capture_entry> w;
  for (const auto& e : kept_)
    if (e.tick >= start && e.tick <= end) w.push_back(e);
  std::stable_sort(w.begin(), w.end(), [](const fisrig_capture_entry& a, const fisrig_capture_entry& b) {
    return a.tick != b.tick ? a.tick < b.tick : a.dir < b.dir;
  });
  // Queued commands whose statuses went in one Set Device Bits: one FIS on the wire, their
  // bits together.
  std::vector<fisrig_capture_entry> merged;
  for (const auto& e : w) {
    if (!merged.empty() && e.kind == FISRIG_CAPTURE_FIS && e.type == FISRIG_FIS_SET_DEVICE_BITS) {
      fisrig_capture_entry& p = merged.back();
      if (p.kind == e.kind && p.type == e.type && p.tick == e.tick && p.dir == e.dir) {
        p.header[1] |= e.header[1];
        p.tag = FISRIG_CAPTURE_NO_TAG;  // several commands'
        continue;
      }
    }
    merged.push_back(e);
  }
  fisrig_capture_entry t{};
  t.tick = fire_tick_;
  t.kind = FISRIG_CAPTURE_TRIGGER;
  t.type = trigger_;
  t.flags = uint8_t(FISRIG_CAPTURE_MODELLED | (cut_short ? FISRIG_CAPTURE_CUT_SHORT : 0));
  t.tag = FISRIG_CAPTURE_NO_TAG;
  t.header[0] = value_;
  t.header[1] = uint32_t(start), t.header[2] = uint32_t(start >> 32);
  t.header[3] = uint32_t(end), t.header[4] = uint32_t(end >> 32);
  merged.insert(merged.begin(), t);
  for (auto& e : merged) e.window = window_;
  if (out_ && std::fwrite(merged.data(), sizeof merged[0], merged.size(), out_) != merged.size())
    write_failed_ = true;
  written_ += merged.size();
  ++window_;
  fired_ = false;
  if (--windows_left_ == 0) {
    on_ = false;
    kept_.clear();
    return;
  }
  // The next window is looked for after this one: what it may hold is past its end.
  from_ = end + 1;
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(),
                             [this](const fisrig_capture_entry& e) { return e.tick < from_; }),
              kept_.end());
  const uint64_t later = later_;
  later_ = kNoTick;
  if (later != kNoTick) fired_at(later);
  for (const auto& e : kept_)
    if (matches(e)) fired_at(e.tick);
}

void WireCapture::finish(uint64_t tick) {
  if (on_ && fired_) write_window(tick < fire_tick_ + after_);
  on_ = false;
  kept_.clear();
}

}  // namespace fisrig::model
