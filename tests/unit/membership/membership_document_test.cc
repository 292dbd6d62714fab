// The membership document (lb/membership/document.h): every mistake reported at its exact
// line:column and key path, with the TOML loader's own messages; the position index behind
// those positions; the canonical JSON; and the max_remove_percent rule at its edges.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/membership/document.h"
#include "lb/membership/json_positions.h"

namespace lb {
namespace {

ClusterConfig clusterWith(const std::string& selector) {
  ClusterConfig c;
  c.name = "cache";
  c.selector = selector;
  return c;
}

std::vector<std::string> errorsOf(const std::string& text,
                                  const ClusterConfig& cluster = clusterWith("ring_hash")) {
  std::vector<std::string> out;
  auto doc = parseMembershipDocument(text, "m.json", cluster);
  if (doc.ok()) return out;
  for (const auto& e : doc.errors()) out.push_back(e.format());
  return out;
}

using Errs = std::vector<std::string>;

// --- parsing -------------------------------------------------------------------------------

TEST(MembershipDocument, ReadsBackendsInOrderWithTomlDefaults) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
      "  {\"name\": \"b\", \"address\": \"cache-b.internal:9002\", \"weight\": 3, "
      "\"hash_key\": \"bee\"}\n"
      "]}\n";
  auto doc = parseMembershipDocument(text, "m.json", clusterWith("ring_hash"));
  ASSERT_TRUE(doc.ok()) << doc.errors()[0].format();
  ASSERT_EQ(doc->backends.size(), 2u);
  EXPECT_EQ(doc->backends[0].name, "a");
  EXPECT_EQ(doc->backends[0].address, "127.0.0.1:9001");
  EXPECT_EQ(doc->backends[0].weight, 1u);
  EXPECT_EQ(doc->backends[0].hash_key, "");
  EXPECT_EQ(doc->backends[0].pos.line, 2u);
  EXPECT_EQ(doc->backends[0].pos.column, 3u);
  EXPECT_EQ(doc->backends[1].address, "cache-b.internal:9002");   // names allowed, as in TOML
  EXPECT_EQ(doc->backends[1].weight, 3u);
  EXPECT_EQ(doc->backends[1].hash_key, "bee");
}

TEST(MembershipDocument, SyntaxErrorAtTheOffendingCharacter) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\",, \"address\": \"127.0.0.1:9001\"}\n"
      "]}\n";
  const Errs errs = errorsOf(text);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].substr(0, 12), "m.json:2:16:");
  EXPECT_NE(errs[0].find("unexpected ','"), std::string::npos) << errs[0];
  EXPECT_EQ(errs[0].find("json.exception"), std::string::npos) << errs[0];
}

TEST(MembershipDocument, EmptyTextIsASyntaxError) {
  const Errs errs = errorsOf("");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].substr(0, 11), "m.json:1:1:") << errs[0];
}

TEST(MembershipDocument, TopLevelMustBeAnObject) {
  EXPECT_EQ(errorsOf("[1, 2]\n"),
            Errs{"m.json:1:1: must be an object such as {\"backends\": [...]}, got array"});
}

TEST(MembershipDocument, MissingBackendsKeyAtTheObjectAndTheStrangerNamed) {
  EXPECT_EQ(errorsOf("  {\"servers\": []}\n"),
            (Errs{"m.json:1:3: missing required key 'backends'",
                  "m.json:1:4: unknown key 'servers'"}));
}

TEST(MembershipDocument, BackendsMustBeAnArray) {
  EXPECT_EQ(errorsOf("{\"backends\": {\"name\": \"a\"}}\n"),
            Errs{"m.json:1:14: backends: must be an array, got object"});
}

TEST(MembershipDocument, EmptyListListsNoBackends) {
  EXPECT_EQ(errorsOf("{\"backends\": []}\n"), Errs{"m.json:1:14: backends: lists no backends"});
}

