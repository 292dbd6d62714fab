// The k-th distinct host walk behind every replica order: its three storage strategies (stack
// array for attempt < 16, stack bitset, quadratic rescan beyond 65536 hosts) agree on the same
// streams, including streams full of repeats.
#include "plugins/selectors/distinct_walk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

using selector_detail::nthDistinct;
using selector_detail::nthDistinctBitset;
using selector_detail::nthDistinctRescan;

// A stream over n hosts with many repeats that meets every host within 4n steps.
struct RepeatingStream {
  std::vector<uint32_t> values;
  uint32_t operator()(uint64_t i) const noexcept { return values[i % values.size()]; }
};

RepeatingStream makeStream(uint32_t n, uint64_t seed) {
  test::Prng prng(seed);
  RepeatingStream s;
  for (uint32_t i = 0; i < 3 * n; ++i) s.values.push_back(static_cast<uint32_t>(prng.below(n)));
  for (uint32_t h = 0; h < n; ++h) s.values.push_back(h);   // then every host, in order
  return s;
}

std::vector<uint32_t> firstOccurrences(const RepeatingStream& s) {
  std::vector<uint32_t> order;
  for (uint32_t v : s.values)
    if (std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
  return order;
}

TEST(DistinctWalkTest, AllStrategiesReturnTheKthFirstOccurrence) {
  for (uint32_t n : {1u, 2u, 15u, 16u, 17u, 70u}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      RepeatingStream s = makeStream(n, seed * 100 + n);
      const auto order = firstOccurrences(s);
      ASSERT_EQ(order.size(), n);
      for (uint32_t k = 0; k < n; ++k) {
        ASSERT_EQ(nthDistinct(k, n, s), order[k]) << "n=" << n << " k=" << k;
        ASSERT_EQ(nthDistinctBitset(k, n, s), order[k]) << "n=" << n << " k=" << k;
        ASSERT_EQ(nthDistinctRescan(k, s), order[k]) << "n=" << n << " k=" << k;
      }
    }
  }
}

TEST(DistinctWalkTest, RehashIsFixedAcrossBuilds) {
  // SplitMix64 of the key hash: pinned, since Maglev's and jump's replica order depend on it.
  EXPECT_EQ(selector_detail::rehash(0, 1), 0xE220A8397B1DCDAFULL);
  EXPECT_NE(selector_detail::rehash(42, 1), selector_detail::rehash(42, 2));
}

}  // namespace
}  // namespace lb
