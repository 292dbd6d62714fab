// `lb hotkeys`' reading of the admin's /hotkeys JSON and its table, pinned as whole screens,
// and its command line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/cli/hotkeys/admin_client.h"
#include "lb/cli/hotkeys/hotkeys_cli.h"
#include "lb/cli/hotkeys/hotkeys_view.h"

namespace lb {
namespace {

// 2026-12-02T12:00:00Z.
constexpr int64_t kNoon = 1796212800;

const char kOneCluster[] = R"({"cluster": "cache", "window_s": 1, "floor_rps": 40.25,
  "keys": [
    {"key": "user:1", "hash_hex": "9f86d081884c7d65", "rps": 9876.5, "rps_lower": 9800.0,
     "share": 0.1895, "owner": "cache-a", "serving": ["cache-a", "cache-c"],
     "hot_since": "2026-12-02T11:59:18Z"},
    {"key": "img/\u001b[2J\\x", "hash_hex": "01", "rps": 500, "rps_lower": 450.5,
     "share": 0.0096, "owner": "cache-b", "serving": ["cache-b"], "hot_since": null}]})";

TEST(HotkeysViewTest, ReadsOneClusterAsTheDesignWritesIt) {
  std::string error;
  auto got = parseHotKeysReply(kOneCluster, &error);
  ASSERT_TRUE(got) << error;
  ASSERT_EQ(got->size(), 1u);
  const HotKeysCluster& c = got->front();
  EXPECT_EQ(c.cluster, "cache");
  EXPECT_DOUBLE_EQ(c.window_s, 1);
  EXPECT_DOUBLE_EQ(c.floor_rps, 40.25);
  ASSERT_EQ(c.keys.size(), 2u);
  EXPECT_EQ(c.keys[0].key, "user:1");
  EXPECT_EQ(c.keys[0].hash_hex, "9f86d081884c7d65");
  EXPECT_EQ(c.keys[0].serving, (std::vector<std::string>{"cache-a", "cache-c"}));
  EXPECT_EQ(c.keys[0].hot_since, kNoon - 42);
  EXPECT_EQ(c.keys[1].key, "img/\x1b[2J\\x");
  EXPECT_FALSE(c.keys[1].hot_since.has_value());
  // No total_rps in the design's answer: the first key's rate over its share.
  ASSERT_TRUE(c.total_rps.has_value());
  EXPECT_TRUE(c.total_estimated);
  EXPECT_NEAR(*c.total_rps, 9876.5 / 0.1895, 1e-6);
}

TEST(HotkeysViewTest, DrawsATopLikeTableWithEscapedKeysAndAges) {
  std::string error;
  auto got = parseHotKeysReply(kOneCluster, &error);
  ASSERT_TRUE(got) << error;
  HotKeysDrawOptions d;
  d.now = kNoon;
  EXPECT_EQ(drawHotKeys(*got, d),
            "cluster cache  total ~52118.7 rps  floor 40.2 rps  window 1s  keys 2\n"
            "  #  KEY                RPS   LOWER   SHARE  OWNER    SERVING          SINCE\n"
            "  1  user:1          9876.5  9800.0  18.95%  cache-a  cache-a,cache-c    42s\n"
            "  2  img/\\x1b[2J\\\\x   500.0   450.5   0.96%  cache-b  cache-b              -\n");
}

TEST(HotkeysViewTest, ATotalFromTheAdminIsShownAsIs) {
  std::string error;
  auto got = parseHotKeysReply(
      R"({"cluster": "c", "window_s": 2, "floor_rps": 1, "total_rps": 1000, "keys": []})",
      &error);
  ASSERT_TRUE(got) << error;
  EXPECT_EQ(drawHotKeys(*got, {}),
            "cluster c  total 1000.0 rps  floor 1.0 rps  window 2s  keys 0\n  no hot keys\n");
}