TEST(MembershipDocument, EntryMustBeAnObject) {
  EXPECT_EQ(errorsOf("{\"backends\": [\"a\"]}\n"),
            Errs{"m.json:1:15: backends[0]: must be an object such as {\"name\": \"cache-a\", "
                 "\"address\": \"127.0.0.1:9001\"}, got string"});
}

TEST(MembershipDocument, UnknownKeyAtTheKeyWithDidYouMean) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\", \"wieght\": 2}\n"
      "]}\n";
  EXPECT_EQ(errorsOf(text),
            Errs{"m.json:2:46: backends[0]: unknown key 'wieght' (did you mean 'weight'?)"});
}

TEST(MembershipDocument, UnknownTopLevelKey) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}], "
                     "\"version\": 2}\n"),
            Errs{"m.json:1:60: unknown key 'version'"});
}

TEST(MembershipDocument, MissingNameAndAddressAtTheObject) {
  EXPECT_EQ(errorsOf("{\"backends\": [\n  {\"weight\": 2}\n]}\n"),
            (Errs{"m.json:2:3: backends[0]: missing required key 'name'",
                  "m.json:2:3: backends[0]: missing required key 'address'"}));
}

TEST(MembershipDocument, NameMustBeAString) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": 7, \"address\": \"127.0.0.1:9001\"}]}\n"),
            Errs{"m.json:1:24: backends[0].name: must be a string, got integer"});
}

TEST(MembershipDocument, NameMustBePlain) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a b\", \"address\": \"127.0.0.1:9001\"}]}\n"),
            Errs{"m.json:1:24: backends[0].name: 'a b' is not a valid backend name (use "
                 "letters, digits, '_', '-', '.' and ':', at most 64)"});
}

TEST(MembershipDocument, AddressNeedsAPort) {
  EXPECT_EQ(errorsOf("{\"backends\": [\n  {\"name\": \"a\", \"address\": \"127.0.0.1\"}\n]}\n"),
            Errs{"m.json:2:28: backends[0].address: '127.0.0.1' has no port (use host:port, "
                 "e.g. 127.0.0.1:9001 or [::1]:9001)"});
}

TEST(MembershipDocument, WeightZeroIsAnError) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
      "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\", \"weight\": 0}\n"
      "]}\n";
  EXPECT_EQ(errorsOf(text), Errs{"m.json:3:56: backends[1].weight: must be >= 1, got 0"});
}

TEST(MembershipDocument, WeightAboveTheTomlLimit) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"weight\": 1001}]}\n"),
            Errs{"m.json:1:68: backends[0].weight: must be <= 1000, got 1001"});
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"weight\": 18446744073709551615}]}\n"),
            Errs{"m.json:1:68: backends[0].weight: must be <= 1000, got 18446744073709551615"});
}

TEST(MembershipDocument, WeightMustBeAnInteger) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"weight\": 1.5}]}\n"),
            Errs{"m.json:1:68: backends[0].weight: must be an integer, got float"});
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"weight\": \"2\"}]}\n"),
            Errs{"m.json:1:68: backends[0].weight: must be an integer, got string"});
}

TEST(MembershipDocument, HashKeyMustNotBeEmpty) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"hash_key\": \"\"}]}\n"),
            Errs{"m.json:1:70: backends[0].hash_key: must not be empty (leave it out to use "
                 "the name)"});
}

TEST(MembershipDocument, DuplicateName) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9002\"}\n"
      "]}\n";
  EXPECT_EQ(errorsOf(text),
            Errs{"m.json:3:12: backends[1].name: backend name 'a' is already used by "
                 "backends[0]"});
}

TEST(MembershipDocument, DuplicateHashKeyAgainstADefaultedOne) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
      "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\", \"hash_key\": \"a\"}\n"
      "]}\n";
  EXPECT_EQ(errorsOf(text),
            Errs{"m.json:3:58: backends[1].hash_key: hash_key 'a' is already the hash_key of "
                 "backends[0]"});
}

