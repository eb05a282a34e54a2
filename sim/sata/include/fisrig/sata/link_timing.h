// The SATA wire as one shared, half-duplex resource, costed in dwords.
//
// Every FIS pays its payload plus framing (SOF, CRC, EOF), the X_RDY/R_RDY and
// WTRM/R_OK handshakes, and the two ALIGN primitives sent every 256 dwords. This is
// what caps the drive at the interface's rate so simulated figures compare with reviews;
// the model target's engine refines it FIS by FIS.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "fisrig/ssd/config.h"
#include "fisrig/sata/two_ended_array.h"

namespace fisrig::drive {

namespace fis_dwords {
constexpr uint32_t kRegH2D = 5;
constexpr uint32_t kRegD2H = 5;
constexpr uint32_t kDmaActivate = 1;
constexpr uint32_t kDmaSetup = 7;
constexpr uint32_t kSetDeviceBits = 2;
constexpr uint32_t kPioSetup = 5;
constexpr uint32_t kDataHeader = 1;
constexpr uint32_t kMaxDataPayload = 2048;  // 8 KiB per Data FIS
// SOF + CRC + EOF + X_RDY/R_RDY + WTRM + R_IP/R_OK, as seen on the wire, and the SYNC
// between one frame's R_OK and the next frame's X_RDY: on the rtl target every FIS took a
// dword more than without it (targets-agree-qd32: an H2D's first dword to its releasing
// D2H's 107 ns against the model's 100, a 128 KiB data phase 221.49 us against 221.37,
// 16 Data FISes; with it QD1's worst latency difference went from 1.77% to 0.29%).
constexpr uint32_t kFraming = 3 + 2 + 1 + 2 + 1;
}  // namespace fis_dwords

// A queued command's good status waits up to this long for company in its Set Device Bits
// while another queued command's data phase is ready to go (the device side's rule,
// sim/device's CommandLayer; the Drive's when asked, Drive::set_sdb_coalescing).
constexpr SimTime kSdbCoalesceNs = 5000;
// ... and only for a data phase of one Data FIS (8 KiB or less): behind a longer one (a
// 128 KiB phase is 221 us at Gen3) a status would cost its command that whole transfer to
// save the host one SDB. Without this bound both targets held each other 128 KiB write's
// status a whole phase (targets-agree-qd32: p99 671 us, 447 without), and the model each
// other 128 KiB read's too (status median 1,330.5 us against the gateware's 1,109.3, whose
// device side took that data as due only after the status).
constexpr uint32_t kSdbHoldMaxPhaseBytes = fis_dwords::kMaxDataPayload * 4;

class LinkTiming {
 public:
  explicit LinkTiming(const InterfaceConfig& cfg) : ns_per_dword_(1e9 / cfg.dwords_per_s()) {}

  // Wire time of one FIS with `payload` dwords (header included), ALIGNs included.
  SimTime fis_ns(uint32_t payload) const {
    uint32_t d = payload + fis_dwords::kFraming;
    d += 2 * ((d + 255) / 256);
    return SimTime(d * ns_per_dword_ + 0.5);
  }
  // Wire time of `bytes` of data as Data FISes of at most 8 KiB.
  SimTime data_ns(uint64_t bytes) const {
    uint64_t dwords = (bytes + 3) / 4;
    uint64_t full = dwords / fis_dwords::kMaxDataPayload;
    uint32_t rest = uint32_t(dwords % fis_dwords::kMaxDataPayload);
    SimTime t = full * fis_ns(fis_dwords::kMaxDataPayload + fis_dwords::kDataHeader);
    if (rest) t += fis_ns(rest + fis_dwords::kDataHeader);
    return t;
  }
  // Puts a FIS of `dur` on the wire in the first idle gap at or after t; returns when
  // it ends. Commands are processed eagerly, not in time order, so a FIS decided later
  // may well go on the wire before one decided earlier: the wire keeps its busy intervals
  // and fills gaps, as a time-ordered simulation would.
  SimTime reserve(SimTime t, SimTime dur) {
    if (busy_.empty() || t >= busy_.back().end) {  // the common case: after everything
      if (!busy_.empty() && busy_.back().end == t) busy_.back().end = t + dur;
      else busy_.push_back(Interval{t, t + dur});
      return t + dur;
    }
    SimTime start;
    auto it = busy_.begin() + long(gap_at(t, dur, start));
    // Merge with neighbours that touch it, so back-to-back FISes stay one interval.
    SimTime end = start + dur;
    if (it != busy_.begin() && std::prev(it)->end == start) {
      auto prev = std::prev(it);
      prev->end = end;
      if (it != busy_.end() && it->start == end) {
        prev->end = it->end;
        busy_.erase(it);
      }
    } else if (it != busy_.end() && it->start == end) {
      it->start = start;
    } else {
      busy_.insert(it, Interval{start, end});
    }
    return end;
  }
  // How a cut_in moved the bookings after it: the interval booked over [from, to] now
  // lies `by` later. In wire order; `by` never grows along it (gaps absorb the push).
  struct Move {
    SimTime from, to, by;
  };
  // Where times booked on the wire lie after `moves`: each moved with its interval, or
  // where it was (before the cut-in, or in a gap). Made once for all the stamps a caller
  // keeps, it reads the span of the moves once: a function taking the vector read it again
  // after each store, since a stamp written could have been the vector's own, and most
  // stamps lie outside it (EngineModel::move_bookings 65.1 -> 40.9 M instructions in
  // model.instructions_per_cmd's run).
  class Mover {
   public:
    explicit Mover(const std::vector<Move>& moves)
        : moves_(moves), lo_(moves.empty() ? 1 : moves.front().from), hi_(moves.empty() ? 0 : moves.back().to) {}
    void operator()(SimTime& x) const {
      if (x < lo_ || x > hi_) return;
      // A push runs through every interval booked back to back with small gaps (a queued
      // write's FISes): dozens of them, and the host asks for each time it kept.
      auto m = std::upper_bound(moves_.begin(), moves_.end(), x, [](SimTime v, const Move& mv) { return v < mv.from; });
      --m;  // the last one starting at or before x
      if (x <= m->to) x += m->by;
    }