TEST(HotkeysViewTest, KeysAreCutToTheWidthAndNoLineIsLonger) {
  std::string json = R"({"cluster": "cache", "window_s": 1, "floor_rps": 1, "keys": [)";
  json += R"({"key": ")" + std::string(150, 'k') +
          R"(", "rps": 10, "rps_lower": 9, "share": 0.5, "owner": "a", "serving": ["a", "b",
             "c", "d", "e"]}]})";
  std::string error;
  auto got = parseHotKeysReply(json, &error);
  ASSERT_TRUE(got) << error;
  for (size_t width : {60u, 80u, 120u}) {
    HotKeysDrawOptions d;
    d.width = width;
    const std::string out = drawHotKeys(*got, d);
    size_t start = 0;
    while (start < out.size()) {
      const size_t end = out.find('\n', start);
      EXPECT_LE(end - start, width) << out;
      start = end + 1;
    }
    EXPECT_NE(out.find("kkk..."), std::string::npos) << out;
  }
}

TEST(HotkeysViewTest, MaxRowsSaysHowManyMore) {
  std::string error;
  auto got = parseHotKeysReply(kOneCluster, &error);
  ASSERT_TRUE(got) << error;
  HotKeysDrawOptions d;
  d.max_rows = 1;
  const std::string out = drawHotKeys(*got, d);
  EXPECT_NE(out.find("  1  user:1"), std::string::npos) << out;
  EXPECT_EQ(out.find("cache-b"), std::string::npos) << out;
  EXPECT_NE(out.find("... 1 more"), std::string::npos) << out;
}

TEST(HotkeysViewTest, ReadsEveryClusterOfTheAnswerWithoutACluster) {
  std::string error;
  auto got = parseHotKeysReply(
      R"({"clusters": [{"cluster": "a", "window_s": 1, "floor_rps": 1, "keys": []},
                       {"cluster": "b", "window_s": 1, "floor_rps": 2, "keys": []}]})",
      &error);
  ASSERT_TRUE(got) << error;
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[1].cluster, "b");
  EXPECT_EQ(drawHotKeys(*got, {}),
            "cluster a  total - rps  floor 1.0 rps  window 1s  keys 0\n  no hot keys\n\n"
            "cluster b  total - rps  floor 2.0 rps  window 1s  keys 0\n  no hot keys\n");
}

TEST(HotkeysViewTest, WhatIsNotTheExpectedJsonSaysWhere) {
  const std::pair<const char*, const char*> cases[] = {
      {"<html>", "not JSON"},
      {"[1]", "must be a JSON object, got array"},
      {R"({"window_s": 1, "floor_rps": 1, "keys": []})", "the reply: missing \"cluster\""},
      {R"({"cluster": "c", "window_s": "1s", "floor_rps": 1, "keys": []})",
       "the reply.\"window_s\": must be a number, got string"},
      {R"({"cluster": "c", "window_s": 1, "floor_rps": 1, "keys": {}})",
       "the reply.\"keys\": must be an array, got object"},
      {R"({"cluster": "c", "window_s": 1, "floor_rps": 1, "keys": [{"key": "k"}]})",
       "the reply.keys[0]: missing \"rps\""},
      {R"({"cluster": "c", "window_s": 1, "floor_rps": 1, "keys": [{"key": "k", "rps": 1,
          "rps_lower": 1, "share": 0.1, "owner": "a", "hot_since": "yesterday"}]})",
       "the reply.keys[0].\"hot_since\": 'yesterday' is not an RFC 3339 time"},
      {R"({"clusters": [{"cluster": 1}]})",
       "clusters[0].\"cluster\": must be a string, got number"},
  };
  for (const auto& [json, want] : cases) {
    std::string error;
    EXPECT_FALSE(parseHotKeysReply(json, &error)) << json;
    EXPECT_EQ(error, want) << json;
  }
}

