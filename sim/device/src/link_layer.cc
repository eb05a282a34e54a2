#include "fisrig/device/link_layer.h"

#include <algorithm>

#include "fisrig/link/crc.h"

namespace fisrig::device {

using link::LinkWord;
namespace prim = link::prim;

namespace {
constexpr uint32_t kStormBursts = 4;
constexpr size_t kStormFirstAt = 16;  // dwords into the Data FIS
constexpr size_t kStormGap = 32;      // dwords between bursts
}  // namespace

DeviceLink::DeviceLink(DeviceCounters& counters, LinkFaults& faults) : counters_(counters), faults_(faults) {
  rx_.set_limit(fis::kMaxFisDwords + 1);  // the largest FIS and its CRC
}

void DeviceLink::reset() {
  rx_.reset();
  align_.reset();
  cont_.reset();
  to_idle();
  loaded_ = enabled_ = holding_ = false;
  storm_bursts_ = 0;
  storm_left_ = 0;
}

LinkWord DeviceLink::emit_primitive(uint32_t p, bool& sent) {
  if (align_.align_due()) {
    cont_.restart();
    sent = false;
    return link::primitive(prim::kAlign);
  }
  sent = true;
  return cont_.next(p);
}

void DeviceLink::end_frame(Events& ev, bool ok) {
  ev.sent = true;
  ev.sent_ok = ok;
  if (ok) ++counters_.fis_sent[fis::type_of(tx_.dw[0])];
  loaded_ = holding_ = false;
  to_idle();
}

void DeviceLink::start_hold_storm() {
  storm_bursts_ = kStormBursts;
  storm_burst_cycles_ = std::max<uint64_t>(1, faults_.hold_storm_ns * 3 / 20 / kStormBursts / cycles_per_dword_);
  storm_next_at_ = kStormFirstAt;
}

LinkWord DeviceLink::clock(bool have, const LinkWord& in, Events& ev) {
  bool eof = have && rx_.push(in);
  if (have && in.k && in.data == prim::kCont) ++counters_.conts_received;
  uint32_t hp = rx_.current_primitive();  // what the host sends now, CONT undone

  // ---- what the host's primitives change ----
  switch (state_) {
    case State::kIdle:
      if (loaded_ && enabled_ && idle_syncs_ >= 2) state_ = State::kSendXrdy;  // wins over the host's X_RDY
      else if (hp == prim::kXRdy) state_ = State::kRecvRdy;
      break;
    case State::kSendXrdy:
      if (hp == prim::kRRdy) state_ = State::kSendSof;
      break;
    case State::kSendSof:
    case State::kSendData:
    case State::kSendEof:
      if (hp == prim::kSync) {  // the host aborted the frame
        ++counters_.frames_aborted;
        end_frame(ev, false);
        break;
      }
      if (state_ == State::kSendData) {
        // HOLD means pause until the host sends something else (or data, after CONT).
        bool hold = hp == prim::kHold && !rx_.data_flowing();
        if (hold && !holding_) ++counters_.holds_received;
        holding_ = hold;
      }
      break;
    case State::kWaitResult:
      if (hp == prim::kROk || hp == prim::kRErr || hp == prim::kSync) {
        if (hp == prim::kRErr) ++counters_.r_err_received;
        if (hp == prim::kSync) ++counters_.frames_aborted;
        end_frame(ev, hp == prim::kROk);
      }
      break;
    case State::kRecvRdy:
      if (rx_.in_frame()) {
        state_ = State::kRecv;
        storm_bursts_ = 0;
        storm_left_ = 0;
        storm_checked_ = false;
      } else if (hp == prim::kSync) {
        to_idle();  // the host gave up
      }
      break;
    case State::kRecv:
      if (eof) {
        const auto& f = rx_.frame();
        bool ok = f.crc_ok;
        if (!ok) ++counters_.rx_crc_errors;
        if (ok && faults_.chance(faults_.r_err_rate)) {
          ok = false;
          ++counters_.r_err_injected;
        }
        if (ok && !f.fis.empty()) ++counters_.fis_received[fis::type_of(f.fis[0])];
        ++(ok ? counters_.r_ok_sent : counters_.r_err_sent);
        rx_result_ok_ = ok;
        ev.received = true;
        ev.rx_ok = ok;
        storm_bursts_ = 0;
        storm_left_ = 0;
        state_ = State::kRecvResult;
      } else if (hp == prim::kSync) {
        ++counters_.frames_aborted;
        rx_.reset();
        to_idle();
      } else {
        // Hold storm: decided once per FIS, when its first dword shows a Data FIS.
        if (!storm_checked_ && rx_.dwords()) {
          storm_checked_ = true;
          if (fis::type_of(rx_.dword(0)) == fis::kData && faults_.chance(faults_.hold_storm_rate)) start_hold_storm();
        }
        if (storm_left_) {
          --storm_left_;
          if (!storm_left_) storm_next_at_ = rx_.dwords() + kStormGap;
        } else if (storm_bursts_ && rx_.dwords() >= storm_next_at_) {
          --storm_bursts_;
          storm_left_ = storm_burst_cycles_;
          ++counters_.holds_sent;
        }
      }
      break;
    case State::kRecvResult:
      if (hp == prim::kSync) to_idle();
      break;
  }

  // ---- the dword the device sends ----
  bool sent = false;
  switch (state_) {
    case State::kIdle: {
      LinkWord w = emit_primitive(prim::kSync, sent);
      idle_syncs_ += sent;
      return w;
    }
    case State::kSendXrdy:
      return emit_primitive(prim::kXRdy, sent);
    case State::kSendSof: {
      LinkWord w = emit_primitive(prim::kSof, sent);
      if (sent) {
        state_ = State::kSendData;
        tx_index_ = 0;
        tx_crc_ = link::kCrcInit;
        scrambler_.reset();
      }
      return w;
    }
    case State::kSendData: {
      if (holding_) {
        ++counters_.holda_cycles_sent;
        return emit_primitive(prim::kHolda, sent);
      }
      if (align_.align_due()) {
        cont_.restart();
        return link::primitive(prim::kAlign);
      }
      if (cont_.in_junk()) return cont_.end_junk();  // data must not follow junk directly
      cont_.data();
      uint32_t d;
      if (tx_index_ < tx_.n) {
        d = tx_.dw[tx_index_];
        tx_crc_ = link::crc_step(tx_crc_, d);
      } else {
        d = tx_.corrupt_crc ? ~tx_crc_ : tx_crc_;
        state_ = State::kSendEof;
      }
      ++tx_index_;
      return LinkWord{scrambler_.scramble(d), false};
    }
    case State::kSendEof: {
      LinkWord w = emit_primitive(prim::kEof, sent);
      if (sent) state_ = State::kWaitResult;
      return w;
    }
    case State::kWaitResult:
      return emit_primitive(prim::kWtrm, sent);
    case State::kRecvRdy:
      return emit_primitive(prim::kRRdy, sent);
    case State::kRecv:
      if (hp == prim::kHold && !rx_.data_flowing()) return emit_primitive(prim::kHolda, sent);
      if (storm_left_) {
        ++counters_.hold_cycles_sent;
        return emit_primitive(prim::kHold, sent);
      }
      return emit_primitive(prim::kRIp, sent);
    case State::kRecvResult:
      return emit_primitive(rx_result_ok_ ? prim::kROk : prim::kRErr, sent);
  }
  return emit_primitive(prim::kSync, sent);
}

}  // namespace fisrig::device