TEST(MembershipDocument, KeyWrittenTwiceInOneObject) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"name\": \"b\"}]}\n"),
            Errs{"m.json:1:58: backends[0]: key 'name' is written twice (first at line 1); "
                 "write it once"});
}

TEST(MembershipDocument, JumpHasNoWeights) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"weight\": 2}]}\n",
                     clusterWith("jump")),
            Errs{"m.json:1:68: backends[0].weight: jump has no weights (shards are numbered); "
                 "remove weight or use rendezvous"});
}

TEST(MembershipDocument, KetamaWantsHostPortHashKeysAtTheBackend) {
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}]}\n",
                     clusterWith("ketama")),
            Errs{"m.json:1:15: backends[0].hash_key: ketama places hosts by nginx's server "
                 "string host:port; set hash_key = \"127.0.0.1:9001\" (got 'a')"});
}

TEST(MembershipDocument, MaglevTableSmallerThanTheListNamesTheSetting) {
  ClusterConfig c = clusterWith("maglev");
  c.table_size = 2;
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
      "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\"},\n"
      "  {\"name\": \"c\", \"address\": \"127.0.0.1:9003\"}\n"
      "]}\n";
  EXPECT_EQ(errorsOf(text, c),
            Errs{"m.json:1:14: backends: table size 2 is smaller than the 3 backends (cluster "
                 "'cache' has maglev.table_size = 2)"});
}

TEST(MembershipDocument, RingTooLargeForTheClustersVnodes) {
  ClusterConfig c = clusterWith("ring_hash");
  c.vnodes = 10000;
  EXPECT_EQ(errorsOf("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
                     "\"weight\": 1000}, {\"name\": \"b\", \"address\": \"127.0.0.1:9002\", "
                     "\"weight\": 1000}]}\n",
                     c),
            Errs{"m.json:1:14: backends: the ring would hold 20000000 points (at most "
                 "10000000); lower vnodes or the weights (cluster 'cache' has "
                 "ring_hash.vnodes = 10000)"});
}

TEST(MembershipDocument, EveryErrorAtOnceInTextOrder) {
  const std::string text =
      "{\"backends\": [\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1\"},\n"
      "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\", \"weight\": 0},\n"
      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9003\", \"wieght\": 2}\n"
      "]}\n";
  const Errs errs = errorsOf(text);
  ASSERT_EQ(errs.size(), 4u);
  EXPECT_EQ(errs[0].substr(0, 32), "m.json:2:28: backends[0].address");
  EXPECT_EQ(errs[1].substr(0, 31), "m.json:3:56: backends[1].weight");
  EXPECT_EQ(errs[2].substr(0, 29), "m.json:4:12: backends[2].name");
  EXPECT_EQ(errs[3], "m.json:4:46: backends[2]: unknown key 'wieght' (did you mean 'weight'?)");
}

// The same mistakes in TOML and in a document read the same, but for the key path's prefix
// and the position: both go through lb/config/backends.h.
TEST(MembershipDocument, SameMessagesAsTheTomlLoader) {
  const std::string toml =
      "[clusters.cache]\n"
      "backends = [\n"
      "  { name = \"a b\", address = \"127.0.0.1\" },\n"
      "  { name = \"c\", address = \"127.0.0.1:9002\", weight = 0, hash_key = \"\" },\n"
      "  { name = \"d\", address = \"127.0.0.1:9003\", hash_key = \"c\" },\n"
      "]\n";
  const std::string json =
      "{\"backends\": [\n"
      "  {\"name\": \"a b\", \"address\": \"127.0.0.1\"},\n"
      "  {\"name\": \"c\", \"address\": \"127.0.0.1:9002\", \"weight\": 0, \"hash_key\": \"\"},\n"
      "  {\"name\": \"d\", \"address\": \"127.0.0.1:9003\", \"hash_key\": \"c\"}\n"
      "]}\n";
  auto loaded = loadConfigString(toml, "lb.toml");
  ASSERT_FALSE(loaded.ok());
  auto doc = parseMembershipDocument(json, "m.json", clusterWith("ring_hash"));
  ASSERT_FALSE(doc.ok());
  std::vector<std::string> from_toml, from_json;
  for (const auto& e : loaded.errors())
    from_toml.push_back(e.path.substr(std::string("clusters.cache.").size()) + ": " + e.message);
  for (const auto& e : doc.errors()) from_json.push_back(e.path + ": " + e.message);
  EXPECT_EQ(from_json, from_toml);
  EXPECT_EQ(from_json.size(), 5u);
}

