// A cluster's membership from a real etcd, through a real lb: the start reads it, a put is
// served (/backends, /ring, /metrics), a rejected document keeps the old table, and an lb
// whose cluster has nothing yet says so on /ready. The fleet-wide acceptance (several lb,
// load, etcd killed, compaction) is the other tests' in tests/integration/membership/.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "tests/support/etcd_process.h"
#include "tests/support/http_client.h"
#include "tests/support/json_reader.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/metrics_fleet.h"

namespace lb::test {
namespace {

using lb::testing::JsonReader;
using lb::testing::JsonValue;

constexpr const char* kKey = "/lb/test/clusters/cache";

std::string document(std::initializer_list<std::pair<const char*, uint16_t>> backends) {
  std::string d = "{\"backends\": [";
  bool first = true;
  for (const auto& [name, port] : backends) {
    d += std::string(first ? "" : ", ") + "{\"name\": \"" + name + "\", \"address\": \"127.0.0.1:" +
         std::to_string(port) + "\"}";
    first = false;
  }
  return d + "]}";
}

std::string config(const EtcdCluster& etcd, uint16_t admin, uint16_t web,
                   const std::string& extra = "") {
  return "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
         std::to_string(web) + "\"\ncluster = \"cache\"\n[clusters.cache]\n" +
         "membership = { etcd = [\"" + etcd.clientUrl() + "\"], key = \"" + kKey +
         "\", min_apply_interval = \"0\" }\n" + extra;
}

// The "cache" cluster of /backends, or null (a JsonValue kept in *doc).
const JsonValue* cacheCluster(uint16_t admin, JsonValue* doc) {
  auto r = httpGetLocal(admin, "/backends");
  if (!r || r.status != 200) return nullptr;
  *doc = JsonReader::parse(r.body);
  for (const auto& c : (*doc)["clusters"].items())
    if (c["name"].asString() == "cache") return &c;
  return nullptr;
}

// Polls /backends until `pred` holds for the cache cluster, within `timeout`.
bool waitCluster(uint16_t admin, const std::function<bool(const JsonValue&)>& pred,
                 Millis timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    JsonValue doc;
    if (const JsonValue* c = cacheCluster(admin, &doc); c != nullptr && pred(*c)) return true;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

double metric(uint16_t admin, const std::string& name, const std::string& result = "") {
  auto r = httpGetLocal(admin, "/metrics");
  for (const TextSample& s : parseExposition(r.body))
    if (s.name == name && s.labels.count("cluster") &&
        (result.empty() || (s.labels.count("result") && s.labels.at("result") == result)))
      return s.value;
  return -1;
}

TEST(MembershipSourceTest, StartsOnEtcdsMembershipAndServesAPutWithinASecond) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const int64_t first = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  ASSERT_GT(first, 0);
  const uint16_t admin = freePort(), web = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(etcd, admin, web), {web, admin})) << lb.output();

  // Started on etcd's revision, not on nothing: the workers waited for the first Range.
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  const JsonValue& m = (*c)["membership"];
  EXPECT_EQ(m["source"].asString(), "etcd");
  EXPECT_EQ(m["revision"].asNumber(), static_cast<double>(first));
  EXPECT_EQ(m["fingerprint"].asString().size(), 16u);
  EXPECT_EQ((*c)["backends"].items().size(), 2u);
  const std::string first_fingerprint = m["fingerprint"].asString();

