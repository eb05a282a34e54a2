// A compiled program's bytes, as the VM reads them (fisrig_vm_run takes a const pointer).
//
// The file is mapped with its pages populated up front, not copied into a growing vector
// whose doublings each fault fresh pages in (a 600 MB trace program: docs/performance.md).
// Where the file cannot be mapped (a pipe, /dev/stdin), it is read.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fisrig::model {

class ProgramFile {
 public:
  // False when the file cannot be opened or read.
  bool open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = false;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p != MAP_FAILED) {
        map_ = static_cast<const uint8_t*>(p);
        size_ = size_t(st.st_size);
        ok = true;
      }
    }
    if (!ok) ok = read_all(fd);
    ::close(fd);
    return ok;
  }
  ~ProgramFile() {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
  }
  const uint8_t* data() const { return map_ ? map_ : copy_.data(); }
  size_t size() const { return map_ ? size_ : copy_.size(); }

 private:
  bool read_all(int fd) {
    uint8_t block[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, block, sizeof block);
      if (n < 0) return false;
      if (n == 0) return true;
      copy_.insert(copy_.end(), block, block + n);
    }
  }
  const uint8_t* map_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> copy_;
};

}  // namespace fisrig::model
