// One pick: every way lb can be asked where a key goes answers with the host its requests
// really reach. A cluster with bounded loads (hash_balance_factor), a host taken down by
// health checks, and a key made hot by real traffic: GET /ring's "pick", GET /hotkeys'
// "serving", and the host the request path used agree, for HTTP (the X-Backend the origin
// answered with) and for Redis (the server that holds the value lb stored).
//
// The key is chosen so that its owner is the host that goes down: the agreement is then about
// the walk past it, not the owner everyone agrees on anyway. Requests go one at a time, so
// no host carries live load when a request is picked and the bounded and spread steps have
// one answer. Health takes two failed checks of 200 ms to mark a host down: the killed one
// fails both at once, and a loaded machine does not take a healthy host down mid-test.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_fleet.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

using lb::testing::JsonReader;
using lb::testing::JsonValue;

// GET /ring?cluster=CLUSTER&key=KEY as JSON; nullopt when the admin did not answer.
std::optional<JsonValue> ring(uint16_t admin, const std::string& cluster,
                              const std::string& key) {
  auto r = httpGetLocal(admin, "/ring?cluster=" + cluster + "&key=" + key, 2s);
  if (!r || r.status != 200) return std::nullopt;
  return JsonReader::parse(r.body);
}

// One string member of the key's /ring answer ("" when there is none).
std::string ringField(uint16_t admin, const std::string& cluster, const std::string& key,
                      const char* field) {
  const auto doc = ring(admin, cluster, key);
  const JsonValue* v = doc ? doc->find(field) : nullptr;
  return v != nullptr && v->isString() ? v->asString() : "";
}

// The first of `candidates` whose owner in /ring is `owner`; "" when none is.
std::string keyOwnedBy(uint16_t admin, const std::string& cluster, const std::string& owner) {
  for (int i = 0; i < 400; ++i) {
    const std::string key = "pick-" + std::to_string(i);
    if (ringField(admin, cluster, key, "owner") == owner) return key;
  }
  return "";
}

// Waits (bounded) until /ring's pick for `key` is no longer `down`: health has seen it go.
std::string pickOnceDown(uint16_t admin, const std::string& cluster, const std::string& key,
                         const std::string& down) {
  for (auto end = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(50ms)) {
    const std::string pick = ringField(admin, cluster, key, "pick");
    if (!pick.empty() && pick != down) return pick;
  }
  return "";
}

// /hotkeys?cluster=CLUSTER's entry for `key` once it is hot.
std::optional<JsonValue> hotEntry(uint16_t admin, const std::string& cluster,
                                  const std::string& key) {
  auto r = httpGetLocal(admin, "/hotkeys?cluster=" + cluster, 2s);
  if (!r || r.status != 200) return std::nullopt;
  JsonValue doc = JsonReader::parse(r.body);
  for (const JsonValue& k : doc["keys"].items())
    if (k["key"].asString() == key && k["hot"].asBool()) return k;
  return std::nullopt;
}

std::vector<std::string> servingOf(const JsonValue& entry) {
  std::vector<std::string> out;
  for (const JsonValue& s : entry["serving"].items()) out.push_back(s.asString());
  return out;
}

