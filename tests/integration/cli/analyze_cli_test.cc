// `lb analyze` as a user runs it: the real build/lb binary (next to this test's own binary),
// its JSON parsed, its exit codes checked. The selector figures asserted here are the
// properties docs/analyze.md promises: mod_n remaps almost everything, the consistent selectors
// move only the changed host's keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lb/core/hash.h"
#include "plugins/builtin.h"
#include "tests/support/analyze_json_test_util.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lb {
namespace {

using testjson::Value;

// Runs `lb analyze ARGS...` to completion. The deadline is generous for ASan on a shared
// 2-core machine; a normal run takes well under a second.
test::CommandResult runAnalyze(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {test::builtBinary("lb"), "analyze"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::runCommand(argv, std::chrono::seconds(60));
}

// The object of `selector` in lb analyze's JSON array, or a null Value.
const Value& entry(const Value& doc, const std::string& selector) {
  static const Value kMissing;
  for (const auto& item : doc.items)
    if (item["selector"].text == selector) return item;
  return kMissing;
}

class AnalyzeCliTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  std::string writeFile(const std::string& name, const std::string& text) {
    return dir_.write(name, text);
  }

  test::TempDir dir_{"analyze_cli"};
};

// A config with one listener and one cluster, `cache`, of the given selector and backends.
std::string clusterToml(const std::string& selector, const std::string& backends) {
  return "[listeners.web]\n"
         "listen = \"127.0.0.1:18080\"\n"
         "cluster = \"cache\"\n"
         "hash = [ { header = \"x-cache-key\" } ]\n"
         "\n"
         "[clusters.cache]\n"
         "selector = \"" + selector + "\"\n"
         "backends = [\n" + backends + "]\n";
}

// Backends cache-a.. with the given weights (1 is left implicit). hash_key is the address,
// which every selector accepts (ketama requires nginx's host:port form).
std::string backendsToml(const std::vector<std::string>& names, const std::vector<int>& weights) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string addr = "127.0.0.1:" + std::to_string(9001 + i);
    out += "  { name = \"" + names[i] + "\", address = \"" + addr + "\", hash_key = \"" +
           addr + "\"" + (weights[i] != 1 ? ", weight = " + std::to_string(weights[i]) : "") +
           " },\n";
  }
  return out;
}

const std::vector<std::string> kNames = {"cache-a", "cache-b", "cache-c", "cache-d", "cache-e"};

