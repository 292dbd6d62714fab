// The health options of a cluster: health, outlier and panic_threshold, with their defaults,
// the check type that fits the listeners when none is written, and every mistake reported
// with its position and key path.
#include <gtest/gtest.h>

#include <string>

#include "lb/config/config.h"

namespace lb {
namespace {

const char* kListenerHttp =
    "[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n";
const char* kListenerTcp =
    "[listeners.raw]\nlisten = \"127.0.0.1:8081\"\nprotocol = \"tcp\"\ncluster = \"cache\"\n"
    "hash = [ { five_tuple = true } ]\n";

std::string cluster(const std::string& extra) {
  return "[clusters.cache]\n" + extra +
         "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
}

Result<Config> load(const std::string& text) { return loadConfigString(text, "lb.toml"); }

std::string errorsOf(const Result<Config>& r) {
  std::string out;
  if (!r.ok())
    for (const auto& e : r.errors()) out += e.format() + "\n";
  return out;
}

TEST(ConfigHealthTest, WithoutTheTablesThereAreNoChecksNoEjectionAndPanicAt50) {
  auto r = load(std::string(kListenerHttp) + cluster(""));
  ASSERT_TRUE(r.ok()) << errorsOf(r);
  const ClusterConfig& c = r.value().clusters[0];
  EXPECT_FALSE(c.health);
  EXPECT_FALSE(c.outlier);
  EXPECT_EQ(c.panic_threshold, 50u);
}

TEST(ConfigHealthTest, AnEmptyHealthTableHasEveryDefault) {
  auto r = load(std::string(kListenerHttp) + cluster("health = {}\noutlier = {}\n"));
  ASSERT_TRUE(r.ok()) << errorsOf(r);
  const ClusterConfig& c = r.value().clusters[0];
  ASSERT_TRUE(c.health);
  EXPECT_EQ(c.health->type, HealthCheckType::kHttp);   // its listener is http
  EXPECT_EQ(c.health->path, "/");
  EXPECT_EQ(c.health->expect, 200u);
  EXPECT_EQ(c.health->interval, Duration(2000));
  EXPECT_EQ(c.health->timeout, Duration(1000));
  EXPECT_EQ(c.health->rise, 2u);
  EXPECT_EQ(c.health->fall, 3u);
  ASSERT_TRUE(c.outlier);
  EXPECT_EQ(c.outlier->consecutive_failures, 5u);
  EXPECT_EQ(c.outlier->base_ejection, Duration(30000));
  EXPECT_EQ(c.outlier->max_ejection, Duration(300000));
  EXPECT_EQ(c.outlier->max_ejected_percent, 50u);
}

TEST(ConfigHealthTest, EveryOptionIsRead) {
  auto r = load(std::string(kListenerTcp) +
                cluster("panic_threshold = 0\n"
                        "health = { type = \"redis\", interval = \"500ms\", timeout = \"200ms\", "
                        "rise = 1, fall = 4 }\n"
                        "outlier = { consecutive_failures = 2, base_ejection = \"1s\", "
                        "max_ejection = \"8s\", max_ejected_percent = 34 }\n"));
  ASSERT_TRUE(r.ok()) << errorsOf(r);
  const ClusterConfig& c = r.value().clusters[0];
  EXPECT_EQ(c.panic_threshold, 0u);
  EXPECT_EQ(c.health->type, HealthCheckType::kRedis);
  EXPECT_EQ(c.health->interval, Duration(500));
  EXPECT_EQ(c.health->timeout, Duration(200));
  EXPECT_EQ(c.health->rise, 1u);
  EXPECT_EQ(c.health->fall, 4u);
  EXPECT_EQ(c.outlier->consecutive_failures, 2u);
  EXPECT_EQ(c.outlier->base_ejection, Duration(1000));
  EXPECT_EQ(c.outlier->max_ejection, Duration(8000));
  EXPECT_EQ(c.outlier->max_ejected_percent, 34u);
}

TEST(ConfigHealthTest, TheDefaultTypeFitsTheListenersInFront) {
  auto tcp = load(std::string(kListenerTcp) + cluster("health = {}\n"));
  ASSERT_TRUE(tcp.ok()) << errorsOf(tcp);
  EXPECT_EQ(tcp.value().clusters[0].health->type, HealthCheckType::kTcp);
  auto both = load(std::string(kListenerHttp) + kListenerTcp + cluster("health = {}\n"));
  ASSERT_TRUE(both.ok()) << errorsOf(both);
  EXPECT_EQ(both.value().clusters[0].health->type, HealthCheckType::kTcp);
  auto none = load(cluster("health = {}\n"));
  ASSERT_TRUE(none.ok()) << errorsOf(none);
  EXPECT_EQ(none.value().clusters[0].health->type, HealthCheckType::kTcp);
}

struct Mistake {
  const char* name;
  std::string toml;
  std::string error;
};

std::ostream& operator<<(std::ostream& os, const Mistake& m) { return os << m.name; }

class ConfigHealthMistakeTest : public ::testing::TestWithParam<Mistake> {};

TEST_P(ConfigHealthMistakeTest, IsReportedWithPositionPathAndMessage) {
  auto r = load(GetParam().toml);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(errorsOf(r), GetParam().error + "\n");
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, ConfigHealthMistakeTest,
    ::testing::Values(
        Mistake{"TypeTypo", cluster("health = { type = \"htp\" }\n"),
                "lb.toml:2:19: clusters.cache.health.type: 'htp' is not one of http, tcp, redis, "
                "memcached (did you mean 'http'?)"},
        Mistake{"TimeoutLongerThanInterval",
                cluster("health = { interval = \"1s\", timeout = \"2s\" }\n"),
                "lb.toml:2:39: clusters.cache.health.timeout: must not be longer than interval "
                "(1s), got 2s"},
        Mistake{"TimeoutLongerThanDefaultInterval", cluster("health = { timeout = \"5s\" }\n"),
                "lb.toml:2:22: clusters.cache.health.timeout: must not be longer than interval "
                "(2s), got 5s"},
        Mistake{"IntervalTooShort", cluster("health = { interval = \"5ms\", timeout = \"1ms\" }\n"),
                "lb.toml:2:23: clusters.cache.health.interval: must be at least 10ms, got '5ms'"},
        Mistake{"FallZero", cluster("health = { fall = 0 }\n"),
                "lb.toml:2:19: clusters.cache.health.fall: must be >= 1, got 0"},
        Mistake{"PathWithoutSlash", cluster("health = { type = \"http\", path = \"healthz\" }\n"),
                "lb.toml:2:34: clusters.cache.health.path: must be a request path starting with "
                "'/' (no spaces, at most 1024 bytes), got 'healthz'"},
        Mistake{"PathOnATcpCheck",
                std::string(kListenerTcp) + cluster("health = { path = \"/healthz\" }\n"),
                "lb.toml:7:19: clusters.cache.health.path: applies only to type = \"http\" (this "
                "cluster's checks are 'tcp', the default for its non-http listeners; write type = "
                "\"http\" to check over HTTP)"},
        Mistake{"ExpectOnARedisCheck", cluster("health = { type = \"redis\", expect = 200 }\n"),
                "lb.toml:2:37: clusters.cache.health.expect: applies only to type = \"http\" "
                "(this cluster's checks are 'redis')"},
        Mistake{"UnknownHealthKey", cluster("health = { rize = 2 }\n"),
                "lb.toml:2:12: clusters.cache.health: unknown key 'rize' (did you mean 'rise'?)"},
        Mistake{"MaxEjectionShorterThanBase",
                cluster("outlier = { base_ejection = \"10s\", max_ejection = \"5s\" }\n"),
                "lb.toml:2:51: clusters.cache.outlier.max_ejection: must not be shorter than "
                "base_ejection (10s), got 5s"},
        Mistake{"MaxEjectedPercentZero", cluster("outlier = { max_ejected_percent = 0 }\n"),
                "lb.toml:2:35: clusters.cache.outlier.max_ejected_percent: must be >= 1, got 0"},
        Mistake{"PanicOverHundred", cluster("panic_threshold = 101\n"),
                "lb.toml:2:19: clusters.cache.panic_threshold: must be <= 100, got 101"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lb
