// The PCIe link between the rig (the host) and the NVMe controller, costed TLP by TLP: each
// direction is a resource of its own (the link is full duplex), and a TLP takes its bytes
// on the wire at the link's rate after encoding. docs/nvme.md has the arithmetic and the
// ceilings it gives.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "fisrig/ssd/sim_time.h"

namespace fisrig::nvme {

using drive::SimTime;

struct PcieConfig {
  uint32_t gen = 3;     // 1..5: 2.5, 5, 8, 16, 32 GT/s a lane; 0: a link of no cost (NvmeConfig::free_link)
  uint32_t lanes = 4;
  uint32_t max_payload = 256;       // MPS: a data TLP's payload at most
  uint32_t max_read_request = 512;  // MRRS: a read request's length at most
  // From the controller's read request leaving to the host's first completion for it
  // arriving: the root complex and host memory (a link's own time is costed apart).
  SimTime host_read_ns = 600;
};

// A TLP's bytes on the wire beside its header and payload: at 8 GT/s and over (128b/130b),
// the STP token (4, with the sequence number) and the LCRC (4); below, STP (1), the
// sequence number (2), LCRC (4) and END (1): 8 either way. Headers: 16 bytes for a memory
// request with a 64-bit address, 12 for a completion.
constexpr uint32_t kFraming = 8, kMemHeader = 16, kCplHeader = 12;
// Every kTlpsPerAck TLPs the receiver sends back an ACK DLLP (8 bytes at 8 GT/s and over:
// SDP token 2, DLLP 4, CRC 2), which the other direction carries; flow control updates
// ride on the same rate. A choice: the specification leaves the ACK's coalescing to the
// receiver, and real links ACK every few TLPs. An ACK goes out just ahead of the next TLP
// booked on its direction: its bytes are charged to the link exactly, its place is that
// TLP's (booked alone, each ACK was an interval of 2 ns between others: a fifth of the
// bookings and most of the book's inserts, docs/performance.md).
constexpr uint32_t kTlpsPerAck = 4, kDllpBytes = 8;

class PcieLink {
 public:
  explicit PcieLink(const PcieConfig& c) : cfg_(c), per_byte_(per_byte(c)) {}

  // The link's rate in one direction after encoding, bytes a ns.
  static double bytes_per_ns(const PcieConfig& c) {
    static constexpr double kGts[] = {0, 2.5, 5, 8, 16, 32};
    double encoding = c.gen >= 3 ? 128.0 / 130.0 : 8.0 / 10.0;
    return kGts[c.gen] * c.lanes * encoding / 8.0;
  }
  // A byte's time in 1/kTimeScale ns, exact: 8 bits over 2.5 or 5 GT/s at 8b/10b (4 or 2
  // ns a lane), over 8, 16 or 32 GT/s at 128b/130b (65/64, 65/128, 65/256 ns a lane), over
  // 1 to 16 lanes, a power of two (the profile check holds them to that).
  static constexpr uint32_t kTimeShift = 12, kTimeScale = 1u << kTimeShift;
  static uint32_t per_byte(const PcieConfig& c) {
    static constexpr uint32_t kLane[] = {0, 4 * kTimeScale, 2 * kTimeScale, 65 * kTimeScale / 64,
                                         65 * kTimeScale / 128, 65 * kTimeScale / 256};
    return kLane[c.gen] / c.lanes;
  }
  // One TLP's bytes on the wire (the ACKs it draws go the other way: up, down).
  static uint32_t tlp_bytes(uint32_t header, uint32_t payload) { return header + payload + kFraming; }
  const PcieConfig& config() const { return cfg_; }

