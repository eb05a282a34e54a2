// The firmware's division by a fixed divisor gives exactly what `/` and `%` give.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

extern "C" {
#include "fisrig/divide.h"
}

namespace {

void expect_exact(uint64_t x, uint64_t n) {
  fisrig_divisor d = fisrig_divisor_of(n);
  uint64_t r = 0;
  ASSERT_EQ(fisrig_divide(x, &d, &r), x / n) << x << " / " << n;
  ASSERT_EQ(r, x % n) << x << " % " << n;
  ASSERT_EQ(fisrig_modulo(x, &d), x % n);
}

TEST(Divide, EdgesOfBothOperands) {
  const std::vector<uint64_t> values = {0, 1, 2, 3, 7, 100, 255, 256, 0xFFFF, 0x10000, 0xFFFFFFFFull,
                                        0x100000000ull, 0x100000001ull, 1953125, 0x8000000000000000ull,
                                        0x8000000000000001ull, UINT64_MAX - 1, UINT64_MAX};
  for (uint64_t n : values)
    if (n)
      for (uint64_t x : values) expect_exact(x, n);
}

TEST(Divide, RandomOperandsOfEveryWidth) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint64_t x = rng() >> (rng() % 64), n = rng() >> (rng() % 64);
    if (n) expect_exact(x, n);
  }
}

TEST(Divide, ExactMultiplesAndTheirNeighbours) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100000; ++i) {
    uint64_t n = (rng() >> (rng() % 64)) | 1u, q = rng() / n;
    for (uint64_t x : {q * n, q * n - 1, q * n + 1}) expect_exact(x, n);
  }
}

TEST(Divide, ZeroDivisorIsTakenAsOne) {
  fisrig_divisor d = fisrig_divisor_of(0);
  EXPECT_EQ(fisrig_divide(12345, &d, nullptr), 12345u);
}

}  // namespace
