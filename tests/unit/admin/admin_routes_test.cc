// The admin endpoints' bodies as pure functions: query decoding, JSON escaping, /backends and
// /ring over a snapshot built as the proxy builds it. Bodies are read back with a strict JSON
// reader, so a body that is not valid JSON fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "lb/admin/routes.h"
#include "lb/core/hash.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

using testing::JsonReader;
using testing::JsonValue;

TEST(PercentDecodeTest, DecodesEscapesAndPlus) {
  EXPECT_EQ(percentDecode("a%20b%2Fc+d%2B"), std::optional<std::string>("a b/c d+"));
  EXPECT_EQ(percentDecode("%e2%82%AC"), std::optional<std::string>("\xe2\x82\xac"));
}

TEST(PercentDecodeTest, RejectsMalformedEscapes) {
  EXPECT_FALSE(percentDecode("%"));
  EXPECT_FALSE(percentDecode("ab%4"));
  EXPECT_FALSE(percentDecode("%zz"));
}

TEST(ParseQueryTest, SplitsDecodesAndKeepsFirst) {
  auto q = parseQuery("cluster=cache&key=user%3A1&key=other&flag&&x=");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->at("cluster"), "cache");
  EXPECT_EQ(q->at("key"), "user:1");
  EXPECT_EQ(q->at("flag"), "");
  EXPECT_EQ(q->at("x"), "");
  EXPECT_EQ(q->size(), 4u);
}

TEST(ParseQueryTest, FailsOnMalformedComponent) { EXPECT_FALSE(parseQuery("key=%g0")); }

TEST(JsonStringTest, EscapesQuotesBackslashAndControls) {
  std::string out;
  appendJsonString(out, std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(JsonReader::parse(out).asString(), std::string("a\"b\\c\n\x01", 7));
}

TEST(JsonStringTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  std::string out;
  appendJsonString(out, "\xe2\x82\xac \xff \xc0\xaf \xed\xa0\x80");   // euro, junk, overlong, surrogate
  EXPECT_EQ(JsonReader::parse(out).asString(),
            "\xe2\x82\xac \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

class AdminRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snap_ = testing::buildTestSnapshot(registry_);
    ASSERT_NE(snap_, nullptr);
  }
  JsonValue ring(const std::string& query, int want_status = 200) {
    AdminResponse r = ringResponse(*snap_, query);
    EXPECT_EQ(r.status, want_status) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return JsonReader::parse(r.body);
  }
  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
};

TEST_F(AdminRoutesTest, BackendsListsEveryBackendWithItsState) {
  testing::backendState(*snap_, "cache", "cache-b").live.store(4);
  testing::backendState(*snap_, "plain", "p-0").healthy.store(false);
  AdminResponse r = backendsResponse(*snap_);
  EXPECT_EQ(r.status, 200);
  JsonValue doc = JsonReader::parse(r.body);
  const auto& clusters = doc["clusters"].items();
  ASSERT_EQ(clusters.size(), 2u);
  const JsonValue& cache = clusters[0];
  EXPECT_EQ(cache["name"].asString(), "cache");
  EXPECT_EQ(cache["total_load"].asNumber(), 4);
  const auto& b = cache["backends"].items();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1]["name"].asString(), "cache-b");
  EXPECT_EQ(b[1]["address"].asString(), "127.0.0.1:9002");
  EXPECT_EQ(b[1]["load"].asNumber(), 4);
  EXPECT_EQ(b[2]["weight"].asNumber(), 2);
  EXPECT_TRUE(b[0]["healthy"].asBool());
  const auto& cs = *snap_->findCluster("cache");
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b[i]["cap"].asNumber(), static_cast<double>(cs.bounded->cap(i, 4))) << i;
    EXPECT_DOUBLE_EQ(b[i]["keyspace_share"].asNumber(), cs.backends[i].keyspace_share) << i;
  }
}