  const auto put_at = std::chrono::steady_clock::now();
  const int64_t second = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}, {"c", 9003}}));
  ASSERT_GT(second, first);
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(second);
  })) << lb.output();
  const auto took = std::chrono::steady_clock::now() - put_at;
  EXPECT_LT(took, 1s);
  c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["backends"].items().size(), 3u);
  EXPECT_EQ((*c)["membership"]["state"].asString(), "watching");
  EXPECT_TRUE((*c)["membership"]["watch_up"].asBool());
  EXPECT_NE((*c)["membership"]["fingerprint"].asString(), first_fingerprint);

  // /ring answers from the new table and names it.
  auto ring = httpGetLocal(admin, "/ring?cluster=cache&key=user42");
  ASSERT_EQ(ring.status, 200) << ring.body;
  JsonValue r = JsonReader::parse(ring.body);
  EXPECT_EQ(r["revision"].asNumber(), static_cast<double>(second));
  EXPECT_EQ(r["fingerprint"].asString(), (*c)["membership"]["fingerprint"].asString());
  EXPECT_EQ(r["order"].items().size(), 3u);

  EXPECT_EQ(metric(admin, "lb_membership_revision"), static_cast<double>(second));
  EXPECT_EQ(metric(admin, "lb_membership_watch_up"), 1);
  EXPECT_EQ(metric(admin, "lb_membership_updates_total", "applied"), 2);
  EXPECT_NE(lb.output().find("membership: cluster cache: applied revision " +
                             std::to_string(second)),
            std::string::npos)
      << lb.output();
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

TEST(MembershipSourceTest, ARejectedDocumentKeepsTheOldTableAndIsShown) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const int64_t good = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  const uint16_t admin = freePort(), web = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(etcd, admin, web), {web, admin})) << lb.output();
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(good);
  }));

  const int64_t bad = etcd.put(kKey, "{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", \"weight\": 0}]}");
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    const JsonValue& m = c["membership"];
    return !m["last_rejected"].isNull() &&
           m["last_rejected"]["revision"].asNumber() == static_cast<double>(bad);
  })) << lb.output();
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["membership"]["revision"].asNumber(), static_cast<double>(good));
  EXPECT_EQ((*c)["backends"].items().size(), 2u);
  EXPECT_NE((*c)["membership"]["last_rejected"]["reason"].asString().find("weight"),
            std::string::npos);
  EXPECT_EQ(metric(admin, "lb_membership_updates_total", "rejected"), 1);
  EXPECT_NE(lb.output().find("membership: cluster cache: rejected revision " + std::to_string(bad)),
            std::string::npos)
      << lb.output();

  // The next good one applies.
  const int64_t next = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}, {"c", 9003}}));
  EXPECT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(next);
  })) << lb.output();
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// etcd lost: lb keeps its table and says it is reconnecting; an lb started meanwhile serves
// the state file's membership; etcd back, both follow the next put.
TEST(MembershipSourceTest, WithoutEtcdAnLbStartsOnItsStateFileAndFollowsEtcdOnceItIsBack) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const int64_t first = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  const std::string state = tempPath("state");
  unlink(state.c_str());
  const uint16_t admin = freePort(), web = freePort();
  const std::string toml =
      config(etcd, admin, web).insert(config(etcd, admin, web).find("min_apply_interval"),
                                      "state_file = \"" + state + "\", ");
  auto running = std::make_unique<LbProcess>();
  ASSERT_TRUE(running->start(toml, {web, admin})) << running->output();
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(first);
  }));
  EXPECT_NE(readWholeFile(state).find("\"revision\""), std::string::npos) << readWholeFile(state);

  etcd.kill();
  EXPECT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["state"].asString() == "reconnecting" &&
           !c["membership"]["watch_up"].asBool();
  })) << running->output();
  EXPECT_EQ(metric(admin, "lb_membership_watch_up"), 0);
  EXPECT_EQ(metric(admin, "lb_membership_revision"), static_cast<double>(first));
  EXPECT_EQ(running->process().stop(SIGTERM, 10s), 0) << running->output();
  running.reset();

  LbProcess restarted;
  ASSERT_TRUE(restarted.start(toml, {web, admin})) << restarted.output();
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["membership"]["source"].asString(), "state_file");
  EXPECT_EQ((*c)["membership"]["revision"].asNumber(), static_cast<double>(first));
  EXPECT_EQ((*c)["backends"].items().size(), 2u);
  EXPECT_EQ(httpGetLocal(admin, "/ready").status, 200);

  ASSERT_TRUE(etcd.restart()) << etcd.output();
  // The backoff is at most 5s; etcd's own restart takes some of it.
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["state"].asString() == "watching" && c["membership"]["watch_up"].asBool();
  }, 15s)) << restarted.output();
  // etcd holds the revision the state file gave: served on as etcd's, nothing rebuilt.
  EXPECT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["source"].asString() == "etcd" &&
           c["membership"]["revision"].asNumber() == static_cast<double>(first);
  })) << restarted.output();
  const int64_t second = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}, {"c", 9003}}));
  EXPECT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(second) &&
           c["membership"]["source"].asString() == "etcd";
  })) << restarted.output();
  EXPECT_EQ(restarted.process().stop(SIGTERM, 10s), 0) << restarted.output();
  unlink(state.c_str());
}

