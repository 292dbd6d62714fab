// lb's start refuses a membership state_file whose directory does not exist, at the
// membership table, rather than failing at the first apply long after.
#include <gtest/gtest.h>

#include "lb/app/memberships.h"

namespace lb {
namespace {

Config withStateFile(const std::string& path) {
  Config c;
  c.file = "lb.toml";
  ClusterConfig cluster;
  cluster.name = "cache";
  MembershipConfig m;
  m.etcd = {"http://127.0.0.1:2379"};
  m.key = "/k";
  m.state_file = path;
  m.pos = {7, 14};
  cluster.membership = m;
  c.clusters.push_back(cluster);
  return c;
}

TEST(StateFileDirTest, AnExistingDirectoryPasses) {
  EXPECT_TRUE(checkStateFileDirs(withStateFile("/tmp/lb-cache.json")).empty());
  EXPECT_TRUE(checkStateFileDirs(withStateFile("relative-in-cwd.json")).empty());
}

TEST(StateFileDirTest, AMissingDirectoryIsAnErrorAtTheMembershipTable) {
  const Errors e = checkStateFileDirs(withStateFile("/nonexistent-lb-dir/cache.json"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].format(),
            "lb.toml:7:14: clusters.cache.membership.state_file: '/nonexistent-lb-dir/cache.json': "
            "directory '/nonexistent-lb-dir' does not exist");
}

TEST(StateFileDirTest, NoStateFileOrNoMembershipIsNothingToCheck) {
  Config c = withStateFile("");
  EXPECT_TRUE(checkStateFileDirs(c).empty());
  c.clusters[0].membership.reset();
  EXPECT_TRUE(checkStateFileDirs(c).empty());
}

}  // namespace
}  // namespace lb