   private:
    const std::vector<Move>& moves_;
    const SimTime lo_, hi_;  // the span of the moves (empty: lo_ > hi_)
  };
  static SimTime moved(const std::vector<Move>& moves, SimTime x) {
    const Mover move(moves);
    move(x);
    return x;
  }
  // The host's FIS of `dur` (its H2D, and the D2H that releases a queued one when the
  // device sends it at once) put on the wire at the first idle instant at or after t: the
  // host's X_RDY wins whenever the device is not sending, whatever the device has booked
  // to send next, and what that pushes later moves later, as much as gaps do not absorb.
  // (reserve() waits for a gap that holds it instead, which is right for the device's own
  // FISes: it books them in the order it decides them.) Returns the FIS's start; `moves`
  // says what moved (empty when nothing had to).
  SimTime cut_in(SimTime t, SimTime dur, std::vector<Move>& moves) {
    moves.clear();
    if (busy_.empty() || t >= busy_.back().end) return reserve(t, dur) - dur;  // nothing after it
    auto it = std::lower_bound(busy_.begin(), busy_.end(), t,
                               [](const Interval& iv, SimTime x) { return iv.end <= x; });
    SimTime start = t;
    if (it != busy_.end() && it->start <= t) start = (it++)->end;  // the device is sending: after it
    SimTime end = start + dur;
    auto last = it;
    for (; last != busy_.end() && last->start < end; ++last) {
      moves.push_back(Move{last->start, last->end, end - last->start});
      end += last->end - last->start;
    }
    // [start, end) is one busy stretch now: the FIS and what it pushed, back to back.
    it = busy_.erase(it, last);
    if (it != busy_.begin() && std::prev(it)->end == start) {
      std::prev(it)->end = end;
      --it;
    } else {
      it = busy_.insert(it, Interval{start, end});
    }
    if (std::next(it) != busy_.end() && std::next(it)->start == end) {
      it->end = std::next(it)->end;
      busy_.erase(std::next(it));
    }
    return start;
  }
  // Takes the FIS booked over [start, start + dur) off the wire, and what follows it
  // back to back comes dur earlier, as far as the next gap (which absorbs the pull): the
  // device's status taken back from the middle of a run of FISes it books (Drive's SDB
  // sharing after a push). `moves` says how: what lay over [start + dur, end] lies dur
  // earlier (`by` wraps: the Mover adds it as it adds a push's).
  void pull(SimTime start, SimTime dur, std::vector<Move>& moves) {
    moves.clear();
    auto it = std::lower_bound(busy_.begin(), busy_.end(), start,
                               [](const Interval& iv, SimTime x) { return iv.end <= x; });
    if (it == busy_.end() || it->start > start || it->end < start + dur) return;
    moves.push_back(Move{start + dur, it->end, SimTime(0) - dur});
    if (it->end == start + dur && it->start == start) busy_.erase(it);
    else it->end -= dur;
  }
  // Where reserve(t, dur) would put the FIS: its start.
  SimTime first_fit(SimTime t, SimTime dur) const {
    SimTime start;
    gap_at(t, dur, start);
    return start;
  }
  // Takes back the reservation that ends the wire's bookings, from `start` on (which the
  // caller booked last): the wire is free from start again.
  void unreserve_tail(SimTime start) {
    if (busy_.empty()) return;
    if (busy_.back().start >= start) busy_.pop_back();
    else busy_.back().end = std::min(busy_.back().end, start);
  }
  // Nothing will ask for the wire before t again: forget what ended before it.
  void retire_before(SimTime t) {
    auto it = std::lower_bound(busy_.begin(), busy_.end(), t,
                               [](const Interval& iv, SimTime x) { return iv.end <= x; });
    busy_.erase(busy_.begin(), it);
  }
  SimTime free_at() const { return busy_.empty() ? 0 : busy_.back().end; }
  // Power cut or COMRESET at t: nothing after t goes on the wire.
  void reset(SimTime t) {
    retire_before(0);
    while (!busy_.empty() && busy_.back().start >= t) busy_.pop_back();
    if (!busy_.empty()) busy_.back().end = std::min(busy_.back().end, t);
  }

 private:
  struct Interval {
    SimTime start, end;
  };
  // The first idle gap at or after t that holds dur: its start, and the index of the
  // interval after it.
  size_t gap_at(SimTime t, SimTime dur, SimTime& start) const {
    auto it = std::lower_bound(busy_.begin(), busy_.end(), t,
                               [](const Interval& iv, SimTime x) { return iv.end <= x; });
    start = t;
    for (; it != busy_.end(); ++it) {
      if (start + dur <= it->start) break;  // fits in the gap before *it
      start = std::max(start, it->end);
    }
    return size_t(it - busy_.begin());
  }
  double ns_per_dword_;
  TwoEndedArray<Interval> busy_;  // sorted, disjoint
};

}  // namespace fisrig::drive
