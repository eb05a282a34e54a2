// Completions the drive has produced but the host has not yet taken, in completion-time
// order (ties in submission order). The heap holds small keys; completions stay put.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fisrig/sata/ata.h"

namespace fisrig::drive {

class CompletionQueue {
 public:
  // Returns the completion's sequence number.
  uint64_t push(const Completion& c) {
    uint32_t idx;
    if (free_.empty()) {
      idx = uint32_t(store_.size());
      store_.push_back(c);
    } else {
      idx = free_.back();
      free_.pop_back();
      store_[idx] = c;
    }
    heap_.push_back(Key{c.t_complete, seq_, idx});
    std::push_heap(heap_.begin(), heap_.end(), later);
    last_idx_ = idx, last_valid_ = true;
    return seq_++;
  }
  bool pop(Completion& out) {
    if (heap_.empty()) return false;
    last_valid_ = false;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    out = store_[heap_.back().idx];
    free_.push_back(heap_.back().idx);
    heap_.pop_back();
    return true;
  }
  // Takes out the completion with this sequence number, if it is still here.
  bool take(uint64_t seq, Completion& out) {
    for (size_t i = 0; i < heap_.size(); ++i) {
      if (heap_[i].seq != seq) continue;
      last_valid_ = false;
      out = store_[heap_[i].idx];
      free_.push_back(heap_[i].idx);
      heap_.erase(heap_.begin() + long(i));
      std::make_heap(heap_.begin(), heap_.end(), later);
      return true;
    }
    return false;
  }
  // The completion with this sequence number while it is still here (null once taken or
  // dropped). The pointer is good until the next push.
  const Completion* find(uint64_t seq) const {
    for (const Key& k : heap_)
      if (k.seq == seq) return &store_[k.idx];
    return nullptr;
  }
  // The completion pushed last, if it is this sequence number and still here, without
  // find's walk: the model target's engine looks at every command's as it submits it.
  const Completion* find_last(uint64_t seq) const {
    return last_valid_ && seq + 1 == seq_ ? &store_[last_idx_] : find(seq);
  }
  // The completion with this sequence number ends at t now (its status FIS moved); null
  // once it has been taken.
  const Completion* retime(uint64_t seq, SimTime t) {
    for (Key& k : heap_) {
      if (k.seq != seq) continue;
      k.t = store_[k.idx].t_complete = t;
      const Completion* c = &store_[k.idx];
      std::make_heap(heap_.begin(), heap_.end(), later);
      return c;
    }
    return nullptr;
  }
  SimTime next_time() const { return heap_.empty() ? kNever : heap_.front().t; }
  size_t size() const { return heap_.size(); }
  uint64_t next_seq() const { return seq_; }

  // Drops every completion later than t (power loss, COMRESET, hang); returns how many.
  size_t drop_after(SimTime t) {
    size_t before = heap_.size();
    last_valid_ = false;
    auto gone = std::remove_if(heap_.begin(), heap_.end(), [&](const Key& k) {
      if (k.t <= t) return false;
      free_.push_back(k.idx);
      return true;
    });
    heap_.erase(gone, heap_.end());
    std::make_heap(heap_.begin(), heap_.end(), later);
    return before - heap_.size();
  }
  // Lets `f` change any completion, its time included, then restores the order.
  template <class F>
  void update_all(F f) {
    for (Key& k : heap_) {
      f(store_[k.idx]);
      k.t = store_[k.idx].t_complete;
    }
    std::make_heap(heap_.begin(), heap_.end(), later);
  }

 private:
  struct Key {
    SimTime t;
    uint64_t seq;
    uint32_t idx;
  };
  static bool later(const Key& a, const Key& b) { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
  std::vector<Completion> store_;
  std::vector<uint32_t> free_;
  std::vector<Key> heap_;
  uint64_t seq_ = 0;
  uint32_t last_idx_ = 0;  // push's last, while nothing has been taken out since
  bool last_valid_ = false;
};

}  // namespace fisrig::drive
