// FIS framing on the wire, both directions: SOF, the FIS and its CRC scrambled, EOF; two
// ALIGNs every 256 dwords; repeated primitives sent as two copies, CONT, then scrambled
// junk. The receiver undoes all of it: it drops ALIGNs, HOLD/HOLDA and junk, descrambles,
// and checks the CRC.
//
// Each piece has a whole-burst form (push into a vector: tests, tools) and a one-dword-
// per-cycle form (the RTL rig's simulated drive, which runs once per 150 MHz cycle and
// must not allocate).
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
  // Per cycle: true when this cycle's dword must be an ALIGN (the caller's dword waits
  // for the next cycle); false when the caller's dword goes out now.
  bool align_due() {
    if (pending_) {
      --pending_;
      return true;
    }
    if (since_align_ >= 256) {
      since_align_ = 0;
      pending_ = 1;
      return true;
    }
    ++since_align_;
    return false;
  }
  void reset() { since_align_ = 256, pending_ = 0; }

 private:
  uint32_t since_align_ = 256;  // a burst starts with a pair
  uint32_t pending_ = 0;        // the second ALIGN of a pair
};

// Repeated primitives: the first two go out, then CONT, then junk until it changes. The
// junk is the scrambler sequence from its start; a receiver ignores its content.
class ContEncoder {
 public:
  void push(uint32_t primitive, std::vector<LinkWord>& out);
  // Anything that is not repeated. After junk, the repeated primitive goes once more
  // first: a receiver ignores data after CONT until a primitive other than ALIGN.
  void data(const LinkWord& w, std::vector<LinkWord>& out);

  // Per cycle: the dword that carries primitive p now (p, p, CONT, junk, junk, ...).
  LinkWord next(uint32_t p);
  // True while the receiver takes data for junk: data may go out only after end_junk().
  bool in_junk() const { return in_junk_; }
  // The cycle before data, while in junk: the repeated primitive once more.
  LinkWord end_junk() { return next_fresh(last_); }
  // A data dword goes out this cycle (not in junk).
  void data() { last_ = 0, repeats_ = 0; }
  // Sends the current primitive afresh next time (twice, then CONT again). Called after
  // ALIGNs, so that a receiver that came up in the middle of junk (a link layer connected
  // after OOB) learns the primitive within 256 dwords instead of never.
  void restart() { repeats_ = 0; }
  void reset() { last_ = 0, repeats_ = 0, in_junk_ = false; }

 private:
  LinkWord next_fresh(uint32_t p);
  uint32_t last_ = 0;
  int repeats_ = 0;
  bool in_junk_ = false;  // CONT has gone out and no primitive since
  Scrambler junk_;
};

// The receiving side: feed every dword; frames come out whole.
class FrameReceiver {
 public:
  struct Frame {
    std::vector<uint32_t> fis;  // without the CRC
    bool crc_ok = false;
    bool oversize = false;  // longer than the limit: cut there, and never crc_ok
  };
  // Returns true when w ended a frame (then `frame()` holds it).
  bool push(const LinkWord& w);
  const Frame& frame() const { return frame_; }
  // The primitive the other side is sending now, CONT and junk taken into account.
  uint32_t current_primitive() const { return current_; }
  bool in_frame() const { return in_frame_; }
  // True when the last dword (ALIGNs aside) was frame data rather than a primitive or
  // junk: a transmitter that paused with HOLD has resumed.
  bool data_flowing() const { return data_flowing_; }
  // The dwords of the frame so far, descrambled (the last one may turn out to be the CRC).
  size_t dwords() const { return words_.size(); }
  uint32_t dword(size_t i) const { return words_[i]; }
  // Frames longer than this many dwords (CRC included) are cut and fail.
  void set_limit(size_t dwords) {
    limit_ = dwords;
    words_.reserve(dwords);
  }
  // Forgets any frame in progress and the primitive state (link reset, SYNC abort).
  void reset();

 private:
  bool in_frame_ = false;
  bool data_flowing_ = false;
  bool oversize_ = false;
  size_t limit_ = ~size_t{0};
  bool after_cont_ = false;
  uint32_t current_ = 0;
  Scrambler descrambler_;
  std::vector<uint32_t> words_;
  Frame frame_;
};

}  // namespace fisrig::link