// --- the position index ---------------------------------------------------------------------

TEST(JsonPositions, NestedPathsPointAtValuesAndKeys) {
  const JsonPositions p = indexJsonPositions("{\"a\": [1, {\"b\": \"x\"}],\n \"c\": {}}");
  EXPECT_EQ(p.values.at("").line, 1u);
  EXPECT_EQ(p.values.at("").column, 1u);
  EXPECT_EQ(p.values.at("a").column, 7u);
  EXPECT_EQ(p.values.at("a[0]").column, 8u);
  EXPECT_EQ(p.values.at("a[1]").column, 11u);
  EXPECT_EQ(p.values.at("a[1].b").column, 17u);
  EXPECT_EQ(p.keys.at("a[1].b").column, 12u);
  EXPECT_EQ(p.values.at("c").line, 2u);
  EXPECT_EQ(p.values.at("c").column, 7u);
  EXPECT_EQ(p.keys.at("c").column, 2u);
  EXPECT_TRUE(p.duplicates.empty());
}

TEST(JsonPositions, EscapedKeysAreDecoded) {
  const JsonPositions p = indexJsonPositions("{\"n\\u0061me\": 1, \"q\\\"\": 2}");
  EXPECT_EQ(p.values.at("name").column, 15u);
  EXPECT_EQ(p.values.at("q\"").column, 25u);
}

TEST(JsonPositions, ColumnsCountCharactersNotBytes) {
  // "é" is two bytes, "€" three: the value after them is still the 8th character.
  const JsonPositions p = indexJsonPositions("{\"é€\": 1}");
  EXPECT_EQ(p.values.at("é€").column, 8u);
}

TEST(JsonPositions, ByteOrderMarkTakesNoColumn) {
  const JsonPositions p = indexJsonPositions("\xEF\xBB\xBF{\"a\": 1}");
  EXPECT_EQ(p.values.at("").column, 1u);
  EXPECT_EQ(p.values.at("a").column, 7u);
}

TEST(MembershipDocument, ByteOrderMarkedDocumentReportsTheSamePositions) {
  EXPECT_EQ(errorsOf("\xEF\xBB\xBF{\"backends\": []}\n"),
            Errs{"m.json:1:14: backends: lists no backends"});
}

TEST(MembershipDocument, ByteOrderMarkedSyntaxErrorAtTheSameColumn) {
  const Errs errs = errorsOf("\xEF\xBB\xBF{\"backends\": x}\n");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].substr(0, 12), "m.json:1:14:") << errs[0];
}

TEST(JsonPositions, StringsHoldingBracketsAndCommasAreSkipped) {
  const JsonPositions p = indexJsonPositions("[\"],{\", [[], {}], true, null]");
  EXPECT_EQ(p.values.at("[1]").column, 9u);
  EXPECT_EQ(p.values.at("[1][1]").column, 14u);
  EXPECT_EQ(p.values.at("[2]").column, 19u);
  EXPECT_EQ(p.values.at("[3]").column, 25u);
}

