// A cluster's `handover = { window, copy_ttl }`: what it reads, where it applies, and each
// mistake at its position with its key path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/config.h"
#include "tests/support/config_errors.h"

namespace lb {
namespace {

using test::errorsOf;

std::string clusterWith(const std::string& handover_line) {
  return "[clusters.web]\n" + handover_line +
         "\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
}

const std::string kHttp = "[listeners.h]\nlisten = \"127.0.0.1:8080\"\ncluster = \"web\"\n";

TEST(ConfigHandoverTest, ReadsTheWindowAndIsOffWithoutIt) {
  auto r = loadConfigString(clusterWith("handover = { window = \"5m\" }") + kHttp, "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const auto& h = r.value().clusters.at(0).handover;
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->window, Duration{300000});
  EXPECT_EQ(h->pos.line, 2u);
  EXPECT_EQ(h->pos.column, 12u);

  auto off = loadConfigString(clusterWith("") + kHttp, "lb.toml");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off.value().clusters.at(0).handover.has_value());
  auto zero = loadConfigString(clusterWith("handover = { window = \"0s\" }") + kHttp, "lb.toml");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero.value().clusters.at(0).handover->window, Duration{0});
}

TEST(ConfigHandoverTest, MistakesNameTheirPositionAndKey) {
  EXPECT_EQ(errorsOf(clusterWith("handover = { window = \"soon\" }") + kHttp),
            std::vector<std::string>{
                "lb.toml:2:23: clusters.web.handover.window: 'soon' is not a duration (use e.g. "
                "250ms, 2s, 1m)"});
  EXPECT_EQ(errorsOf(clusterWith("handover = { window = \"25h\" }") + kHttp),
            std::vector<std::string>{
                "lb.toml:2:23: clusters.web.handover.window: must be at most 24h, got 25h"});
  EXPECT_EQ(errorsOf(clusterWith("handover = { window = 60 }") + kHttp).size(), 1u);
  EXPECT_EQ(errorsOf(clusterWith("handover = { windwo = \"1m\" }") + kHttp).size(), 1u);
}

// copy_ttl where nothing reads through is refused by name rather than ignored.
TEST(ConfigHandoverTest, CopyTtlWithoutACacheListenerIsRefusedByName) {
  const auto ttl =
      errorsOf(clusterWith("handover = { window = \"1m\", copy_ttl = \"10m\" }") + kHttp);
  ASSERT_EQ(ttl.size(), 1u);
  EXPECT_EQ(ttl[0].rfind("lb.toml:2:40: clusters.web.handover.copy_ttl: applies only to the "
                         "redis and memcached read-through",
                         0),
            0u)
      << ttl[0];
}

// Redis and memcached clusters read through: their handover and copy_ttl are taken.
TEST(ConfigHandoverTest, CacheClustersTakeTheWindowAndCopyTtl) {
  for (const char* protocol : {"redis", "memcached"}) {
    const std::string listener = std::string("[listeners.r]\nlisten = \"127.0.0.1:6380\"\n") +
                                 "protocol = \"" + protocol + "\"\ncluster = \"web\"\n";
    auto r = loadConfigString(
        clusterWith("handover = { window = \"1m\", copy_ttl = \"10m\" }") + listener, "lb.toml");
    ASSERT_TRUE(r.ok()) << protocol << ": " << r.errors().front().format();
    EXPECT_EQ(r.value().clusters.at(0).handover->copy_ttl, Duration{600000});
  }
}

}  // namespace
}  // namespace lb
