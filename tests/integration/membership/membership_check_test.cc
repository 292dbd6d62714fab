// End to end: `lb membership put` refuses an invalid document with
// FILE:LINE:COL and writes nothing to etcd; `lb --check` validates a cluster's `membership`
// table (a bad etcd URL, a missing key) with FILE:LINE:COL like every other config error.
// The command's own cases (conflicts, diff, TOML input) are B's CLI test; these are the
// checks an operator meets first.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

class MembershipCheckTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    return dir_.write(name, text);
  }
  TempDir dir_;
};

constexpr char kClusterHead[] =
    "[listeners.web]\n"                      // 1
    "listen = \"127.0.0.1:8080\"\n"          // 2
    "cluster = \"cache\"\n"                  // 3
    "hash = [ { header = \"x-key\" } ]\n"    // 4
    "[clusters.cache]\n"                     // 5
    "selector = \"ring_hash\"\n";            // 6

TEST_F(MembershipCheckTest, PutRefusesAnInvalidDocumentAtItsLineAndColumn) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  const std::string path = write("bad.json",
                                 "{\"backends\": [\n"
                                 "  {\"name\": \"cache-a\", \"address\": \"127.0.0.1:9001\"},\n"
                                 "  {\"name\": \"cache-b\", \"address\": \"127.0.0.1:9002\", "
                                 "\"weight\": 0}\n"
                                 "]}\n");
  const int64_t before = etcd.revision();
  auto r = runCommand({builtBinary("lb"), "membership", "put", "--etcd", etcd.clientUrl(),
                       "--key", "/lb/test/check/cache", path});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  // weight's value: line 3, column 62.
  EXPECT_NE(r.err.find(path + ":3:62: backends[1].weight"), std::string::npos)
      << "stdout:\n" << r.out << "stderr:\n" << r.err;
  EXPECT_FALSE(etcd.get("/lb/test/check/cache").has_value());
  EXPECT_EQ(etcd.revision(), before);
}

TEST_F(MembershipCheckTest, CheckAcceptsAMembershipWithoutBackends) {
  const std::string path =
      write("good.toml", std::string(kClusterHead) +
                             "membership = { etcd = [\"http://127.0.0.1:2479\", "
                             "\"http://127.0.0.1:2579\"], key = \"/lb/prod/cache\" }\n");
  auto r = runCommand({builtBinary("lb"), "--check", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok\n");
}

TEST_F(MembershipCheckTest, CheckReportsABadEtcdUrlAtItsPosition) {
  const std::string path =
      write("bad-url.toml", std::string(kClusterHead) +
                                "membership = { etcd = [\"http://127.0.0.1:2479\", "
                                "\"htp:/127.0.0.1\"], key = \"/lb/prod/cache\" }\n");
  auto r = runCommand({builtBinary("lb"), "--check", "--config", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // Line 7; the second URL's opening quote is column 49.
  EXPECT_NE(r.err.find(path + ":7:49: clusters.cache.membership.etcd[1]"), std::string::npos)
      << r.err;
}

TEST_F(MembershipCheckTest, CheckReportsAMissingKeyAtTheMembershipTable) {
  const std::string path =
      write("no-key.toml", std::string(kClusterHead) +
                               "membership = { etcd = [\"http://127.0.0.1:2479\"] }\n");
  auto r = runCommand({builtBinary("lb"), "--check", "--config", path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // Line 7; the inline table opens at column 14.
  EXPECT_NE(r.err.find(path + ":7:14: clusters.cache.membership"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("key"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lb::test
