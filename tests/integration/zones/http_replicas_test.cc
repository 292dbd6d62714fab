// Replicas on an HTTP listener: with lb in zone a and read = "local", any of a key's first
// two hosts may serve it, the one in zone a first; when that one is down, the key goes where
// it would without zones of its own: its primary, or past it along the key's order.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/health_harness.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"

namespace lb {
namespace {

using namespace test;

const std::vector<std::string> kZones = {"a", "a", "b", "b", "c", "c"};
constexpr int kKeys = 300;

std::string config(const OriginFleet& origins, uint16_t web, uint16_t admin) {
  std::string toml = "[lb]\nworkers = 2\nzone = \"a\"\naccess_log = \"\"\n[admin]\nlisten = "
                     "\"127.0.0.1:" + std::to_string(admin) + "\"\n[listeners.web]\nlisten = "
                     "\"127.0.0.1:" + std::to_string(web) + "\"\ncluster = \"c\"\nhash = [ { "
                     "header = \"x-key\" } ]\n[clusters.c]\nselector = \"maglev\"\nreplicas = 2\n"
                     "read = \"local\"\nhealth = { type = \"http\", interval = \"200ms\", "
                     "timeout = \"150ms\", rise = 1, fall = 1 }\nbackends = [\n";
  for (size_t i = 0; i < origins.size(); ++i)
    toml += "  { name = \"" + origins.name(i) + "\", address = \"127.0.0.1:" +
            std::to_string(origins.port(i)) + "\", zone = \"" + kZones[i] + "\" },\n";
  return toml + "]\n";
}

// The backend that served key k through lb.
std::string servedBy(uint16_t web, int k) {
  const auto r = httpExchange(web, httpRequest("GET", "/", "x-key: k" + std::to_string(k) + "\r\n"));
  return r ? r.header("x-backend").value_or("?") : "?";
}

TEST(HttpReplicasTest, AKeysCopyInLbsZoneServesItAndTheOthersTakeItWhenItIsDown) {
  OriginFleet origins(6);
  ASSERT_TRUE(origins.ok()) << origins.error();
  const uint16_t web = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(origins, web, admin), {web, admin})) << lb.output();
  std::map<std::string, std::string> zone_of;
  for (size_t i = 0; i < origins.size(); ++i) zone_of[origins.name(i)] = kZones[i];
  // /backends shows each backend's zone.
  const auto backends = adminJson(admin, "/backends");
  ASSERT_TRUE(backends);
  for (const auto& b : (*backends)["clusters"].items()[0]["backends"].items())
    EXPECT_EQ(b["zone"].asString(), zone_of[b["name"].asString()]);

  std::vector<std::vector<std::string>> copies(kKeys);
  int local = 0;
  for (int k = 0; k < kKeys; ++k) {
    const auto ring = adminJson(admin, "/ring?cluster=c&key=k" + std::to_string(k));
    ASSERT_TRUE(ring);
    for (const auto& item : (*ring)["replicas"].items()) copies[k].push_back(item.asString());
    ASSERT_EQ(copies[k].size(), 2u);
    // /ring shows each host's zone beside the order: one of each zone first.
    const auto& zones = (*ring)["zones"].items();
    ASSERT_EQ(zones.size(), 6u);
    EXPECT_EQ(std::set<std::string>({zones[0].asString(), zones[1].asString(),
                                     zones[2].asString()}).size(),
              3u);
    std::string expected = copies[k][0];
    for (const auto& name : copies[k])
      if (zone_of[name] == "a") {
        expected = name;
        ++local;
        break;
      }
    EXPECT_EQ(servedBy(web, k), expected) << "k" << k;
  }
  EXPECT_GT(local, kKeys / 2);   // two copies in three zones: two keys in three

  // origin-a (zone a) goes down: each of its keys goes to its other copy.
  origins.stopOne(0);
  ASSERT_TRUE(waitUntil([&] { return !backendHealth(admin, "c", origins.name(0)).healthy; }, 10s));
  int moved = 0;
  for (int k = 0; k < kKeys; ++k) {
    const bool held = copies[k][0] == origins.name(0) || copies[k][1] == origins.name(0);
    if (!held) continue;
    const std::string other = copies[k][0] == origins.name(0) ? copies[k][1] : copies[k][0];
    EXPECT_EQ(servedBy(web, k), other) << "k" << k;
    ++moved;
  }
  EXPECT_GT(moved, 0);
  const std::string metrics = httpExchange(admin, httpRequest("GET", "/metrics")).body;
  EXPECT_NE(metrics.find("reason=\"local_zone\"} "), std::string::npos);
}

}  // namespace
}  // namespace lb
