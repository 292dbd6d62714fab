// Zones and replicas in the config: `zone` on backends (TOML and membership documents),
// [lb] zone or LB_ZONE, a cluster's `replicas` and `read`; each mistake at its position with
// its key path, and a membership document that breaks a rule rejected whole.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/membership/document.h"
#include "tests/support/config_errors.h"

namespace lb {
namespace {

using test::errorsOf;

// LB_ZONE is read when [lb] zone is not written; every test here starts without it.
class ConfigZonesTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("LB_ZONE"); }
  void TearDown() override { unsetenv("LB_ZONE"); }
};

const std::string kRedis =
    "[listeners.r]\nlisten = \"127.0.0.1:6380\"\nprotocol = \"redis\"\ncluster = \"c\"\n";

std::string cluster(const std::string& settings, const std::string& zone_a = "\"a\"") {
  return "[clusters.c]\n" + settings +
         "\nbackends = [ { name = \"x\", address = \"127.0.0.1:9001\", zone = " + zone_a +
         " },\n             { name = \"y\", address = \"127.0.0.1:9002\", zone = \"b\" } ]\n";
}

TEST_F(ConfigZonesTest, ReadsZonesReplicasAndTheInstanceZone) {
  auto r = loadConfigString("[lb]\nzone = \"a\"\n" + cluster("replicas = 2\nread = \"local\"") +
                                kRedis,
                            "lb.toml");
  ASSERT_TRUE(r.ok()) << r.errors().front().format();
  EXPECT_EQ(r->zone, "a");
  const ClusterConfig& c = r->clusters.at(0);
  EXPECT_EQ(c.replicas, 2u);
  EXPECT_EQ(c.read, ReplicaRead::kLocal);
  EXPECT_EQ(c.backends.at(0).zone, "a");
  EXPECT_EQ(c.backends.at(1).zone, "b");
}

TEST_F(ConfigZonesTest, TheEnvironmentGivesTheZoneWhenTheFileDoesNot) {
  setenv("LB_ZONE", "b", 1);
  auto from_env = loadConfigString(cluster("replicas = 2\nread = \"local\"") + kRedis, "lb.toml");
  ASSERT_TRUE(from_env.ok()) << from_env.errors().front().format();
  EXPECT_EQ(from_env->zone, "b");
  auto from_file = loadConfigString("[lb]\nzone = \"a\"\n" + cluster("") + kRedis, "lb.toml");
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->zone, "a");
  setenv("LB_ZONE", "no spaces", 1);
  EXPECT_EQ(errorsOf(cluster("") + kRedis),
            std::vector<std::string>{
                "lb.toml: LB_ZONE: (from the environment, as [lb] zone is not set) 'no spaces' "
                "is not a valid zone name (use letters, digits, '_', '-' and '.')"});
}

TEST_F(ConfigZonesTest, AnEmptyOrOverlongZoneIsRefusedAtItsPosition) {
  EXPECT_EQ(errorsOf(cluster("", "\"\"") + kRedis),
            std::vector<std::string>{"lb.toml:3:63: clusters.c.backends[0].zone: must not be "
                                     "empty (leave it out for no zone)"});
  EXPECT_EQ(errorsOf(cluster("", "\"" + std::string(65, 'z') + "\"") + kRedis),
            std::vector<std::string>{"lb.toml:3:63: clusters.c.backends[0].zone: a zone name "
                                     "of 65 bytes is longer than 64"});
  EXPECT_EQ(errorsOf("[lb]\nzone = \"\"\n" + cluster("") + kRedis),
            std::vector<std::string>{
                "lb.toml:2:8: lb.zone: must not be empty (leave it out for no zone)"});
}

TEST_F(ConfigZonesTest, MoreReplicasThanBackendsIsRefused) {
  EXPECT_EQ(errorsOf(cluster("replicas = 3") + kRedis),
            std::vector<std::string>{"lb.toml:2:12: clusters.c.replicas: replicas = 3 is more "
                                     "than the 2 backends"});
  EXPECT_EQ(errorsOf(cluster("replicas = 9") + kRedis).size(), 1u);   // above kMaxReplicas
  EXPECT_EQ(errorsOf(cluster("replicas = 0") + kRedis).size(), 1u);
}

TEST_F(ConfigZonesTest, ReplicasOnATcpListenerAreRefused) {
  const std::string tcp =
      "[listeners.t]\nlisten = \"127.0.0.1:7000\"\nprotocol = \"tcp\"\ncluster = \"c\"\n"
      "hash = [ { source_ip = true } ]\n";
  EXPECT_EQ(errorsOf(cluster("replicas = 2") + tcp),
            std::vector<std::string>{
                "lb.toml:2:12: clusters.c.replicas: applies to redis, memcached and http "
                "listeners; listener 't' is tcp, whose connection goes to one host"});
}

TEST_F(ConfigZonesTest, LocalReadsNeedTheInstanceZoneAndReplicas) {
  EXPECT_EQ(errorsOf(cluster("replicas = 2\nread = \"local\"") + kRedis),
            std::vector<std::string>{
                "lb.toml:3:8: clusters.c.read: \"local\" needs this instance's zone: set [lb] "
                "zone, or LB_ZONE in the environment"});
  EXPECT_EQ(errorsOf("[lb]\nzone = \"a\"\n" + cluster("read = \"local\"") + kRedis),
            std::vector<std::string>{
                "lb.toml:4:8: clusters.c.read: \"local\" chooses among a key's replicas; set "
                "replicas = 2 or more (this cluster keeps 1 copy)"});
  EXPECT_EQ(errorsOf(cluster("read = \"nearest\"") + kRedis).size(), 1u);
}

// A document from etcd meets the cluster's settings: fewer backends than its replicas, or a
// bad zone, and the whole document is rejected (the running table stays).
TEST_F(ConfigZonesTest, AMembershipDocumentKeepsTheSameRules) {
  ClusterConfig settings;
  settings.name = "c";
  settings.replicas = 2;
  auto good = parseMembershipDocument(
      R"({"backends": [{"name": "x", "address": "127.0.0.1:9001", "zone": "a"},
                       {"name": "y", "address": "127.0.0.1:9002", "zone": "b"}]})",
      "doc", settings);
  ASSERT_TRUE(good.ok()) << good.errors().front().format();
  EXPECT_EQ(good->backends.at(1).zone, "b");

  auto short_list = parseMembershipDocument(
      R"({"backends": [{"name": "x", "address": "127.0.0.1:9001", "zone": "a"}]})", "doc",
      settings);
  ASSERT_FALSE(short_list.ok());
  EXPECT_EQ(short_list.errors().front().format(),
            "doc:1:14: backends: replicas = 2 is more than the 1 backends (cluster 'c' has "
            "replicas = 2)");

  auto empty_zone = parseMembershipDocument(
      R"({"backends": [{"name": "x", "address": "127.0.0.1:9001", "zone": ""},
                       {"name": "y", "address": "127.0.0.1:9002"}]})",
      "doc", settings);
  ASSERT_FALSE(empty_zone.ok());
  EXPECT_EQ(empty_zone.errors().front().format(),
            "doc:1:66: backends[0].zone: must not be empty (leave it out for no zone)");
}

}  // namespace
}  // namespace lb
