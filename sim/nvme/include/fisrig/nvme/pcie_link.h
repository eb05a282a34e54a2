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
  uint32_t gen = 3;     // 1..5: 2.5, 5, 8, 16, 32 GT/s a lane
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
// receiver, and real links ACK every few TLPs.
constexpr uint32_t kTlpsPerAck = 4, kDllpBytes = 8;

class PcieLink {
 public:
  explicit PcieLink(const PcieConfig& c) : cfg_(c), ns_per_byte_(1.0 / bytes_per_ns(c)) {}

  // The link's rate in one direction after encoding, bytes a ns.
  static double bytes_per_ns(const PcieConfig& c) {
    static constexpr double kGts[] = {0, 2.5, 5, 8, 16, 32};
    double encoding = c.gen >= 3 ? 128.0 / 130.0 : 8.0 / 10.0;
    return kGts[c.gen] * c.lanes * encoding / 8.0;
  }
  // One TLP's bytes on the wire (the ACKs it draws go the other way: up, down).
  static uint32_t tlp_bytes(uint32_t header, uint32_t payload) { return header + payload + kFraming; }
  double ns_per_byte() const { return ns_per_byte_; }
  const PcieConfig& config() const { return cfg_; }

  // Device to host (the controller's requests, data it writes, CQEs, MSI-X) and host to
  // device (doorbells, completions with data): a TLP of `bytes` in the first gap at or
  // after t on its direction; returns when it ends (last_start(): when it began). Commands
  // are costed as they are fetched, not in time order, so a later one may take an earlier
  // gap, as on the wire. Every kTlpsPerAck TLPs an ACK takes its time on the other
  // direction. A time is a whole ns: each direction carries the fraction a TLP's time
  // leaves over to its next, so a burst takes its exact time to the ns (280 bytes at Gen3
  // x4 are 71.09 ns: 71 most times, 72 one time in eleven).
  SimTime up(SimTime t, uint32_t bytes) { return send(up_, down_, t, bytes); }
  SimTime down(SimTime t, uint32_t bytes) { return send(down_, up_, t, bytes); }
  SimTime last_start() const { return last_start_; }
  // Nothing will be booked before t again: older intervals go.
  void retire_before(SimTime t) {
    for (Direction* d : {&up_, &down_}) {
      Book& b = d->busy;
      while (b.head < b.v.size() && b.v[b.head].second < t) ++b.head;
      if (b.head >= kCompactAt && 2 * b.head >= b.v.size()) {  // the retired go in one move
        b.v.erase(b.v.begin(), b.v.begin() + std::ptrdiff_t(b.head));
        b.head = 0;
      }
    }
  }
  void reset() { up_ = Direction{}, down_ = Direction{}; }

 private:
  // Busy intervals (start, end), disjoint, by start, from v[head] (those before it retired).
  // A write's data and CQE are booked when it is fetched, often milliseconds ahead of what
  // is booked after it, so the book holds thousands and most bookings go in near its end:
  // a vector moves the few after them (a deque's iterators made its binary search and
  // inserts two thirds of the NVMe model's time; a map's node a TLP cost more than the rest
  // of its booking: docs/performance.md).
  struct Book {
    std::vector<std::pair<SimTime, SimTime>> v;
    size_t head = 0;
  };
  static constexpr size_t kCompactAt = 4096;
  struct Direction {
    Book busy;
    uint32_t tlps = 0;     // since its last ACK
    double carry = 0;      // the fraction of a ns its TLPs' times have left over
  };
  SimTime duration(Direction& d, uint32_t bytes) {
    d.carry += double(bytes) * ns_per_byte_;
    SimTime n = SimTime(d.carry);
    d.carry -= double(n);
    return n;
  }

  SimTime reserve(Direction& d, SimTime t, SimTime dur) {
    auto& b = d.busy.v;
    const auto first = b.begin() + std::ptrdiff_t(d.busy.head);
    // The first interval starting after t (most bookings go at or near the end: looked for there first).
    auto it = b.end();
    if (it != first && std::prev(it)->first > t)
      it = std::upper_bound(first, b.end(), t, [](SimTime v, const std::pair<SimTime, SimTime>& e) { return v < e.first; });
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
    } else if (joins_prev) {
      std::prev(it)->second = end;
    } else if (joins_next) {
      it->first = t;
    } else {
      b.insert(it, {t, end});
    }
    return end;
  }
  SimTime send(Direction& mine, Direction& other, SimTime t, uint32_t bytes) {
    SimTime end = reserve(mine, t, duration(mine, bytes));
    last_start_ = booked_start_;  // before the ACK's booking moves it
    if (++mine.tlps == kTlpsPerAck) {
      mine.tlps = 0;
      reserve(other, end, duration(other, kDllpBytes));
    }
    return end;
  }

  PcieConfig cfg_;
  double ns_per_byte_;
  Direction up_, down_;
  SimTime last_start_ = 0, booked_start_ = 0;
};

}  // namespace fisrig::nvme
