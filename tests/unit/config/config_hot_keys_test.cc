// A cluster's `hot_keys` table: what it reads, its defaults, the keys of the design that are
// refused until they are built, and every mistake reported at its position with its key path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/config.h"

namespace lb {
namespace {

std::vector<std::string> hotKeysErrorsOf(const std::string& toml) {
  auto r = loadConfigString(toml, "lb.toml");
  std::vector<std::string> got;
  if (!r.ok())
    for (const auto& e : r.errors()) got.push_back(e.format());
  return got;
}

std::string clusterWith(const std::string& hot_keys_line) {
  return "[clusters.cache]\n" + hot_keys_line +
         "\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
}

TEST(ConfigHotKeysTest, ReadsThresholdAndHold) {
  auto r = loadConfigString(clusterWith("hot_keys = { threshold = 0.05, hold = \"1m30s\" }"),
                            "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const HotKeysConfig& h = r.value().clusters.at(0).hot_keys;
  EXPECT_DOUBLE_EQ(h.threshold, 0.05);
  EXPECT_EQ(h.hold, Duration{90000});
  EXPECT_EQ(h.pos.line, 2u);
  EXPECT_EQ(h.pos.column, 12u);
}

TEST(ConfigHotKeysTest, AsATableSectionToo) {
  auto r = loadConfigString(
      "[clusters.cache]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n"
      "[clusters.cache.hot_keys]\nthreshold = 1\nhold = \"1s\"\n",
      "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const HotKeysConfig& h = r.value().clusters.at(0).hot_keys;
  EXPECT_DOUBLE_EQ(h.threshold, 1.0);   // an integer 1 is the largest share
  EXPECT_EQ(h.hold, Duration{1000});
}

// Detection is always on: without the table, or with an empty one, the defaults apply.
TEST(ConfigHotKeysTest, DefaultsWithoutTheTableOrWithAnEmptyOne) {
  for (const char* line : {"", "hot_keys = {}", "hot_keys = { threshold = 0.3 }"}) {
    auto r = loadConfigString(clusterWith(line), "lb.toml");
    ASSERT_TRUE(r.ok()) << line << ": " << r.errors().front().format();
    const HotKeysConfig& h = r.value().clusters.at(0).hot_keys;
    EXPECT_DOUBLE_EQ(h.threshold, std::string(line).find("0.3") != std::string::npos ? 0.3
                                                                                      : 0.02)
        << line;
    EXPECT_EQ(h.hold, Duration{10000}) << line;
  }
}

// spread: off unless written; 0 is off written out; 2 and 16 are its ends.
TEST(ConfigHotKeysTest, ReadsSpreadOffByDefault) {
  const std::pair<const char*, uint32_t> cases[] = {
      {"", 0},
      {"hot_keys = { threshold = 0.05 }", 0},
      {"hot_keys = { spread = 0 }", 0},
      {"hot_keys = { spread = 2 }", 2},
      {"hot_keys = { threshold = 0.02, hold = \"10s\", spread = 3 }", 3},
      {"hot_keys = { spread = 16 }", 16},
  };
  for (const auto& [line, want] : cases) {
    auto r = loadConfigString(clusterWith(line), "lb.toml");
    ASSERT_TRUE(r.ok()) << line << ": " << r.errors().front().format();
    EXPECT_EQ(r.value().clusters.at(0).hot_keys.spread, want) << line;
  }
}

// spread acts on HTTP only: a cluster that only a redis listener serves refuses it; one an
// HTTP listener serves too, or none yet, takes it.
TEST(ConfigHotKeysTest, SpreadNeedsAnHttpListener) {
  const std::string cluster =
      "[clusters.cache]\nhot_keys = { spread = 3 }\n"
      "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
  const std::string redis =
      "[listeners.r]\nlisten = \"127.0.0.1:6380\"\nprotocol = \"redis\"\ncluster = "
      "\"cache\"\n";
  const std::string http = "[listeners.h]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n";
  EXPECT_EQ(hotKeysErrorsOf(cluster + redis),
            std::vector<std::string>{
                "lb.toml:2:23: clusters.cache.hot_keys.spread: applies only to HTTP listeners "
                "(GET and HEAD of a hot key), and no listener of this cluster is one (listener "
                "'r' has protocol = \"redis\")"});
  EXPECT_EQ(hotKeysErrorsOf(cluster + redis + http), std::vector<std::string>{});
  EXPECT_EQ(hotKeysErrorsOf(cluster), std::vector<std::string>{});
}

struct HotKeysMistake {
  const char* name;
  const char* table;   // the text after "hot_keys = "
  const char* error;   // the one error expected, formatted
};

std::ostream& operator<<(std::ostream& os, const HotKeysMistake& m) { return os << m.name; }

// Line 2 of cluster "cache"; columns count from "hot_keys = " (11 characters).
const HotKeysMistake kHotKeysMistakes[] = {
    {"ThresholdZero", "{ threshold = 0.0 }",
     "lb.toml:2:26: clusters.cache.hot_keys.threshold: must be in (0, 1] (a share of the "
     "cluster's requests, e.g. 0.02 for 2%), got 0"},
    {"ThresholdNegative", "{ threshold = -0.1 }",
     "lb.toml:2:26: clusters.cache.hot_keys.threshold: must be in (0, 1] (a share of the "
     "cluster's requests, e.g. 0.02 for 2%), got -0.1"},
    {"ThresholdOverOne", "{ threshold = 2 }",
     "lb.toml:2:26: clusters.cache.hot_keys.threshold: must be in (0, 1] (a share of the "
     "cluster's requests, e.g. 0.02 for 2%), got 2"},
    {"ThresholdNaN", "{ threshold = nan }",
     "lb.toml:2:26: clusters.cache.hot_keys.threshold: must be in (0, 1] (a share of the "
     "cluster's requests, e.g. 0.02 for 2%), got nan"},
    {"ThresholdAString", "{ threshold = \"2%\" }",
     "lb.toml:2:26: clusters.cache.hot_keys.threshold: must be a number in (0, 1] (a share of "
     "the cluster's requests, e.g. 0.02), got string"},
    {"HoldUnderASecond", "{ hold = \"500ms\" }",
     "lb.toml:2:21: clusters.cache.hot_keys.hold: must be at least 1s, got '500ms'"},
    {"HoldNotADuration", "{ hold = \"long\" }",
     "lb.toml:2:21: clusters.cache.hot_keys.hold: 'long' is not a duration (use e.g. 250ms, "
     "2s, 1m)"},
    {"HoldANumber", "{ hold = 10 }",
     "lb.toml:2:21: clusters.cache.hot_keys.hold: must be a duration string such as \"2s\", "
     "got integer"},
    {"SpreadOne", "{ threshold = 0.02, spread = 1 }",
     "lb.toml:2:41: clusters.cache.hot_keys.spread: must be 0 (off) or 2 to 16 (hosts a hot "
     "key's GET and HEAD requests spread over), got 1"},
    {"SpreadSeventeen", "{ spread = 17 }",
     "lb.toml:2:23: clusters.cache.hot_keys.spread: must be 0 (off) or 2 to 16 (hosts a hot "
     "key's GET and HEAD requests spread over), got 17"},
    {"SpreadNegative", "{ spread = -3 }",
     "lb.toml:2:23: clusters.cache.hot_keys.spread: must be 0 (off) or 2 to 16 (hosts a hot "
     "key's GET and HEAD requests spread over), got -3"},
    {"SpreadAString", "{ spread = \"3\" }",
     "lb.toml:2:23: clusters.cache.hot_keys.spread: must be an integer, 0 (off) or 2 to 16 "
     "(hosts a hot key's GET and HEAD requests spread over), got string"},
    {"SpreadAFloat", "{ spread = 3.0 }",
     "lb.toml:2:23: clusters.cache.hot_keys.spread: must be an integer, 0 (off) or 2 to 16 "
     "(hosts a hot key's GET and HEAD requests spread over), got float"},
    {"NearCacheItemsZero", "{ near_cache = { items = 0 } }",
     "lb.toml:2:37: clusters.cache.hot_keys.near_cache.items: must be >= 1, got 0"},
    {"NearCacheBytesUnit", "{ near_cache = { bytes = \"64MB\" } }",
     "lb.toml:2:37: clusters.cache.hot_keys.near_cache.bytes: must be a size such as \"64MiB\" "
     "(B, KiB, MiB, GiB) or a number of bytes, got '64MB'"},
    {"NearCacheBytesTooFew", "{ near_cache = { bytes = 100 } }",
     "lb.toml:2:37: clusters.cache.hot_keys.near_cache.bytes: must be from 1KiB to 64GiB (per "
     "worker), got 100 bytes"},
    {"NearCacheTtlTooLong", "{ near_cache = { ttl = \"2m\" } }",
     "lb.toml:2:35: clusters.cache.hot_keys.near_cache.ttl: must be at most 1m (the near "
     "cache's staleness bound for writes lb does not see), got 120000ms"},
    {"NearCacheUnknownKey", "{ near_cache = { item = 10 } }",
     "lb.toml:2:29: clusters.cache.hot_keys.near_cache: unknown key 'item' (did you mean "
     "'items'?)"},
    {"UnknownKey", "{ treshold = 0.1 }",
     "lb.toml:2:14: clusters.cache.hot_keys: unknown key 'treshold' (did you mean "
     "'threshold'?)"},
    {"NotATable", "0.02",
     "lb.toml:2:12: clusters.cache.hot_keys: must be a table, got float"},
};

class ConfigHotKeysMistakeTest : public testing::TestWithParam<HotKeysMistake> {};

TEST_P(ConfigHotKeysMistakeTest, IsReportedAloneWithPositionPathAndMessage) {
  const std::string toml = clusterWith(std::string("hot_keys = ") + GetParam().table);
  EXPECT_EQ(hotKeysErrorsOf(toml), std::vector<std::string>{GetParam().error}) << toml;
}

INSTANTIATE_TEST_SUITE_P(Mistakes, ConfigHotKeysMistakeTest, testing::ValuesIn(kHotKeysMistakes),
                         [](const testing::TestParamInfo<HotKeysMistake>& info) {
                           return std::string(info.param.name);
                         });

TEST(ConfigHotKeysTest, ReadsNearCache) {
  auto r = loadConfigString(
      clusterWith("hot_keys = { near_cache = { items = 64, bytes = \"2MiB\", ttl = \"250ms\" } }"),
      "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  const HotKeysConfig& h = r.value().clusters.at(0).hot_keys;
  ASSERT_TRUE(h.near_cache.has_value());
  EXPECT_EQ(h.near_cache->items, 64u);
  EXPECT_EQ(h.near_cache->bytes, uint64_t{2} << 20);
  EXPECT_EQ(h.near_cache->ttl, Duration{250});
}

TEST(ConfigHotKeysTest, NearCacheDefaultsAndOff) {
  auto on = loadConfigString(clusterWith("hot_keys = { near_cache = {} }"), "lb.toml");
  ASSERT_TRUE(on.ok()) << on.errors().front().format();
  const auto& c = on.value().clusters.at(0).hot_keys.near_cache;
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->items, 1024u);
  EXPECT_EQ(c->bytes, uint64_t{64} << 20);
  EXPECT_EQ(c->ttl, Duration{1000});
  auto bytes = loadConfigString(clusterWith("hot_keys = { near_cache = { bytes = 4096 } }"),
                                "lb.toml");
  ASSERT_TRUE(bytes.ok()) << bytes.errors().front().format();
  EXPECT_EQ(bytes.value().clusters.at(0).hot_keys.near_cache->bytes, 4096u);
  auto off = loadConfigString(clusterWith("hot_keys = { threshold = 0.1 }"), "lb.toml");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off.value().clusters.at(0).hot_keys.near_cache.has_value());
}

// The near cache answers redis and memcached reads: on a cluster an HTTP listener uses it
// would do nothing, so it is refused there and accepted behind a redis listener.
TEST(ConfigHotKeysTest, NearCacheOnlyBehindCacheListeners) {
  const std::string cluster =
      "[clusters.cache]\nhot_keys = { near_cache = { items = 8 } }\n"
      "backends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n";
  EXPECT_EQ(hotKeysErrorsOf("[listeners.web]\nlisten = \"127.0.0.1:8080\"\ncluster = \"cache\"\n" +
                            cluster),
            std::vector<std::string>{
                "lb.toml:5:27: clusters.cache.hot_keys.near_cache: the near cache serves redis "
                "and memcached reads only, and listener 'web' (http) sends this cluster its "
                "requests; remove it or give that listener a cluster of its own"});
  EXPECT_EQ(hotKeysErrorsOf("[listeners.kv]\nlisten = \"127.0.0.1:6380\"\nprotocol = \"redis\"\n"
                            "cluster = \"cache\"\n" + cluster),
            std::vector<std::string>{});
}

// Every problem of the table at once, in file order, as with every other table.
TEST(ConfigHotKeysTest, ReportsEveryProblemAtOnce) {
  EXPECT_EQ(hotKeysErrorsOf(clusterWith(
                "hot_keys = { threshold = 0, hold = \"0s\", spread = 1, colour = 1 }")),
            (std::vector<std::string>{
                "lb.toml:2:26: clusters.cache.hot_keys.threshold: must be in (0, 1] (a share of "
                "the cluster's requests, e.g. 0.02 for 2%), got 0",
                "lb.toml:2:36: clusters.cache.hot_keys.hold: must be at least 1s, got '0s'",
                "lb.toml:2:51: clusters.cache.hot_keys.spread: must be 0 (off) or 2 to 16 "
                "(hosts a hot key's GET and HEAD requests spread over), got 1",
                "lb.toml:2:54: clusters.cache.hot_keys: unknown key 'colour'"}));
}

}  // namespace
}  // namespace lb
