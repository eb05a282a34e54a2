// Large per-page tables are read at random: backing them with transparent huge pages
// saves a TLB miss on most lookups. The advice must come before the memory is first
// touched, so it lives in an allocator. Harmless where THP is off.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace fisrig::drive {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    constexpr size_t kHuge = 2u << 20;
    size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      if (void* p = std::malloc(bytes ? bytes : 1)) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
    bytes = (bytes + kHuge - 1) & ~(kHuge - 1);
    void* p = std::aligned_alloc(kHuge, bytes);
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
};

template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace fisrig::drive