  // Device to host (the controller's requests, data it writes, CQEs, MSI-X) and host to
  // device (doorbells, completions with data): a TLP of `bytes` in the first gap at or
  // after t on its direction; returns when it ends (last_start(): when it began). Commands
  // are costed as they are fetched, not in time order, so a later one may take an earlier
  // gap, as on the wire. Every kTlpsPerAck TLPs an ACK is owed on the other direction,
  // sent ahead of its next TLP. A time is a whole ns: each direction carries the fraction
  // a TLP's time leaves over to its next, so a burst takes its exact time to the ns (280
  // bytes at Gen3 x4 are 71.09 ns: 71 most times, 72 one time in eleven).
  SimTime up(SimTime t, uint32_t bytes) { return send(up_, down_, t, bytes); }
  SimTime down(SimTime t, uint32_t bytes) { return send(down_, up_, t, bytes); }
  SimTime last_start() const { return last_start_; }
  // `tlps` TLPs of `wire_bytes` in all, back to back from t where the last booking on the
  // direction ends at t and the gap after it holds them all: booked at once, just as that
  // many up() or down() calls, each at the end of the one before, would book them (a
  // command's data TLPs, without a call each), and true; false, with nothing booked, where
  // they would not all go so. `ends`, if given, gets each one's end, for TLPs of one size.
  // last_start() is left as it was.
  bool extend_up(SimTime t, uint32_t tlps, uint64_t wire_bytes, SimTime& end, SimTime* ends = nullptr) {
    return extend(up_, down_, t, tlps, wire_bytes, end, ends);
  }
  bool extend_down(SimTime t, uint32_t tlps, uint64_t wire_bytes, SimTime& end, SimTime* ends = nullptr) {
    return extend(down_, up_, t, tlps, wire_bytes, end, ends);
  }
  // Nothing will be booked before t again: older intervals go.
  void retire_before(SimTime t) {
    if (t <= retired_to_) return;  // most calls: no later than the last
    retired_to_ = t;
    for (Direction* d : {&up_, &down_}) {
      Book& b = d->busy;
      while (b.head < b.v.size() && b.v[b.head].second < t) ++b.head;
      if (b.head >= kCompactAt && 2 * b.head >= b.v.size()) {  // the retired go in one move
        b.v.erase(b.v.begin(), b.v.begin() + std::ptrdiff_t(b.head));
        b.hint = b.hint > b.head ? b.hint - b.head : 0;
        b.head = 0;
      }
    }
  }
  void reset() { up_ = Direction{}, down_ = Direction{}, retired_to_ = 0; }

 private:
  // Busy intervals (start, end), disjoint, by start, from v[head] (those before it retired).
  // A write's data and CQE are booked when it is fetched, often milliseconds ahead of what
  // is booked after it, so the book holds thousands and most bookings go in near its end:
  // a vector moves the few after them (a deque's iterators made its binary search and
  // inserts two thirds of the NVMe model's time; a map's node a TLP cost more than the rest
  // of its booking: docs/performance.md). An interval is trivially copyable, so an insert
  // moves the ones after it in one memmove (a std::pair's assignment moved them one by one:
  // a sixth of the NVMe model's instructions).
  struct Span {
    SimTime first, second;
  };
  struct Book {
    std::vector<Span> v;
    size_t head = 0;
    size_t hint = 0;  // just past the interval the last booking went into
  };
  static constexpr int kHintSteps = 8;
  static constexpr size_t kCompactAt = 4096;
  struct Direction {
    Book busy;
    uint32_t tlps = 0;     // since its last ACK
    uint64_t carry = 0;    // the fraction of a ns its TLPs' times have left over (1/kTimeScale ns)
    uint32_t owed = 0;     // ACK bytes due out ahead of its next TLP
  };
  SimTime duration(Direction& d, uint32_t bytes) {
    d.carry += uint64_t(bytes) * per_byte_;
    SimTime n = d.carry >> kTimeShift;
    d.carry &= kTimeScale - 1;
    return n;
  }

