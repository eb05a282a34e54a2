#include "fisrig/device/oob.h"

#include "fisrig/link/primitives.h"

namespace fisrig::device {

namespace {
constexpr uint32_t kUndecodable = 0x4A4A4A4A;  // D10.2, as a mismatched receiver might deliver
int gen_of_period(uint64_t period) {
  for (int gen = 3; gen > 1; --gen)
    if (period <= cycles_per_dword(gen)) return gen;
  return 1;
}
}  // namespace

DeviceOob::Event DeviceOob::clock(const fisrig_pins_in& in, uint64_t cycle, uint64_t ready_cycle) {
  Event ev = Event::kNone;
  if (!in.dword_gap) {
    host_gen_ = gen_of_period(cycle - last_dword_);
    last_dword_ = cycle;
  }
  if (state_ == State::kOff) return ev;
  if (in.tx_cominit) {
    burst_end_ = cycle + FISRIG_COMRESET_CYCLES;
    // A booting drive cannot answer yet; it sends COMINIT when ready (below).
    if (state_ != State::kBooting) {
      enter(State::kComresetIn, burst_end_);
      ev = Event::kComreset;
    }
  }
  switch (state_) {
    case State::kBooting:
      if (cycle >= ready_cycle && cycle >= burst_end_) {
        enter(State::kSendCominit, cycle + FISRIG_COMRESET_CYCLES);
        ++cominits_;
      }
      break;
    case State::kComresetIn:
      if (cycle >= until_) enter(State::kCominitDelay, cycle + kCominitDelay);
      break;
    case State::kCominitDelay:
      if (cycle >= until_) {
        enter(State::kSendCominit, cycle + FISRIG_COMRESET_CYCLES);
        ++cominits_;
      }
      break;
    case State::kSendCominit:
      if (cycle >= until_) enter(State::kAwaitComwake, 0);
      break;
    case State::kAwaitComwake:
      if (in.tx_comwake) enter(State::kComwakeIn, cycle + FISRIG_COMWAKE_CYCLES);
      break;
    case State::kComwakeIn:
      if (cycle >= until_) enter(State::kComwakeDelay, cycle + kComwakeDelay);
      break;
    case State::kComwakeDelay:
      if (cycle >= until_) enter(State::kSendComwake, cycle + FISRIG_COMWAKE_CYCLES);
      break;
    case State::kSendComwake:
      if (cycle >= until_) {
        gen_ = max_gen_;
        enter(State::kSendAlign, cycle + FISRIG_ALIGN_TIMEOUT_CYCLES);
      }
      break;
    case State::kSendAlign:
      if (gen_ == host_gen_ && !in.dword_gap && !in.tx_idle && (in.tx_charisk & 1) && in.tx_data == link::prim::kAlign)
        enter(State::kLinked, 0);
      else if (cycle >= until_ && gen_ > 1) {
        --gen_;
        until_ = cycle + FISRIG_ALIGN_TIMEOUT_CYCLES;
      }
      break;
    case State::kOff:
    case State::kLinked:
      break;
  }
  return ev;
}

void DeviceOob::drive_pins(fisrig_pins_out& out) const {
  out.rx_cominit = state_ == State::kSendCominit;
  out.rx_comwake = state_ == State::kSendComwake;
  bool sending = state_ == State::kSendAlign;
  // At a speed the host's receiver is not at, it sees symbols it cannot decode: data, never an ALIGN.
  bool align = sending && gen_ == host_gen_;
  out.rx_idle = !sending;
  out.rx_data = align ? link::prim::kAlign : sending ? kUndecodable : 0;
  out.rx_charisk = align ? 1 : 0;
}

}  // namespace fisrig::device