TEST(HotkeysViewTest, Rfc3339) {
  EXPECT_EQ(parseRfc3339("2026-12-02T12:00:00Z"), kNoon);
  EXPECT_EQ(parseRfc3339("2026-12-02T12:00:00.250Z"), kNoon);
  EXPECT_EQ(parseRfc3339("2026-12-02T13:30:00+01:30"), kNoon);
  EXPECT_EQ(parseRfc3339("2026-12-02T10:00:00-02:00"), kNoon);
  EXPECT_EQ(parseRfc3339("1970-01-01T00:00:00Z"), 0);
  for (const char* bad : {"", "2026-12-02", "2026-13-02T12:00:00Z", "2026-12-02T12:00:00",
                          "2026-12-02T12:00:00Zjunk", "2026-12-02T25:00:00Z",
                          "2026-12-02T12:00:00."})
    EXPECT_FALSE(parseRfc3339(bad)) << bad;
}

TEST(HotkeysViewTest, AgesAndEscapes) {
  EXPECT_EQ(formatAge(std::nullopt, kNoon), "-");
  EXPECT_EQ(formatAge(kNoon - 5, kNoon), "5s");
  EXPECT_EQ(formatAge(kNoon - 185, kNoon), "3m05s");
  EXPECT_EQ(formatAge(kNoon - 7800, kNoon), "2h10m");
  EXPECT_EQ(formatAge(kNoon - 3 * 86400 - 4 * 3600, kNoon), "3d04h");
  EXPECT_EQ(formatAge(kNoon + 10, kNoon), "0s");   // a clock a little ahead is not negative
  EXPECT_EQ(escapeKey("a b:1"), "a b:1");
  EXPECT_EQ(escapeKey(std::string("\x1b[31m\x00\\\xff", 8)), "\\x1b[31m\\x00\\\\\\xff");
}

std::optional<HotkeysOptions> hotkeysArgs(std::vector<std::string> words, std::string* error) {
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return parseHotkeysArgs(argv, *error);
}

TEST(HotkeysArgsTest, ReadsEveryOption) {
  std::string error;
  auto o = hotkeysArgs({"--admin", "127.0.0.1:9901", "--cluster=web cache", "--interval",
                        "250ms", "--once"},
                       &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->admin, "127.0.0.1:9901");
  EXPECT_EQ(o->cluster, "web cache");
  EXPECT_EQ(o->interval, Duration{250});
  EXPECT_TRUE(o->once);
  EXPECT_EQ(hotkeysTarget(*o), "/hotkeys?cluster=web%20cache");
  o = hotkeysArgs({"--admin=[::1]:9901"}, &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->interval, Duration{1000});
  EXPECT_FALSE(o->once);
  EXPECT_EQ(hotkeysTarget(*o), "/hotkeys");
}

TEST(HotkeysArgsTest, UsageErrorsNameTheArgument) {
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{}, "--admin HOST:PORT is required (lb's admin.listen, e.g. 127.0.0.1:9901)"},
      {{"--admin"}, "--admin: missing value"},
      {{"--admin", "a:1", "--interval", "50ms"}, "--interval: must be at least 100ms, got '50ms'"},
      {{"--admin", "a:1", "--interval", "soon"},
       "--interval: 'soon' is not a duration (use e.g. 250ms, 2s, 1m)"},
      {{"--admin", "a:1", "--cluster="}, "--cluster: must not be empty (leave it out for every "
                                         "cluster)"},
      {{"--admin", "a:1", "--top"}, "unknown option '--top'"},
      {{"--admin", "a:1", "cache"}, "unexpected argument 'cache'"},
  };
  for (const auto& [words, want] : cases) {
    std::string error;
    EXPECT_FALSE(hotkeysArgs(words, &error));
    EXPECT_EQ(error, want);
  }
  std::string error;
  auto help = hotkeysArgs({"--help"}, &error);
  ASSERT_TRUE(help);
  EXPECT_TRUE(help->help);
}

}  // namespace
}  // namespace lb