TEST(JsonPositions, DuplicateKeysReportedWhereTheSecondStarts) {
  const JsonPositions p = indexJsonPositions("{\"x\": 1,\n\"x\": 2}");
  ASSERT_EQ(p.duplicates.size(), 1u);
  EXPECT_EQ(p.duplicates[0].first, "x");
  EXPECT_EQ(p.duplicates[0].second.line, 2u);
  EXPECT_EQ(p.duplicates[0].second.column, 1u);
  EXPECT_EQ(p.keys.at("x").line, 1u);   // the first one keeps its place
}

// A document from etcd can be 1.5 MiB of '[': paths grow with depth, so the index stops at
// kJsonIndexMaxDepth rather than spend memory quadratic in the text.
TEST(JsonPositions, DeepNestingStopsAtTheDepthLimit) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  const JsonPositions p = indexJsonPositions(deep);
  EXPECT_EQ(p.values.size(), kJsonIndexMaxDepth + 1);
}

TEST(MembershipDocument, DeeplyNestedTextIsRefusedCheaply) {
  const std::string deep =
      "{\"backends\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  const Errs errs = errorsOf(deep);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "m.json:1:15: backends[0]: must be an object such as {\"name\": "
                     "\"cache-a\", \"address\": \"127.0.0.1:9001\"}, got array");
}

TEST(JsonPositions, OffsetToLineAndColumn) {
  const std::string text = "ab\ncdé\nf";
  EXPECT_EQ(positionOfOffset(text, 0).line, 1u);
  EXPECT_EQ(positionOfOffset(text, 0).column, 1u);
  EXPECT_EQ(positionOfOffset(text, 3).line, 2u);
  EXPECT_EQ(positionOfOffset(text, 3).column, 1u);
  EXPECT_EQ(positionOfOffset(text, 8).line, 3u);   // 'f': after the two-byte é and '\n'
  EXPECT_EQ(positionOfOffset(text, 8).column, 1u);
  EXPECT_EQ(positionOfOffset(text, 7).column, 4u);   // the '\n' after é
  EXPECT_EQ(positionOfOffset(text, 100).line, 3u);
  EXPECT_EQ(positionOfOffset(text, 100).column, 2u);
}

// --- canonical JSON --------------------------------------------------------------------------

TEST(MembershipJson, CanonicalText) {
  std::vector<BackendConfig> b(2);
  b[0].name = "a";
  b[0].address = "127.0.0.1:9001";
  b[1].name = "b";
  b[1].address = "[::1]:9002";
  b[1].weight = 2;
  b[1].hash_key = "q\"uote";
  EXPECT_EQ(membershipJson(b),
            "{\"backends\": [\n"
            "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
            "  {\"name\": \"b\", \"address\": \"[::1]:9002\", \"weight\": 2, \"hash_key\": "
            "\"q\\\"uote\"}\n"
            "]}\n");
  EXPECT_EQ(membershipJson({}), "{\"backends\": []}\n");
}

TEST(MembershipJson, RoundTripsThroughTheParser) {
  const std::string text =
      "{\"backends\":[{\"hash_key\":\"k1\",\"name\":\"a\",\"address\":\"10.0.0.1:11211\","
      "\"weight\":5},{\"name\":\"b\",\"address\":\"10.0.0.2:11211\",\"weight\":1}]}";
  auto first = parseMembershipDocument(text, "m.json", clusterWith("ring_hash"));
  ASSERT_TRUE(first.ok());
  const std::string canonical = membershipJson(first->backends);
  auto again = parseMembershipDocument(canonical, "m.json", clusterWith("ring_hash"));
  ASSERT_TRUE(again.ok()) << again.errors()[0].format();
  ASSERT_EQ(again->backends.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again->backends[i].name, first->backends[i].name);
    EXPECT_EQ(again->backends[i].address, first->backends[i].address);
    EXPECT_EQ(again->backends[i].weight, first->backends[i].weight);
    EXPECT_EQ(again->backends[i].hash_key, first->backends[i].hash_key);
  }
  EXPECT_EQ(membershipJson(again->backends), canonical);
}

