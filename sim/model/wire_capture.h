// The analyzer's capture on the model target (capture.h): the engine model hands it the FISes
// and events it knows of, a command's all at once when its record is written (so not in
// wire order), and the capture keeps a window around its trigger as the gateware's does:
// the last `before` ticks from the arming on, and `after` ticks past the trigger. A window
// goes out, in tick order, once every entry in it is known: when no command still under way
// was taken before the window's end (settle).
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

extern "C" {
#include "fisrig/capture.h"
#include "fisrig/engine_if.h"
}

namespace fisrig::model {

class WireCapture {
 public:
  // Where the windows go (capture.bin, after its header), or null: no capture asked.
  void write_to(std::FILE* f) { out_ = f; }
  // Armed or a window open: the engine looks for entries.
  bool on() const { return on_; }
  // A CAPTURE descriptor (capture.h's enum fisrig_capture_op) at `tick`; false if refused.
  bool take(const fisrig_cmd_desc& d, uint64_t tick);
  // An entry the engine learned of, in any order: kept if in what a window may hold, and
  // looked at by the FIS, COMMAND and TAG triggers.
  void add(fisrig_capture_entry e);
  // A trigger the engine decides (a record's result, a timeout, the power cut) at `tick`.
  void fire(uint8_t trigger, uint32_t value, uint64_t tick);
  // Every entry before `settled` has been added: a window that ends before it goes out.
  void settle(uint64_t settled);
  // The run's end at `tick`: a window still open goes out, marked cut short.
  void finish(uint64_t tick);
  uint64_t entries_written() const { return written_; }
  bool write_failed() const { return write_failed_; }

 private:
  bool matches(const fisrig_capture_entry& e) const;
  void fired_at(uint64_t tick);
  void write_window(bool cut_short);

  std::FILE* out_ = nullptr;
  bool on_ = false;
  uint8_t trigger_ = 0;
  uint32_t value_ = 0;
  uint64_t before_ = 0, after_ = 0;
  uint32_t windows_left_ = 0;
  uint16_t window_ = 0;            // the next window's number
  uint64_t from_ = 0;              // entries before it are not kept (the arming, a window's end)
  bool fired_ = false;
  uint64_t fire_tick_ = 0;
  uint64_t later_ = ~uint64_t(0);  // a trigger past the open window's end, for the next
  std::vector<fisrig_capture_entry> kept_;
  // Entries kept beyond this many are pruned to what a window may still hold.
  static constexpr size_t kPruneFrom = 4096;
  size_t prune_at_ = kPruneFrom;  // kept_'s size at which settle prunes it next
  uint64_t written_ = 0;
  bool write_failed_ = false;
};

}  // namespace fisrig::model
