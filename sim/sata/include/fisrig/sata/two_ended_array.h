// A contiguous array of trivially copyable elements that erases and inserts by moving the
// shorter side: the elements before the place or those after it. The wire's busy
// intervals (LinkTiming) live in one: about 124 of them at the main job's queue depth 32,
// retired from the front twice a command and cut into near the front once (the host's
// H2D goes first). In a std::vector each of those moved the whole array, 6 to 8 KiB a
// command (perf: memmove 5.3% of the main job's model samples).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

namespace fisrig::drive {

template <class T>
class TwoEndedArray {
  static_assert(std::is_trivially_copyable_v<T>, "elements are moved with memmove");

 public:
  TwoEndedArray() = default;
  TwoEndedArray(const TwoEndedArray&) = delete;
  TwoEndedArray& operator=(const TwoEndedArray&) = delete;
  TwoEndedArray(TwoEndedArray&& o) noexcept { *this = std::move(o); }
  TwoEndedArray& operator=(TwoEndedArray&& o) noexcept {
    buf_ = std::move(o.buf_);
    cap_ = std::exchange(o.cap_, 0);
    head_ = std::exchange(o.head_, 0);
    tail_ = std::exchange(o.tail_, 0);
    return *this;
  }

  T* begin() { return buf_.get() + head_; }
  T* end() { return buf_.get() + tail_; }
  const T* begin() const { return buf_.get() + head_; }
  const T* end() const { return buf_.get() + tail_; }
  size_t size() const { return tail_ - head_; }
  bool empty() const { return tail_ == head_; }
  T& back() { return buf_[tail_ - 1]; }
  const T& back() const { return buf_[tail_ - 1]; }

  void push_back(const T& v) {
    if (tail_ == cap_) make_room(size() / 2);
    buf_[tail_++] = v;
  }
  void pop_back() { --tail_; }

  // Puts v before pos; returns where it is now.
  T* insert(T* pos, const T& v) {
    size_t i = size_t(pos - begin()), n = size();
    if (i < n - i) {  // the front is shorter: it moves one place toward the start
      if (head_ == 0) make_room(n / 2 + 1);
      std::memmove(begin() - 1, begin(), i * sizeof(T));
      --head_;
    } else {
      if (tail_ == cap_) make_room(n / 2);
      std::memmove(begin() + i + 1, begin() + i, (n - i) * sizeof(T));
      ++tail_;
    }
    begin()[i] = v;
    return begin() + i;
  }
  // Removes [first, last); returns where the element after them is now.
  T* erase(T* first, T* last) {
    size_t i = size_t(first - begin()), k = size_t(last - first), after = size_t(end() - last);
    if (i < after) {  // the front is shorter: it moves k places toward the end
      std::memmove(begin() + k, begin(), i * sizeof(T));
      head_ += k;
    } else {
      std::memmove(first, last, after * sizeof(T));
      tail_ -= k;
    }
    return begin() + i;
  }
  T* erase(T* pos) { return erase(pos, pos + 1); }

 private:
  // The elements laid out again with `front` free places before them, and as many again
  // (and at least 16) after: in the same storage when it is large enough.
  void make_room(size_t front) {
    size_t n = size(), need = front + n + std::max<size_t>(16, n + front);
    if (need <= cap_) {
      std::memmove(buf_.get() + front, begin(), n * sizeof(T));
    } else {
      cap_ = std::max(need, 2 * cap_);
      std::unique_ptr<T[]> b(new T[cap_]);
      if (n) std::memcpy(b.get() + front, begin(), n * sizeof(T));
      buf_ = std::move(b);
    }
    head_ = front;
    tail_ = front + n;
  }

  std::unique_ptr<T[]> buf_;
  size_t cap_ = 0, head_ = 0, tail_ = 0;
};

}  // namespace fisrig::drive