// `lb membership put` stamps the list with the moment it wrote it: the stamp reads back, is
// optional, and must be a non-negative integer.
TEST(MembershipJson, TheChangeStampRoundTripsAndIsChecked) {
  std::vector<BackendConfig> b(1);
  b[0].name = "a";
  b[0].address = "127.0.0.1:9001";
  const std::string stamped = membershipJson(b, 1764946800123);
  EXPECT_EQ(stamped,
            "{\"backends\": [\n  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}\n],\n"
            " \"changed_at_ms\": 1764946800123}\n");
  auto doc = parseMembershipDocument(stamped, "m.json", clusterWith("ring_hash"));
  ASSERT_TRUE(doc.ok()) << doc.errors()[0].format();
  EXPECT_EQ(doc->changed_at_ms, 1764946800123);
  EXPECT_EQ(doc->backends.size(), 1u);
  auto plain = parseMembershipDocument(membershipJson(b), "m.json", clusterWith("ring_hash"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->changed_at_ms, 0);
  for (const char* bad : {"-1", "\"now\"", "1.5"}) {
    auto r = parseMembershipDocument(
        std::string("{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}], "
                    "\"changed_at_ms\": ") + bad + "}",
        "m.json", clusterWith("ring_hash"));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.errors()[0].format().find("m.json:1:"), std::string::npos) << bad;
    EXPECT_NE(r.errors()[0].format().find("changed_at_ms"), std::string::npos)
        << r.errors()[0].format();
  }
}

// --- max_remove_percent ---------------------------------------------------------------------

std::vector<BackendConfig> named(std::initializer_list<const char*> names) {
  std::vector<BackendConfig> out;
  for (const char* n : names) {
    BackendConfig b;
    b.name = n;
    b.address = "127.0.0.1:9001";
    out.push_back(b);
  }
  return out;
}

TEST(CheckRemoval, ExactlyThePercentagePasses) {
  EXPECT_EQ(checkRemoval(named({"a", "b", "c", "d"}), named({"a", "b"}), 50), "");
}

TEST(CheckRemoval, OneMoreThanThePercentageIsRefusedWithTheCounts) {
  EXPECT_EQ(checkRemoval(named({"a", "b", "c", "d"}), named({"a"}), 50),
            "removes 3 of 4 backends (75%) at once; max_remove_percent is 50");
}

TEST(CheckRemoval, ZeroRefusesAnyRemovalButNotAnAddition) {
  EXPECT_NE(checkRemoval(named({"a", "b", "c"}), named({"a", "b"}), 0), "");
  EXPECT_EQ(checkRemoval(named({"a", "b", "c"}), named({"a", "b", "c", "d"}), 0), "");
}

TEST(CheckRemoval, HundredAllowsReplacingEveryone) {
  EXPECT_EQ(checkRemoval(named({"a", "b", "c"}), named({"x"}), 100), "");
}

TEST(CheckRemoval, ReplacingTheOnlyBackendRemovesAllOfIt) {
  EXPECT_EQ(checkRemoval(named({"a"}), named({"b"}), 50),
            "removes 1 of 1 backends (100%) at once; max_remove_percent is 50");
  EXPECT_EQ(checkRemoval(named({"a"}), named({"a", "b"}), 50), "");
}

TEST(CheckRemoval, ChangedAddressIsNotARemoval) {
  auto next = named({"a", "b"});
  next[0].address = "127.0.0.1:9999";
  next[1].weight = 7;
  EXPECT_EQ(checkRemoval(named({"a", "b"}), next, 0), "");
}

TEST(CheckRemoval, NoCurrentMembershipAllowsAnything) {
  EXPECT_EQ(checkRemoval({}, named({"a"}), 0), "");
}

}  // namespace
}  // namespace lb
