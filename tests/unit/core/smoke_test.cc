#include <gtest/gtest.h>

#include "lb/core/hash.h"
#include "lb/core/result.h"

namespace lb {
namespace {

TEST(ConfigErrorTest, FormatsFileLineColumnAndKeyPath) {
  ConfigError e{"lb.toml", {14, 3}, "clusters.cache.backends[1].weight", "must be >= 1, got 0"};
  EXPECT_EQ(e.format(), "lb.toml:14:3: clusters.cache.backends[1].weight: must be >= 1, got 0");
}

TEST(HashTest, Crc32MatchesZlibReferenceVector) {
  // The standard CRC-32 check value.
  EXPECT_EQ(crc32Of("123456789"), 0xCBF43926u);
}

}  // namespace
}  // namespace lb