TEST_F(AdminRoutesTest, BackendsCapIsNullWhenBoundedLoadsAreOff) {
  JsonValue doc = JsonReader::parse(backendsResponse(*snap_).body);
  const JsonValue& plain = doc["clusters"][1];
  EXPECT_EQ(plain["name"].asString(), "plain");
  EXPECT_TRUE(plain["backends"][0]["cap"].isNull());
  EXPECT_FALSE(plain["backends"][0]["healthy"].isNull());
}

TEST_F(AdminRoutesTest, RingGivesHashOwnerAndWholeOrder) {
  JsonValue doc = ring("cluster=cache&key=user:42");
  const auto& cs = *snap_->findCluster("cache");
  uint64_t hash = hashKeyBytes(cs.selector->key_hash, "user:42");
  EXPECT_EQ(doc["hash"].numberText(), std::to_string(hash));   // exact, not via double
  EXPECT_EQ(doc["cluster"].asString(), "cache");
  EXPECT_EQ(doc["key"].asString(), "user:42");
  std::vector<std::string> order;
  for (const auto& n : doc["order"].items()) order.push_back(n.asString());
  ASSERT_EQ(order.size(), 3u);
  for (uint32_t a = 0; a < 3; ++a)
    EXPECT_EQ(order[a], cs.backends[cs.table->pick(hash, a)].config->name) << a;
  EXPECT_EQ(doc["owner"].asString(), order[0]);
  EXPECT_EQ(std::set<std::string>(order.begin(), order.end()),
            (std::set<std::string>{"cache-a", "cache-b", "cache-c"}));
}

TEST_F(AdminRoutesTest, RingGivesTheHashAsAStringTooForJsonReadersThatUseDoubles) {
  // jq and JavaScript round a 64-bit number; hash_hex is exact whatever reads it, and is the
  // access log's key= field.
  for (const char* key : {"user:42", "k1", ""}) {
    JsonValue doc = ring(std::string("cluster=cache&key=") + key);
    const auto& cs = *snap_->findCluster("cache");
    char want[24];
    snprintf(want, sizeof want, "%016llx",
             static_cast<unsigned long long>(hashKeyBytes(cs.selector->key_hash, key)));
    EXPECT_EQ(doc["hash_hex"].asString(), want) << key;
    EXPECT_EQ(std::stoull(doc["hash_hex"].asString(), nullptr, 16),
              std::stoull(doc["hash"].numberText())) << key;
  }
}

TEST_F(AdminRoutesTest, RingPickSkipsAnUnhealthyOwner) {
  JsonValue before = ring("cluster=cache&key=k1");
  testing::backendState(*snap_, "cache", before["owner"].asString()).healthy.store(false);
  JsonValue after = ring("cluster=cache&key=k1");
  EXPECT_EQ(after["owner"].asString(), before["owner"].asString());   // the table did not change
  EXPECT_EQ(after["pick"].asString(), after["order"][1].asString());
  EXPECT_EQ(after["reason"].asString(), "failover");
}

TEST_F(AdminRoutesTest, RingDecodesTheKey) {
  JsonValue encoded = ring("cluster=cache&key=a%20b%2Fc%26d");
  EXPECT_EQ(encoded["key"].asString(), "a b/c&d");
  const auto& cs = *snap_->findCluster("cache");
  EXPECT_EQ(encoded["hash"].numberText(),
            std::to_string(hashKeyBytes(cs.selector->key_hash, "a b/c&d")));
}

TEST_F(AdminRoutesTest, RingRejectsMissingParameters) {
  EXPECT_NE(ring("cluster=cache", 400)["error"].asString().find("key"), std::string::npos);
  EXPECT_NE(ring("key=x", 400)["error"].asString().find("cluster"), std::string::npos);
  ring("cluster=cache&key=%zz", 400);
}

TEST_F(AdminRoutesTest, RingAnswers404ForUnknownCluster) {
  EXPECT_NE(ring("cluster=nope&key=x", 404)["error"].asString().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace lb