// A SIGHUP keeps what etcd gave the cluster: the file's backends are only its fallback.
TEST(MembershipSourceTest, AReloadKeepsTheAppliedMembership) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const int64_t rev = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  const uint16_t admin = freePort(), web = freePort();
  const std::string fallback = "backends = [ { name = \"fallback\", address = \"127.0.0.1:9009\" } ]\n";
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(etcd, admin, web, fallback), {web, admin})) << lb.output();
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(rev);
  }));
  ASSERT_TRUE(lb.reload(config(etcd, admin, web, fallback + "retries = 1\n"))) << lb.output();
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["membership"]["source"].asString(), "etcd");
  EXPECT_EQ((*c)["membership"]["revision"].asNumber(), static_cast<double>(rev));
  ASSERT_EQ((*c)["backends"].items().size(), 2u);
  EXPECT_EQ((*c)["backends"].items()[0]["name"].asString(), "a");
  // The source kept watching across the reload.
  const int64_t next = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}, {"c", 9003}}));
  EXPECT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(next);
  })) << lb.output();
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// A reload whose settings the running membership would fail (selector jump has no weights)
// is refused like any bad file: the cluster keeps its table and selector.
TEST(MembershipSourceTest, AReloadWhoseSettingsTheMembershipWouldFailIsRefused) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const int64_t rev = etcd.put(kKey, "{\"backends\": [{\"name\": \"a\", \"address\": "
                                     "\"127.0.0.1:9001\", \"weight\": 2}]}");
  const uint16_t admin = freePort(), web = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(etcd, admin, web), {web, admin})) << lb.output();
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(rev);
  }));
  EXPECT_FALSE(lb.reload(config(etcd, admin, web, "selector = \"jump\"\n"))) << lb.output();
  EXPECT_NE(lb.output().find("the membership it serves (revision " + std::to_string(rev) +
                             ") would not pass the new settings"),
            std::string::npos)
      << lb.output();
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["selector"].asString(), "ring_hash");
  EXPECT_EQ((*c)["membership"]["revision"].asNumber(), static_cast<double>(rev));
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// A reload that names another key watches that one (the file's backends serve meanwhile);
// one that removes the membership stops the source and serves the file's backends.
TEST(MembershipSourceTest, AReloadToAnotherKeyWatchesItAndOneWithoutMembershipStops) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  const std::string other = std::string(kKey) + "-2";
  const int64_t other_rev = etcd.put(other, document({{"x", 9101}}));
  const uint16_t admin = freePort(), web = freePort();
  const std::string fallback = "backends = [ { name = \"fallback\", address = \"127.0.0.1:9009\" } ]\n";
  LbProcess lb;
  std::string toml = config(etcd, admin, web, fallback);
  ASSERT_TRUE(lb.start(toml, {web, admin})) << lb.output();
  toml.replace(toml.find(kKey), std::string(kKey).size(), other);
  ASSERT_TRUE(lb.reload(toml)) << lb.output();
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(other_rev) &&
           c["membership"]["key"].asString() == other && c["backends"].items().size() == 1 &&
           c["backends"].items()[0]["name"].asString() == "x";
  })) << lb.output();
  ASSERT_TRUE(lb.reload("[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                        std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
                        std::to_string(web) + "\"\ncluster = \"cache\"\n[clusters.cache]\n" +
                        fallback))
      << lb.output();
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["membership"]["source"].asString(), "file");
  EXPECT_FALSE((*c)["membership"].has("state"));
  ASSERT_EQ((*c)["backends"].items().size(), 1u);
  EXPECT_EQ((*c)["backends"].items()[0]["name"].asString(), "fallback");
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// A writer rewriting the key in a loop costs a few builds, and lb ends on the last revision.
TEST(MembershipSourceTest, RapidWritesCoalesceIntoFewBuildsEndingOnTheLast) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  const uint16_t admin = freePort(), web = freePort();
  std::string toml = config(etcd, admin, web);
  toml.replace(toml.find("min_apply_interval = \"0\""), 24, "min_apply_interval = \"500ms\"");
  LbProcess lb;
  ASSERT_TRUE(lb.start(toml, {web, admin})) << lb.output();
  const auto began = std::chrono::steady_clock::now();
  int64_t last = 0;
  for (int i = 0; i < 100; ++i)
    last = etcd.put(kKey, document({{"a", 9001}, {"b", static_cast<uint16_t>(9100 + i)}}));
  ASSERT_GT(last, 0);
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(last);
  })) << lb.output();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - began).count();
  // One build at start, then at most one per 500 ms while the writes lasted.
  const double applied = metric(admin, "lb_membership_updates_total", "applied");
  RecordProperty("applied_for_100_writes", std::to_string(applied));
  RecordProperty("writes_ms", std::to_string(ms));
  EXPECT_LE(applied, 2.0 + static_cast<double>(ms) / 500) << "builds for 100 writes in " << ms << " ms";
  EXPECT_GE(applied, 2);
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// The member lb watches is killed: lb moves to another member, and a put made meanwhile is
// served (the Range after the break reads it).
TEST(MembershipSourceTest, AKilledMemberIsLeftForTheNextAndNoRevisionIsMissed) {
  EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const int64_t first = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}}));
  const uint16_t admin = freePort(), web = freePort();
  std::string toml = config(etcd, admin, web);
  std::string urls;
  for (const std::string& u : etcd.clientUrls()) urls += (urls.empty() ? "\"" : ", \"") + u + "\"";
  toml.replace(toml.find("\"" + etcd.clientUrl(0) + "\""), etcd.clientUrl(0).size() + 2, urls);
  LbProcess lb;
  ASSERT_TRUE(lb.start(toml, {web, admin})) << lb.output();
  ASSERT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(first) &&
           c["membership"]["watch_up"].asBool();
  })) << lb.output();
  JsonValue doc;
  const JsonValue* c = cacheCluster(admin, &doc);
  ASSERT_NE(c, nullptr);
  const std::string watched = (*c)["membership"]["endpoint"].asString();
  size_t member = 0;
  while (member < etcd.size() && etcd.clientUrl(member) != watched) ++member;
  ASSERT_LT(member, etcd.size()) << watched;
  etcd.kill(member);
  // A put fails while the two left elect a leader (when the killed one led): try again,
  // within a bound.
  int64_t second = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (second == 0 && std::chrono::steady_clock::now() < deadline)
    second = etcd.put(kKey, document({{"a", 9001}, {"b", 9002}, {"c", 9003}}));
  ASSERT_GT(second, first) << etcd.output();
  EXPECT_TRUE(waitCluster(admin, [&](const JsonValue& c) {
    return c["membership"]["revision"].asNumber() == static_cast<double>(second) &&
           c["membership"]["watch_up"].asBool() && c["membership"]["endpoint"].asString() != watched;
  }, 10s)) << lb.output();
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// Without etcd, a state file or backends, the cluster serves nothing: /ready says which.
TEST(MembershipSourceTest, WithNothingToServeReadyAnswers503NamingTheCluster) {
  const uint16_t admin = freePort(), web = freePort(), dead = freePort();
  LbProcess lb;
  const std::string toml =
      "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
      std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(web) +
      "\"\ncluster = \"cache\"\n[clusters.cache]\nmembership = { etcd = [\"http://127.0.0.1:" +
      std::to_string(dead) + "\"], key = \"/k\" }\n";
  ASSERT_TRUE(lb.start(toml, {web, admin})) << lb.output();
  auto ready = httpGetLocal(admin, "/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("'cache'"), std::string::npos) << ready.body;
  // A request to the empty cluster is an answer, not a crash.
  auto r = httpGetLocal(web, "/x");
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(lb.process().running());
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

}  // namespace
}  // namespace lb::test
