// The model target's records file, written by a thread of its own. The model builds each
// record in a 1 MiB buffer (room/commit); a full buffer goes to the writer thread, which
// writes it while the model fills the next: copying records into the page cache is a tenth
// of the main job's model time, and on a second CPU it is off the simulation's path
// (docs/performance.md, "The model's time"). Buffers go out in the order they were filled; when
// all are waiting to be written the model waits for one (the disk bounds it, nothing is
// dropped).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace fisrig::model {

class RecordWriter {
 public:
  static constexpr size_t kBufferBytes = size_t(1) << 20;
  // 8 MiB in flight: at the main job's 55 MB/s of records, 150 ms of the disk stalling.
  static constexpr size_t kBuffers = 8;

  explicit RecordWriter(int fd) : fd_(fd) {
    for (size_t i = 0; i < kBuffers; ++i) {
      storage_.emplace_back(new char[kBufferBytes]);
      free_.push_back(storage_.back().get());
    }
    cur_ = take_free();
    thread_ = std::thread(&RecordWriter::run, this);
  }
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  ~RecordWriter() { close(); }

  // Where the next n bytes (at most kBufferBytes) go; commit(n) once they are there.
  char* room(size_t n) {
    if (used_ + n > kBufferBytes) hand_off();
    return cur_ + used_;
  }
  void commit(size_t n) { used_ += n; }

  // What the buffer holds goes to the writer now, however little (a killed run loses at
  // most what was handed off and not yet written, and what came after).
  void hand_off() {
    if (used_ == 0) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      full_.emplace_back(cur_, used_);
    }
    to_write_.notify_one();
    used_ = 0;
    cur_ = take_free();
  }

  // A write failed (error() says why): records after it are not in the file.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  int error() const { return error_.load(std::memory_order_relaxed); }

  // Hands off what is left, waits until everything is written, closes the file. False
  // when a write or the close failed.
  bool close() {
    if (fd_ < 0) return !failed();
    hand_off();
    {
      std::lock_guard<std::mutex> lock(m_);
      closing_ = true;
    }
    to_write_.notify_one();
    thread_.join();
    if (::close(fd_) != 0 && !failed()) fail(errno);
    fd_ = -1;
    return !failed();
  }

 private:
  char* take_free() {
    std::unique_lock<std::mutex> lock(m_);
    written_.wait(lock, [&] { return !free_.empty(); });
    char* b = free_.back();
    free_.pop_back();
    return b;
  }

  void fail(int e) {
    error_.store(e ? e : EIO, std::memory_order_relaxed);
    failed_.store(true, std::memory_order_relaxed);
  }

  void run() {
    for (;;) {
      std::pair<char*, size_t> b;
      {
        std::unique_lock<std::mutex> lock(m_);
        to_write_.wait(lock, [&] { return !full_.empty() || closing_; });
        if (full_.empty()) return;  // closing, and all written
        b = full_.front();
        full_.pop_front();
      }
      // After a failure the rest is dropped (the file would have a hole): the buffers still
      // come back, so the model never waits for one forever.
      for (size_t off = 0; off < b.second && !failed();) {
        ssize_t w = ::write(fd_, b.first + off, b.second - off);
        if (w > 0) off += size_t(w);
        else if (w < 0 && errno == EINTR) continue;
        else fail(w < 0 ? errno : EIO);
      }
      {
        std::lock_guard<std::mutex> lock(m_);
        free_.push_back(b.first);
      }
      written_.notify_one();
    }
  }

  int fd_;
  char* cur_ = nullptr;
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> storage_;
  std::mutex m_;
  std::condition_variable to_write_, written_;
  std::deque<std::pair<char*, size_t>> full_;  // in the order they were filled
  std::vector<char*> free_;
  bool closing_ = false;
  std::atomic<bool> failed_{false};
  std::atomic<int> error_{0};
  std::thread thread_;
};

}  // namespace fisrig::model