  // A TLP right behind the one before it with room after: the interval grows (what
  // reserve() would do, found without a search; most of a command's TLPs go so).
  [[gnu::always_inline]] SimTime book(Direction& d, SimTime t, SimTime dur) {
    auto& b = d.busy.v;
    if (const size_t h = d.busy.hint; h > d.busy.head && h <= b.size() && b[h - 1].second == t &&
                                      (h == b.size() || b[h].first > t + dur)) {
      b[h - 1].second = t + dur;
      booked_start_ = t;
      return t + dur;
    }
    return reserve(d, t, dur);
  }
  [[gnu::noinline]] SimTime reserve(Direction& d, SimTime t, SimTime dur) {
    auto& b = d.busy.v;
    const auto first = b.begin() + std::ptrdiff_t(d.busy.head);
    // The first interval starting after t. Most bookings go at the end, or just after the
    // one before them (a command's TLPs one after another): looked for there first, the
    // book searched whole only when neither holds.
    auto it = b.end();
    if (it != first && std::prev(it)->first > t) {
      const size_t h = d.busy.hint;
      if (h > d.busy.head && h < b.size() && b[h - 1].first <= t) {
        it = b.begin() + std::ptrdiff_t(h);
        for (int k = 0; k < kHintSteps && it != b.end() && it->first <= t; ++k) ++it;
        if (it != b.end() && it->first <= t)
          it = std::upper_bound(it, b.end(), t, [](SimTime v, const Span& e) { return v < e.first; });
      } else {
        it = std::upper_bound(first, b.end(), t, [](SimTime v, const Span& e) { return v < e.first; });
      }
    }
    // The interval before t may reach past it.
    if (it != first) {
      auto prev = std::prev(it);
      if (prev->second > t) t = prev->second;
    }
    while (it != b.end() && it->first < t + dur) {  // not enough room before the next
      t = std::max(t, it->second);
      ++it;
    }
    SimTime end = t + dur;
    booked_start_ = t;
    // Join intervals that touch, so back-to-back TLPs stay one.
    const bool joins_prev = it != first && std::prev(it)->second == t;
    const bool joins_next = it != b.end() && it->first == end;
    if (joins_prev && joins_next) {
      std::prev(it)->second = it->second;
      b.erase(it);
      d.busy.hint = size_t(it - b.begin());
    } else if (joins_prev) {
      std::prev(it)->second = end;
      d.busy.hint = size_t(it - b.begin());
    } else if (joins_next) {
      it->first = t;
      d.busy.hint = size_t(it - b.begin()) + 1;
    } else {
      const auto at = b.insert(it, Span{t, end});  // before begin(): an insert may move the book
      d.busy.hint = size_t(at - b.begin()) + 1;
    }
    return end;
  }
  bool extend(Direction& mine, Direction& other, SimTime t, uint32_t tlps, uint64_t wire_bytes, SimTime& end,
              SimTime* ends) {
    auto& b = mine.busy.v;
    const size_t h = mine.busy.hint;
    if (!tlps || !(h > mine.busy.head && h <= b.size() && b[h - 1].second == t)) return false;
    // Each TLP's time is the whole ns its bytes and the carried fraction make: so the ends
    // of a run are the whole ns of its bytes so far, owed ACKs first.
    const uint64_t carry = mine.carry + uint64_t(mine.owed) * per_byte_;
    const uint64_t total = carry + wire_bytes * per_byte_;
    end = t + SimTime(total >> kTimeShift);
    if (h < b.size() && b[h].first <= end) return false;  // the last would not fit: one by one
    if (ends) {
      const uint64_t each = wire_bytes / tlps * per_byte_;
      for (uint32_t i = 0; i < tlps; ++i) ends[i] = t + SimTime((carry + each * (i + 1)) >> kTimeShift);
    }
    b[h - 1].second = end;
    mine.carry = total & (kTimeScale - 1);
    mine.owed = 0;
    mine.tlps += tlps;
    other.owed += kDllpBytes * (mine.tlps / kTlpsPerAck);
    mine.tlps %= kTlpsPerAck;
    return true;
  }
  [[gnu::always_inline]] SimTime send(Direction& mine, Direction& other, SimTime t, uint32_t bytes) {
    // The ACKs this direction owes go out ahead of its next TLP (their bytes, then its).
    SimTime acks = 0;
    if (mine.owed) acks = duration(mine, mine.owed), mine.owed = 0;
    SimTime end = book(mine, t, acks + duration(mine, bytes));
    last_start_ = booked_start_ + acks;
    if (++mine.tlps == kTlpsPerAck) {
      mine.tlps = 0;
      other.owed += kDllpBytes;
    }
    return end;
  }

  PcieConfig cfg_;
  uint32_t per_byte_;
  Direction up_, down_;
  SimTime last_start_ = 0, booked_start_ = 0, retired_to_ = 0;
};

}  // namespace fisrig::nvme
