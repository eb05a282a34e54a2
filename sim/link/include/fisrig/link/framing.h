// FIS framing on the wire, both directions: SOF, the FIS and its CRC scrambled, EOF; two
// ALIGNs every 256 dwords; repeated primitives sent as two copies, CONT, then scrambled
// junk. The receiver undoes all of it: it drops ALIGNs, HOLD/HOLDA and junk, descrambles,
// and checks the CRC.
#pragma once

#include <cstdint>
#include <vector>

#include "fisrig/link/primitives.h"
#include "fisrig/link/scrambler.h"

namespace fisrig::link {

// SOF, scrambled FIS dwords and CRC, EOF.
std::vector<LinkWord> frame(const std::vector<uint32_t>& fis);

// The transmitter's last stage: ALIGN ALIGN before every 256th dword it passes on.
class AlignInserter {
 public:
  void push(const LinkWord& w, std::vector<LinkWord>& out);

 private:
  uint32_t since_align_ = 256;  // a burst starts with a pair
};

// Repeated primitives: the first two go out, then CONT, then junk until it changes. The
// junk is the scrambler sequence from its start; a receiver ignores its content.
class ContEncoder {
 public:
  void push(uint32_t primitive, std::vector<LinkWord>& out);
  void data(const LinkWord& w, std::vector<LinkWord>& out);  // anything that is not repeated

 private:
  uint32_t last_ = 0;
  int repeats_ = 0;
  Scrambler junk_;
};

// The receiving side: feed every dword; frames come out whole.
class FrameReceiver {
 public:
  struct Frame {
    std::vector<uint32_t> fis;  // without the CRC
    bool crc_ok = false;
  };
  // Returns true when w ended a frame (then `frame()` holds it).
  bool push(const LinkWord& w);
  const Frame& frame() const { return frame_; }
  // The primitive the other side is sending now, CONT and junk taken into account.
  uint32_t current_primitive() const { return current_; }
  bool in_frame() const { return in_frame_; }

 private:
  bool in_frame_ = false;
  bool after_cont_ = false;
  uint32_t current_ = 0;
  Scrambler descrambler_;
  std::vector<uint32_t> words_;
  Frame frame_;
};

}  // namespace fisrig::link
