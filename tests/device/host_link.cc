#include "host_link.h"

#include "fisrig/link/crc.h"

namespace fisrig::test {

using link::LinkWord;
using link::primitive;
namespace prim = link::prim;

namespace {
constexpr uint32_t kD10_2 = 0x4A4A4A4A;
constexpr uint64_t kRxIdleCycles = 256 * 16;  // LiteSATAPHYAlignTimer
}  // namespace

void HostLink::reset_link() {
  tx_ = Tx::kIdle;
  rx_ = Rx::kIdle;
  in_cont_ = false;
  last_prim_ = 0;
  cont_last_ = 0;
  cont_reps_ = 0;
  cont_junk_ = false;
  tx_pause_left_ = 0;
  rx_hold_left_ = 0;
  // A frame cut by the reset is not answered; the engine above decides what to resend.
  if (!tx_queue_.empty() && tx_index_) tx_queue_.pop_front();
  tx_index_ = 0;
}

void HostLink::clock(const fisrig_pins_out& dev, fisrig_pins_in& host) {
  if (capture && !dev.rx_idle) {
    captured.push_back(LinkWord{dev.rx_data, (dev.rx_charisk & 1) != 0});
    captured_cycle.push_back(cycle_);
  }
  phy_clock(dev, host);
  ++cycle_;
}

void HostLink::phy_clock(const fisrig_pins_out& dev, fisrig_pins_in& host) {
  LinkWord w{dev.rx_data, (dev.rx_charisk & 1) != 0};
  bool have = !dev.rx_idle;
  if (have && w.k && w.data == prim::kAlign) {
    if (connected() && cycle_ - last_align_ > counters.max_gap_between_aligns)
      counters.max_gap_between_aligns = cycle_ - last_align_;
    last_align_ = cycle_;
  }
  host.tx_idle = 1;
  host.tx_cominit = host.tx_comwake = 0;
  host.tx_data = 0;
  host.tx_charisk = 0;
  auto timeout = [&](uint64_t limit) {
    if (cycle_ - timer_start_ < limit) return false;
    ++counters.retries;
    phy_ = Phy::kReset;
    return true;
  };
  switch (phy_) {
    case Phy::kReset:
      if (was_connected_ && on_reset) on_reset();
      was_connected_ = false;
      reset_link();
      host.tx_cominit = 1;
      ++counters.comresets;
      phy_until_ = cycle_ + FISRIG_COMRESET_CYCLES;
      phy_ = Phy::kComreset;
      break;
    case Phy::kComreset:
      if (cycle_ >= phy_until_ && !dev.rx_cominit) {
        phy_ = Phy::kAwaitCominit;
        timer_start_ = cycle_;
      }
      break;
    case Phy::kAwaitCominit:
      if (dev.rx_cominit) phy_ = Phy::kAwaitNoCominit;
      else timeout(opt_.retry_cycles);
      break;
    case Phy::kAwaitNoCominit:
      if (!dev.rx_cominit) {
        host.tx_comwake = 1;
        phy_until_ = cycle_ + FISRIG_COMWAKE_CYCLES;
        phy_ = Phy::kComwake;
      } else {
        timeout(opt_.retry_cycles);
      }
      break;
    case Phy::kComwake:
      if (cycle_ >= phy_until_) {
        phy_ = Phy::kAwaitComwake;
        timer_start_ = cycle_;
      }
      break;
    case Phy::kAwaitComwake:
      if (dev.rx_comwake) phy_ = Phy::kAwaitNoComwake;
      else timeout(opt_.retry_cycles);
      break;
    case Phy::kAwaitNoComwake:
      if (!dev.rx_comwake) {
        phy_ = Phy::kAwaitAlign;
        timer_start_ = cycle_;
      }
      break;
    case Phy::kAwaitAlign:
      host.tx_idle = 0;
      host.tx_data = kD10_2;
      if (have && w.k && w.data == prim::kAlign) {
        phy_ = Phy::kSendAlign;
        align_count_ = 3;
      } else {
        timeout(opt_.align_timeout_cycles);
      }
      break;
    case Phy::kSendAlign:
      host.tx_idle = 0;
      host.tx_data = prim::kAlign;
      host.tx_charisk = 1;
      if (have && w.k) {
        if ((w.data & 0xFF) == 0x7C) --align_count_;
        else align_count_ = 3;
      }
      if (!align_count_) {
        phy_ = Phy::kReady;
        ready_at_ = cycle_;
      } else {
        timeout(opt_.align_timeout_cycles);
      }
      break;
    case Phy::kReady: {
      host.tx_idle = 0;
      if (cycle_ - last_align_ >= kRxIdleCycles) {  // the device went quiet
        ++counters.rx_idle_resets;
        phy_ = Phy::kReset;
        break;
      }
      if (!connected()) {
        host.tx_data = prim::kSync;  // the PHY control's own SYNC; the link layer is not on yet
        host.tx_charisk = 1;
        break;
      }
      if (!was_connected_) {
        was_connected_ = true;
        ++counters.connects;
      }
      LinkWord o = link_clock(have, w);
      host.tx_data = o.data;
      host.tx_charisk = o.k ? 1 : 0;
      break;
    }
  }
}

LinkWord HostLink::encode(const LinkWord& w, bool& consumed) {
  if ((align_tx_++ & 0xFF) < 2) {  // LiteSATAALIGNInserter: two of every 256 dwords
    consumed = false;
    return primitive(prim::kAlign);
  }
  consumed = true;
  if (!opt_.cont) return w;
  if (w.k) {
    if (w.data == cont_last_ && cont_reps_ >= 2) {
      if (++cont_reps_ == 3) {
        cont_junk_ = true;
        return primitive(prim::kCont);
      }
      junk_ ^= junk_ << 13, junk_ ^= junk_ >> 17, junk_ ^= junk_ << 5;
      return LinkWord{junk_, false};
    }
    cont_reps_ = w.data == cont_last_ ? cont_reps_ + 1 : 1;
    cont_last_ = w.data;
    cont_junk_ = false;
    return w;
  }
  if (cont_junk_) {  // the repeated primitive again, or the data would read as junk
    consumed = false;
    cont_junk_ = false;
    cont_reps_ = 1;
    return primitive(cont_last_);
  }
  cont_last_ = 0;
  cont_reps_ = 0;
  return w;
}

LinkWord HostLink::link_clock(bool have, const LinkWord& w) {
  // ALIGN removal, then CONT removal: junk after CONT reads as the primitive before it.
  bool prim_valid = false, data_valid = false;
  uint32_t p = 0;
  if (have && !(w.k && w.data == prim::kAlign)) {
    if (w.k && w.data == prim::kCont) {
      in_cont_ = true;
      prim_valid = true;
      p = last_prim_;
      ++counters.conts_received;
    } else if (w.k) {
      in_cont_ = false;
      last_prim_ = p = w.data;
      prim_valid = true;
    } else if (in_cont_) {
      prim_valid = true;
      p = last_prim_;
    } else {
      data_valid = true;
    }
  }
  auto is = [&](uint32_t x) { return prim_valid && p == x; };

  // ---- receive ----
  switch (rx_) {
    case Rx::kIdle:
      if (is(prim::kXRdy)) rx_ = Rx::kRdy;
      break;
    case Rx::kRdy:
      if (is(prim::kSof)) {
        rx_ = Rx::kWaitFirst;
        rx_words_.clear();
        rx_scrambler_.reset();
        rx_hold_left_ = 0;
        rx_held_once_ = false;
      }
      break;
    case Rx::kWaitFirst:
    case Rx::kCopy:
      if (data_valid) {
        rx_words_.push_back(rx_scrambler_.scramble(w.data));
        rx_ = Rx::kCopy;
      } else if (is(prim::kEof) && rx_ == Rx::kCopy) {
        HostRxFrame f;
        f.cycle = cycle_;
        f.fis.assign(rx_words_.begin(), rx_words_.end() - 1);
        f.crc_ok = link::crc_of(f.fis.data(), f.fis.size()) == rx_words_.back();
        ++counters.frames_received;
        if (!f.crc_ok) ++counters.crc_errors;
        rx_ = f.crc_ok ? Rx::kROk : Rx::kRErr;
        if (on_frame) on_frame(f);
      } else if (is(prim::kSync)) {
        rx_ = Rx::kIdle;  // the device gave the frame up
      }
      break;
    case Rx::kROk:
    case Rx::kRErr:
      if (is(prim::kSync)) rx_ = Rx::kIdle;
      break;
  }
  uint32_t insert = 0;
  switch (rx_) {
    case Rx::kIdle:
      break;
    case Rx::kRdy:
      insert = prim::kRRdy;
      break;
    case Rx::kWaitFirst:
      insert = prim::kRIp;
      break;
    case Rx::kCopy:
      if (is(prim::kHold)) {
        insert = prim::kHolda;
        break;
      }
      if (!rx_held_once_ && opt_.rx_hold_cycles && rx_words_.size() >= opt_.rx_hold_after &&
          (rx_words_[0] & 0xFF) == 0x46) {
        rx_held_once_ = true;
        rx_hold_left_ = opt_.rx_hold_cycles;
      }
      if (rx_hold_left_) {
        --rx_hold_left_;
        if (is(prim::kHolda)) ++counters.holda_from_device;
        insert = prim::kHold;
      } else {
        insert = prim::kRIp;
      }
      break;
    case Rx::kROk:
      insert = prim::kROk;
      break;
    case Rx::kRErr:
      insert = prim::kRErr;
      break;
  }

  // ---- transmit ----
  if (tx_ != Tx::kIdle && tx_ != Tx::kRdy && is(prim::kSync)) {  // the device dropped us
    if (on_sent) on_sent(tx_queue_.front(), false);
    tx_queue_.pop_front();
    tx_ = Tx::kIdle;
  }
  LinkWord want = primitive(prim::kSync);
  switch (tx_) {
    case Tx::kIdle:
      if (rx_ == Rx::kIdle && !tx_queue_.empty() && is(prim::kSync)) tx_ = Tx::kRdy;
      break;
    case Tx::kRdy:
      if (rx_ != Rx::kIdle) tx_ = Tx::kIdle;  // the device sends too: it wins
      else if (is(prim::kRRdy)) tx_ = Tx::kSof;
      break;
    case Tx::kCopy:
      if (is(prim::kHold)) tx_ = Tx::kHolda;
      break;
    case Tx::kHolda:
      if (prim_valid && p != prim::kHold) tx_ = Tx::kCopy;
      break;
    case Tx::kWtrm:
      if (is(prim::kROk) || is(prim::kRErr)) {
        if (is(prim::kRErr)) ++counters.r_err_received;
        std::vector<uint32_t> fis = std::move(tx_queue_.front());
        tx_queue_.pop_front();
        tx_ = Tx::kIdle;
        if (on_sent) on_sent(fis, is(prim::kROk));
      }
      break;
    default:
      break;
  }
  switch (tx_) {
    case Tx::kIdle:
      want = primitive(prim::kSync);
      break;
    case Tx::kRdy:
      want = primitive(prim::kXRdy);
      break;
    case Tx::kSof:
      want = primitive(prim::kSof);
      break;
    case Tx::kCopy:
      if (!tx_paused_once_ && opt_.tx_pause_cycles && tx_index_ >= opt_.tx_pause_after &&
          (tx_words_[0] & 0xFF) == 0x46) {
        tx_paused_once_ = true;
        tx_pause_left_ = opt_.tx_pause_cycles;
      }
      if (tx_pause_left_) {
        want = primitive(prim::kHold);  // nothing to send for a while
        if (is(prim::kHolda)) ++counters.holda_from_device;
      } else {
        want = LinkWord{tx_words_[tx_index_], false};
      }
      break;
    case Tx::kHolda:
      ++counters.holds_from_device;
      want = primitive(prim::kHolda);
      break;
    case Tx::kEof:
      want = primitive(prim::kEof);
      break;
    case Tx::kWtrm:
      want = primitive(prim::kWtrm);
      break;
  }
  bool from_rx = insert != 0;
  if (from_rx) want = primitive(insert);  // the receiver's primitive goes first
  bool consumed = false;
  LinkWord out = encode(want, consumed);  // data is scrambled below, once it really goes
  if (!consumed || from_rx) return out;
  switch (tx_) {
    case Tx::kSof:
      tx_ = Tx::kCopy;
      tx_words_ = tx_queue_.front();
      tx_words_.push_back(link::crc_of(tx_words_.data(), tx_words_.size()));
      tx_index_ = 0;
      tx_scrambler_.reset();
      tx_paused_once_ = false;
      break;
    case Tx::kCopy:
      if (tx_pause_left_) {
        --tx_pause_left_;
        break;
      }
      out = LinkWord{tx_scrambler_.scramble(tx_words_[tx_index_]), false};
      if (++tx_index_ == tx_words_.size()) tx_ = Tx::kEof;
      break;
    case Tx::kEof:
      tx_ = Tx::kWtrm;
      break;
    default:
      break;
  }
  return out;
}

}  // namespace fisrig::test
