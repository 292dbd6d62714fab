// `lb analyze` on a cluster whose backends name zones, as an operator checks a zone rollout
// before applying it: each key's order shows each host's zone, the zone report counts the
// primaries the zone-aware order moved (none), and the same keys keep their owners whether
// the file names zones or not.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "tests/support/analyze_json_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lb {
namespace {

using testjson::Value;

test::CommandResult runAnalyze(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {test::builtBinary("lb"), "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::runCommand(argv, std::chrono::seconds(60));
}

// Six backends, two per zone a, b, c (or no zones), behind a redis listener.
std::string zonedToml(const std::string& selector, bool zones) {
  std::string out =
      "[listeners.r]\nlisten = \"127.0.0.1:16379\"\nprotocol = \"redis\"\ncluster = \"cache\"\n"
      "[clusters.cache]\nselector = \"" + selector + "\"\nreplicas = 2\nbackends = [\n";
  const char* zone[] = {"a", "a", "b", "b", "c", "c"};
  for (int i = 0; i < 6; ++i)
    out += "  { name = \"cache-" + std::to_string(i) + "\", address = \"127.0.0.1:" +
           std::to_string(9001 + i) + "\"" +
           (zones ? std::string(", zone = \"") + zone[i] + "\"" : "") + " },\n";
  return out + "]\n";
}

class AnalyzeZonesTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  test::TempDir dir_{"analyze_zones"};
};

TEST_F(AnalyzeZonesTest, TheReportCountsNoPrimaryMovedAndReplicasInDistinctZones) {
  for (const std::string selector : {"ring_hash", "maglev", "rendezvous"}) {
    const std::string path = dir_.write(selector + ".toml", zonedToml(selector, true));
    const auto r = runAnalyze({"--config", path, "--cluster", "cache"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto v = testjson::parse(r.out);
    ASSERT_TRUE(v) << r.out;
    EXPECT_EQ((*v)["primaries_moved"].number, 0) << selector;
    EXPECT_EQ((*v)["keys"].number, 100000);
    EXPECT_EQ((*v)["zones"]["a"].number, 2);
    EXPECT_EQ((*v)["distinct_zones"]["zone_order"].number, 1.0) << selector;
    // The selector's own order puts both copies in one zone for about one key in five.
    EXPECT_LT((*v)["distinct_zones"]["selector_order"].number, 0.9) << selector;
  }
}

TEST_F(AnalyzeZonesTest, EachKeysOrderShowsItsZonesAndKeepsItsOwner) {
  const std::string zoned = dir_.write("zoned.toml", zonedToml("ring_hash", true));
  const std::string plain = dir_.write("plain.toml", zonedToml("ring_hash", false));
  std::vector<std::string> args;
  for (int i = 0; i < 50; ++i) args.insert(args.end(), {"--key", "user:" + std::to_string(i)});
  auto with = args, without = args;
  with.insert(with.begin(), {"--config", zoned, "--cluster", "cache"});
  without.insert(without.begin(), {"--config", plain, "--cluster", "cache"});
  const auto a = runAnalyze(with), b = runAnalyze(without);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  size_t start_a = 0, start_b = 0;
  for (int i = 0; i < 50; ++i) {
    const size_t end_a = a.out.find('\n', start_a), end_b = b.out.find('\n', start_b);
    const auto la = testjson::parse(a.out.substr(start_a, end_a - start_a));
    const auto lb = testjson::parse(b.out.substr(start_b, end_b - start_b));
    start_a = end_a + 1;
    start_b = end_b + 1;
    ASSERT_TRUE(la && lb);
    ASSERT_EQ((*la)["order"].items.size(), 6u);
    ASSERT_EQ((*la)["zones"].items.size(), 6u);
    EXPECT_TRUE((*lb)["zones"].items.empty());   // no zones written, none shown
    EXPECT_EQ((*la)["order"].items[0].text, (*lb)["order"].items[0].text);
    std::set<std::string> first3;
    for (int k = 0; k < 3; ++k) first3.insert((*la)["zones"].items[k].text);
    EXPECT_EQ(first3.size(), 3u);
  }
}

}  // namespace
}  // namespace lb