// Every line of --config output, parsed; fails the test on a line that is not JSON.
std::vector<Value> jsonLines(const std::string& out) {
  std::vector<Value> lines;
  size_t start = 0;
  while (start < out.size()) {
    const size_t end = out.find('\n', start);
    const std::string line = out.substr(start, end - start);
    auto v = testjson::parse(line);
    EXPECT_TRUE(v) << "not JSON: " << line;
    if (v) lines.push_back(std::move(*v));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> orderOf(const Value& line) {
  std::vector<std::string> order;
  for (const auto& item : line["order"].items) order.push_back(item.text);
  return order;
}

TEST_F(AnalyzeCliTest, ModNMovesFourFifthsOfTheKeysGoingFromFourToFive) {
  const auto r = runAnalyze({"--selector", "mod_n", "--backends", "4", "--keys", "100000",
                            "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  const Value& m = entry(*doc, "mod_n");
  EXPECT_NEAR(m["add"]["moved"].number, 0.8, 0.02);
  EXPECT_NEAR(m["remove"]["moved"].number, 0.75, 0.02);
  EXPECT_EQ(m["add"]["ideal"].text, "0.2000");
  EXPECT_EQ(m["remove"]["backend"].text, "b3");
  EXPECT_EQ(m["add"]["backend"].text, "b4");
}

TEST_F(AnalyzeCliTest, HelpPrintsUsageAndSucceeds) {
  const auto r = runAnalyze({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: lb analyze"), std::string::npos) << r.out;
}

TEST_F(AnalyzeCliTest, UnknownSelectorExitsTwoNamingIt) {
  const auto r = runAnalyze({"--selector", "nosuch"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown selector 'nosuch'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(AnalyzeCliTest, BadNumberExitsTwoWithUsage) {
  const auto r = runAnalyze({"--backends", "four"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--backends"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage:"), std::string::npos) << r.err;
}

TEST_F(AnalyzeCliTest, UnreadableConfigExitsOneWithTheLoadersError) {
  const auto r = runAnalyze({"--config", dir_.path() + "/missing.toml", "--cluster", "cache", "--key",
                            "k"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.toml"), std::string::npos) << r.err;
}

TEST_F(AnalyzeCliTest, AllListsTheBaselineFirstThenEveryRegisteredSelector) {
  const auto r = runAnalyze({"--selector", "all", "--backends", "4", "--keys", "100000",
                             "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  std::vector<std::string> got;
  for (const auto& item : doc->items) got.push_back(item["selector"].text);
  std::vector<std::string> want = {"mod_n"};
  for (const auto& s : allSelectors()) want.emplace_back(s.name);
  EXPECT_EQ(got, want);
  for (const std::string name :
       {"ring_hash", "maglev", "rendezvous", "jump", "ketama", "twemproxy"})
    EXPECT_TRUE(entry(*doc, name).get("selector")) << name << " missing";
}

TEST_F(AnalyzeCliTest, ConsistentSelectorsMoveOnlyTheChangedHostsKeys) {
  const auto r = runAnalyze({"--selector", "all", "--backends", "4", "--keys", "100000",
                             "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  // The rings place a host by its own points, rendezvous by its own scores, jump only ever
  // moves keys to (or from) the last bucket: none moves a key between two staying hosts.
  // (twemproxy too, with equal weights: each server keeps its 160 points.)
  for (const std::string name : {"ring_hash", "rendezvous", "ketama", "jump", "twemproxy"}) {
    const Value& e = entry(*doc, name);
    EXPECT_EQ(e["remove"]["collateral"].text, "0.0000") << name;
    EXPECT_EQ(e["add"]["collateral"].text, "0.0000") << name;
  }
  const Value& ring = entry(*doc, "ring_hash");
  EXPECT_GE(ring["add"]["moved"].number, 0.15);
  EXPECT_LE(ring["add"]["moved"].number, 0.25);
  // mod_n, by contrast, remaps about 4 keys in 5.
  EXPECT_NEAR(entry(*doc, "mod_n")["add"]["moved"].number, 0.8, 0.02);
}

TEST_F(AnalyzeCliTest, SharesOfEverySelectorSumToOne) {
  const auto r = runAnalyze({"--backends", "5", "--keys", "20000", "--weights", "1,1,2,1,3",
                             "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  ASSERT_FALSE(doc->items.empty());
  for (const auto& item : doc->items) {
    double sum = 0;
    for (const auto& [backend, share] : item["balance"]["shares"].members) sum += share.number;
    EXPECT_NEAR(sum, 1.0, 0.001) << item["selector"].text;   // 5 shares rounded to 4 places
    EXPECT_EQ(item["remove"]["ideal"].text, "0.3750") << item["selector"].text;   // 3 of 8
    EXPECT_EQ(item["add"]["ideal"].text, "0.1111") << item["selector"].text;      // 1 of 9
  }
}

TEST_F(AnalyzeCliTest, TextFormatPrintsOneRowPerSelector) {
  const auto r = runAnalyze({"--keys", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmod_n "), std::string::npos) << r.out;
  for (const auto& s : allSelectors())
    EXPECT_NE(r.out.find("\n" + std::string(s.name) + " "), std::string::npos) << r.out;
}

TEST_F(AnalyzeCliTest, PreferenceOrderHoldsEveryBackendOnceForEverySelector) {
  for (const auto& s : allSelectors()) {
    // jump has no weights; the others get one host of weight 2.
    const std::vector<int> weights =
        s.name == "jump" ? std::vector<int>{1, 1, 1, 1} : std::vector<int>{1, 2, 1, 1};
    const std::vector<std::string> names(kNames.begin(), kNames.begin() + 4);
    const std::string path = writeFile(std::string(s.name) + ".toml",
                                       clusterToml(std::string(s.name), backendsToml(names, weights)));
    std::vector<std::string> args = {"--config", path, "--cluster", "cache"};
    for (int i = 0; i < 20; ++i) args.insert(args.end(), {"--key", "user:" + std::to_string(i)});
    const auto r = runAnalyze(args);
    ASSERT_EQ(r.exit_code, 0) << s.name << ": " << r.err;
    const auto lines = jsonLines(r.out);
    ASSERT_EQ(lines.size(), 20u) << r.out;
    for (int i = 0; i < 20; ++i) {
      const std::string key = "user:" + std::to_string(i);
      EXPECT_EQ(lines[i]["key"].text, key);
      // The hash is the selector's key hash of the key bytes: XXH64, or CRC32 for ketama.
      EXPECT_EQ(lines[i]["hash"].text, std::to_string(hashKeyBytes(s.key_hash, key))) << s.name;
      auto order = orderOf(lines[i]);
      std::sort(order.begin(), order.end());
      EXPECT_EQ(order, names) << s.name << " " << key;
    }
  }
}

TEST_F(AnalyzeCliTest, RemovingTheFirstHostInTheOrderHandsTheKeyToTheSecond) {
  // order[0] is the owner: take it out of the file and the key goes to order[1], and the
  // rest of the walk keeps its order (ring_hash and rendezvous only ever drop the removed
  // host from a key's preference list).
  for (const std::string selector : {"ring_hash", "rendezvous"}) {
    const std::vector<int> ones(5, 1);
    const std::string full = writeFile(selector + "_full.toml",
                                       clusterToml(selector, backendsToml(kNames, ones)));
    const auto before = runAnalyze({"--config", full, "--cluster", "cache", "--key", "user:7"});
    ASSERT_EQ(before.exit_code, 0) << before.err;
    const auto lines = jsonLines(before.out);
    ASSERT_EQ(lines.size(), 1u);
    std::vector<std::string> order = orderOf(lines[0]);
    ASSERT_EQ(order.size(), 5u);

    // Same backends (same hash_keys) minus the owner.
    std::string rest;
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (kNames[i] == order[0]) continue;
      const std::string addr = "127.0.0.1:" + std::to_string(9001 + i);
      rest += "  { name = \"" + kNames[i] + "\", address = \"" + addr + "\", hash_key = \"" +
              addr + "\" },\n";
    }
    const std::string shrunk = writeFile(selector + "_shrunk.toml", clusterToml(selector, rest));
    const auto after = runAnalyze({"--config", shrunk, "--cluster", "cache", "--key", "user:7"});
    ASSERT_EQ(after.exit_code, 0) << after.err;
    const auto after_lines = jsonLines(after.out);
    ASSERT_EQ(after_lines.size(), 1u);
    order.erase(order.begin());
    EXPECT_EQ(orderOf(after_lines[0]), order) << selector;
  }
}

TEST_F(AnalyzeCliTest, SameConfigAndKeysGiveTheSameOutputInTwoProcesses) {
  const std::string path =
      writeFile("twice.toml", clusterToml("maglev", backendsToml(kNames, {1, 1, 2, 1, 1})));
  const std::vector<std::string> args = {"--config", path, "--cluster", "cache",
                                         "--key", "a", "--key", "b", "--key", "c"};
  const auto first = runAnalyze(args);
  const auto second = runAnalyze(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_FALSE(first.out.empty());
  EXPECT_EQ(first.out, second.out);
}

TEST_F(AnalyzeCliTest, KeysNeedingEscapesStillYieldJsonThatRoundTrips) {
  const std::string path =
      writeFile("escape.toml", clusterToml("ring_hash", backendsToml(kNames, {1, 1, 1, 1, 1})));
  const std::string odd = "say \"hi\"\\\t caf\xc3\xa9";
  const auto r = runAnalyze({"--config", path, "--cluster", "cache", "--key", odd});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = jsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["key"].text, odd);
}

TEST_F(AnalyzeCliTest, UnknownClusterExitsTwoNamingTheKnownOnes) {
  const std::string path =
      writeFile("c.toml", clusterToml("ring_hash", backendsToml(kNames, {1, 1, 1, 1, 1})));
  const auto r = runAnalyze({"--config", path, "--cluster", "nope", "--key", "k"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no cluster 'nope' (clusters: cache)"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(AnalyzeCliTest, ConfigErrorsExitOneWithEveryErrorAndItsPosition) {
  const std::string path = writeFile(
      "bad.toml", clusterToml("maglevv", "  { name = \"a\", address = \"127.0.0.1:1\", "
                                         "weight = 0 },\n"));
  const auto r = runAnalyze({"--config", path, "--cluster", "cache", "--key", "k"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(path + ":7:12: clusters.cache.selector"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("clusters.cache.backends[0].weight: must be >= 1, got 0"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace lb