std::string resp(std::initializer_list<std::string> args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

TEST(OnePickTest, HttpRingHotkeysAndTheRequestPathNameOneHost) {
  ProxyHarness h;
  std::string why;
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  for (const auto& n : names) ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  ASSERT_TRUE(h.startLb(
      "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
      "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
      "hash = [ { header = \"x-key\" } ]\n"
      "[clusters.c]\nselector = \"ring_hash\"\nhash_balance_factor = 150\n"
      "hot_keys = { threshold = 0.05, hold = \"30s\", spread = 2 }\n"
      "health = { interval = \"200ms\", timeout = \"200ms\", fall = 2, rise = 1 }\n" +
          h.backendsToml(names),
      &why))
      << why;
  const std::string key = keyOwnedBy(h.adminPort(), "c", "b");
  ASSERT_FALSE(key.empty()) << "no key of 400 is owned by b";
  h.killOrigin("b");
  const std::string pick = pickOnceDown(h.adminPort(), "c", key, "b");
  ASSERT_FALSE(pick.empty()) << "health never took b down";
  const auto doc = ring(h.adminPort(), "c", key);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["order"][1].asString(), pick)
      << "past a down owner the pick is the next host of the key's order";

  // Real requests until the key is hot; each one reached the host /ring named.
  TcpClient c;
  ASSERT_TRUE(c.connect(h.port()));
  std::optional<JsonValue> entry;
  for (auto end = std::chrono::steady_clock::now() + 15s;
       !entry && std::chrono::steady_clock::now() < end;) {
    for (int i = 0; i < 50; ++i)
      ASSERT_EQ(backendFor(c, "/", "x-key: " + key + "\r\n"), pick) << "request " << i;
    entry = hotEntry(h.adminPort(), "c", key);
  }
  ASSERT_TRUE(entry) << "the key never showed as hot";
  const std::vector<std::string> serving = servingOf(*entry);
  ASSERT_EQ(serving.size(), 2u) << "a hot key of a spread = 2 cluster is served by 2 hosts";
  EXPECT_EQ(serving[0], pick) << "the spread set starts where the pick goes";
  EXPECT_EQ((*entry)["owner"].asString(), "b");
  // Hot now: one at a time, every candidate idle, so the spread step's tie goes to its first.
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(backendFor(c, "/", "x-key: " + key + "\r\n"), pick) << "hot request " << i;
  // The client has its last answer a moment before lb lets go of that request's live unit:
  // /ring's tie is only a tie once every host is idle again.
  for (auto end = std::chrono::steady_clock::now() + 5s;
       sampleSum(scrape(h.adminPort()), "lb_backend_active_requests", {{"cluster", "c"}}) > 0 &&
       std::chrono::steady_clock::now() < end;)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(ringField(h.adminPort(), "c", key, "pick"), pick);
}

class OnePickRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("",
                             "hash_balance_factor = 150\n"
                             "hot_keys = { threshold = 0.05, hold = \"30s\" }\n"
                             "health = { type = \"redis\", interval = \"200ms\", "
                             "timeout = \"200ms\", fall = 2, rise = 1 }"))
        << fleet_.output();
  }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }
  CacheFleet fleet_{CacheServer::kRedis, 4, 2};
};

TEST_F(OnePickRedisTest, RingHotkeysAndTheServerHoldingTheValueNameOneHost) {
  const uint16_t admin = fleet_.adminPort();
  const std::string owner = CacheFleet::name(1);
  const std::string key = keyOwnedBy(admin, "fleet", owner);
  ASSERT_FALSE(key.empty()) << "no key of 400 is owned by " << owner;
  fleet_.server(1).process().stop(9);
  const std::string pick = pickOnceDown(admin, "fleet", key, owner);
  ASSERT_FALSE(pick.empty()) << "health never took " << owner << " down";

  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_TRUE(c.send(resp({"SET", key, "where-am-i"})));
  auto set = readResp(c);
  ASSERT_TRUE(set && set->text == "OK") << (set ? set->text : "no reply");
  std::optional<JsonValue> entry;
  for (auto end = std::chrono::steady_clock::now() + 15s;
       !entry && std::chrono::steady_clock::now() < end;) {
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(c.send(resp({"GET", key})));
      auto got = readResp(c);
      ASSERT_TRUE(got && got->text == "where-am-i") << "GET " << i;
    }
    entry = hotEntry(admin, "fleet", key);
  }
  ASSERT_TRUE(entry) << "the key never showed as hot";

  // Which server holds the value: asked directly, past lb.
  std::string holder;
  for (int i = 0; i < 4; ++i) {
    if (i == 1) continue;
    TcpClient direct;
    ASSERT_TRUE(direct.connect(fleet_.server(i).port()));
    ASSERT_TRUE(direct.send(resp({"GET", key})));
    auto got = readResp(direct);
    ASSERT_TRUE(got);
    if (!got->nil && got->text == "where-am-i") {
      EXPECT_TRUE(holder.empty()) << "the value is on two servers";
      holder = CacheFleet::name(i);
    }
  }
  EXPECT_EQ(holder, pick) << "the SET went where /ring said";
  EXPECT_EQ(servingOf(*entry), std::vector<std::string>{pick})
      << "/hotkeys serves the key from the host the pick chose";
  EXPECT_EQ((*entry)["owner"].asString(), owner);
}

}  // namespace
}  // namespace lb::test
