// TwoEndedArray (the wire's busy intervals) against std::vector: the same random inserts,
// erases and pushes at both ends and in the middle leave the same elements in the same order;
// a moved-from array is empty and usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fisrig/sata/two_ended_array.h"

namespace {

using fisrig::drive::TwoEndedArray;

void expect_same(const TwoEndedArray<int>& a, const std::vector<int>& v) {
  ASSERT_EQ(a.size(), v.size());
  ASSERT_TRUE(std::equal(a.begin(), a.end(), v.begin()));
}

TEST(TwoEndedArray, MatchesVectorUnderRandomEdits) {
  std::mt19937 rng(7);
  TwoEndedArray<int> a;
  std::vector<int> v;
  for (int step = 0; step < 200000; ++step) {
    // Near the front as the wire's retirements and cut-ins are, anywhere else too.
    size_t n = v.size();
    size_t at = n ? (rng() % 2 ? rng() % std::min<size_t>(n, 4) : rng() % (n + 1)) : 0;
    if (at > n) at = n;
    switch (rng() % 6) {
      case 0:
      case 1:
        a.push_back(step);
        v.push_back(step);
        break;
      case 2: {
        int* p = a.insert(a.begin() + at, step);
        auto q = v.insert(v.begin() + long(at), step);
        ASSERT_EQ(p - a.begin(), q - v.begin());
        break;
      }
      case 3:
        if (n) {
          size_t last = std::min(n, at + rng() % 4);
          if (at == n) break;
          int* p = a.erase(a.begin() + at, a.begin() + last);
          auto q = v.erase(v.begin() + long(at), v.begin() + long(last));
          ASSERT_EQ(p - a.begin(), q - v.begin());
        }
        break;
      case 4:
        if (n) {
          a.pop_back();
          v.pop_back();
        }
        break;
      case 5:
        if (n && at < n) {
          a.erase(a.begin() + at);
          v.erase(v.begin() + long(at));
        }
        break;
    }
    ASSERT_NO_FATAL_FAILURE(expect_same(a, v)) << "step " << step;
  }
  TwoEndedArray<int> moved = std::move(a);
  expect_same(moved, v);
  a.push_back(1);  // a moved-from array is empty and usable
  EXPECT_EQ(a.size(), 1u);
}

}  // namespace
