// `lb membership get|put|diff` as an operator runs it: the real build/lb binary against a
// real etcd (Debian's 3.4.23, one member on free loopback ports), the store checked through
// etcdctl, an independent path to the same data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/etcd_process.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lb {
namespace {

const char kFour[] =
    "{\"backends\": [\n"
    "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
    "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\"},\n"
    "  {\"name\": \"c\", \"address\": \"127.0.0.1:9003\"},\n"
    "  {\"name\": \"d\", \"address\": \"127.0.0.1:9004\"}\n"
    "]}\n";

int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A value `lb membership put` wrote: the canonical list, then the moment it was written
// (changed_at_ms, where every instance starts its handover window). The list alone, after
// checking that the stamp is there and falls in [after_ms, now]; "" when it is not there.
std::string unstamped(const std::optional<std::string>& value, int64_t after_ms) {
  const std::string tail = ",\n \"changed_at_ms\": ";
  const size_t at = value ? value->rfind(tail) : std::string::npos;
  if (at == std::string::npos || value->substr(value->size() - 2) != "}\n") return "";
  const int64_t stamp = std::stoll(value->substr(at + tail.size()));
  if (stamp < after_ms || stamp > wallMs()) return "";
  return value->substr(0, at) + "}\n";
}

class MembershipCliTest : public testing::Test {
 protected:
  static void SetUpTestSuite() { etcd_ = new test::EtcdProcess(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(etcd_->ok()) << etcd_->output();
    ASSERT_TRUE(dir_.ok());
    // One key per test: the suite shares its etcd.
    key_ = std::string("/lb/test/") +
           testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  std::string writeFile(const std::string& name, const std::string& text) {
    return dir_.write(name, text);
  }

  // `lb membership COMMAND --etcd URL --key KEY ARGS...`, with `env` ("NAME=value") set.
  test::CommandResult run(const std::string& command, const std::vector<std::string>& args,
                          const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {test::builtBinary("lb"), "membership", command, "--etcd",
                             etcd_->clientUrl(), "--key", key_});
    argv.insert(argv.end(), args.begin(), args.end());
    return test::runCommand(argv, std::chrono::seconds(60));
  }

  // A shell command that writes `value` at the test's key through etcdctl.
  std::string etcdctlPut(const std::string& value) const {
    return "ETCDCTL_API=3 /usr/bin/etcdctl --endpoints=" + etcd_->clientUrl() + " put " +
           key_ + " '" + value + "' >/dev/null";
  }

  static test::EtcdProcess* etcd_;
  test::TempDir dir_{"membership_cli"};
  std::string key_;
};

test::EtcdProcess* MembershipCliTest::etcd_ = nullptr;

TEST_F(MembershipCliTest, PutOfAnInvalidFilePrintsFileLineColumnAndWritesNothing) {
  const std::string file = writeFile("bad.json",
                                     "{\"backends\": [\n"
                                     "  {\"name\": \"a\", \"address\": \"127.0.0.1\"},\n"
                                     "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\", "
                                     "\"weight\": 0}\n"
                                     "]}\n");
  const auto r = run("put", {file});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(file + ":2:28: backends[0].address: '127.0.0.1' has no port"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file + ":3:56: backends[1].weight: must be >= 1, got 0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("2 errors; nothing written"), std::string::npos) << r.err;
  EXPECT_EQ(etcd_->get(key_), std::nullopt);
}

TEST_F(MembershipCliTest, PutThenGetRoundTrips) {
  const int64_t start = wallMs();
  const auto put = run("put", {writeFile("m.json", kFour)});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const int64_t revision = etcd_->revision();
  EXPECT_NE(put.out.find("wrote " + key_ + " at mod_revision " + std::to_string(revision) +
                         " (created)"),
            std::string::npos)
      << put.out;
  EXPECT_EQ(unstamped(etcd_->get(key_), start), std::string(kFour));   // kFour is canonical

  const auto get = run("get", {});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out, *etcd_->get(key_)) << "get prints the value byte for byte";
  EXPECT_NE(get.err.find(key_ + ": mod_revision " + std::to_string(revision) + ", version 1"),
            std::string::npos)
      << get.err;
}

TEST_F(MembershipCliTest, TomlBackendListIsWrittenAsCanonicalJson) {
  const int64_t start = wallMs();
  const auto put = run("put", {writeFile("m.toml",
                                         "backends = [\n"
                                         "  { name = \"a\", address = \"127.0.0.1:9001\", "
                                         "weight = 2 },\n"
                                         "]\n")});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_EQ(unstamped(etcd_->get(key_), start),
            "{\"backends\": [\n  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
            "\"weight\": 2}\n]}\n");
}

// FILE may be a whole lb config: its cluster's backends are the membership, judged under that
// cluster's own settings (ketama here: host:port hash_keys).
TEST_F(MembershipCliTest, LbConfigFileGivesItsClustersBackendsAndRules) {
  const std::string config = writeFile(
      "lb.toml",
      "[clusters.web]\nbackends = [ { name = \"w\", address = \"127.0.0.1:9000\" } ]\n"
      "[clusters.cache]\nselector = \"ketama\"\nbackends = [\n"
      "  { name = \"a\", address = \"127.0.0.1:9001\", hash_key = \"127.0.0.1:9001\" },\n]\n");
  const int64_t start = wallMs();
  const auto put = run("put", {"--cluster", "cache", config});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  EXPECT_EQ(unstamped(etcd_->get(key_), start),
            "{\"backends\": [\n  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\", "
            "\"hash_key\": \"127.0.0.1:9001\"}\n]}\n");

  const auto ambiguous = run("put", {config});
  EXPECT_EQ(ambiguous.exit_code, 2) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find("name the cluster with --cluster (clusters: web, cache)"),
            std::string::npos)
      << ambiguous.err;
}

// The hook writes the key after put read it and before its compare-and-swap: a second
// operator, without a timing race.
TEST_F(MembershipCliTest, WriteBetweenReadAndSwapIsAConflictAndOverwritesNothing) {
  const int64_t first = etcd_->put(key_, kFour);
  ASSERT_GT(first, 0);
  const std::string theirs =
      "{\"backends\": [{\"name\": \"z\", \"address\": \"127.0.0.1:9009\"}]}";
  const std::string mine = writeFile("m.json",
                                     "{\"backends\": [\n"
                                     "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
                                     "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\"},\n"
                                     "  {\"name\": \"c\", \"address\": \"127.0.0.1:9003\"},\n"
                                     "  {\"name\": \"e\", \"address\": \"127.0.0.1:9005\"}\n"
                                     "]}\n");
  const auto r =
      run("put", {mine}, {"LB_MEMBERSHIP_TEST_AFTER_READ=" + etcdctlPut(theirs)});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("conflict: " + key_ + " was written by someone else since it was read "
                       "at mod_revision " + std::to_string(first) + "; it is now at "
                       "mod_revision " + std::to_string(first + 1) + ". Nothing was written: "
                       "run `lb membership put` again"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(etcd_->get(key_), theirs);
}

TEST_F(MembershipCliTest, KeyCreatedBetweenReadAndSwapIsAConflict) {
  const std::string theirs =
      "{\"backends\": [{\"name\": \"z\", \"address\": \"127.0.0.1:9009\"}]}";
  const auto r = run("put", {writeFile("m.json", kFour)},
                     {"LB_MEMBERSHIP_TEST_AFTER_READ=" + etcdctlPut(theirs)});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("since it was read as not set"), std::string::npos) << r.err;
  EXPECT_EQ(etcd_->get(key_), theirs);
}

TEST_F(MembershipCliTest, DiffPrintsWhatMovesAndWritesNothing) {
  const int64_t before = etcd_->put(key_, kFour);
  ASSERT_GT(before, 0);
  const std::string three = writeFile("m.json",
                                      "{\"backends\": [\n"
                                      "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
                                      "  {\"name\": \"b\", \"address\": \"127.0.0.1:9012\"},\n"
                                      "  {\"name\": \"c\", \"address\": \"127.0.0.1:9003\", "
                                      "\"weight\": 2}\n"
                                      "]}\n");
  const auto r = run("diff", {three});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  - d  127.0.0.1:9004\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  ~ b  address 127.0.0.1:9002 -> 127.0.0.1:9012\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  ~ c  weight 1 -> 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backends: 4 -> 3 (0 added, 1 removed, 2 changed)\n"), std::string::npos)
      << r.out;
  // Shares 1/4 each -> a 1/4, b 1/4, c 1/2: only d's quarter is lost, so at least 25% move
  // (ideal); c's new points on the ring also take some of a's and b's keys (collateral).
  const size_t at = r.out.find("moved: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double moved = std::stod(r.out.substr(at + 7));
  EXPECT_GT(moved, 20.0) << r.out;
  EXPECT_LT(moved, 50.0) << r.out;
  EXPECT_NE(r.out.find("(ideal 25.00%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[ring_hash, 100000 sample keys]"), std::string::npos) << r.out;
  EXPECT_EQ(etcd_->get(key_), std::string(kFour));
  EXPECT_EQ(etcd_->revision(), before);
}

TEST_F(MembershipCliTest, RemovingThreeOfFourIsRefusedWithoutForce) {
  ASSERT_GT(etcd_->put(key_, kFour), 0);
  const std::string one = writeFile(
      "m.json", "{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\"}]}\n");
  const auto refused = run("put", {one});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("refusing: removes 3 of 4 backends (75%) at once; "
                             "max_remove_percent is 50"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(etcd_->get(key_), std::string(kFour));

  const auto forced = run("put", {"--force", one});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(etcd_->get(key_)->find("\"a\""), std::string::npos);
  EXPECT_EQ(etcd_->get(key_)->find("\"b\""), std::string::npos);
}

// --config/--cluster give the rules of the cluster the membership is for: jump has no
// weights, so a weight is an error there that ring_hash would accept.
TEST_F(MembershipCliTest, PutValidatesUnderTheConfiguredClustersSelector) {
  const std::string config = writeFile("lb.toml",
                                       "[clusters.shards]\n"
                                       "selector = \"jump\"\n"
                                       "backends = [ { name = \"a\", address = "
                                       "\"127.0.0.1:9001\" } ]\n");
  const std::string file = writeFile(
      "m.json",
      "{\"backends\": [{\"name\": \"a\", \"address\": \"127.0.0.1:9001\", \"weight\": 2}]}\n");
  const auto r = run("put", {"--config", config, "--cluster", "shards", file});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(file + ":1:68: backends[0].weight: jump has no weights"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(etcd_->get(key_), std::nullopt);
}

// A cluster with a membership table names its etcd, its key and its limit: `--config` alone
// is enough, and the instances' max_remove_percent (25 here) is the one put holds to.
TEST_F(MembershipCliTest, ConfigsMembershipTableGivesEtcdKeyAndLimit) {
  ASSERT_GT(etcd_->put(key_, kFour), 0);
  const std::string config = writeFile(
      "lb.toml", "[clusters.cache]\nmembership = { etcd = [\"" + etcd_->clientUrl() +
                     "\"], key = \"" + key_ + "\", max_remove_percent = 25 }\n");
  const std::string two = writeFile("two.json",
                                    "{\"backends\": [\n"
                                    "  {\"name\": \"a\", \"address\": \"127.0.0.1:9001\"},\n"
                                    "  {\"name\": \"b\", \"address\": \"127.0.0.1:9002\"}\n"
                                    "]}\n");
  const auto refused = test::runCommand(
      {test::builtBinary("lb"), "membership", "put", "--config", config, two},
      std::chrono::seconds(60));
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("removes 2 of 4 backends (50%) at once; max_remove_percent is 25"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(etcd_->get(key_), std::string(kFour));

  const auto get = test::runCommand(
      {test::builtBinary("lb"), "membership", "get", "--config", config, "--cluster", "cache"},
      std::chrono::seconds(60));
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out, kFour);
}

TEST_F(MembershipCliTest, GetOfAnAbsentKeyFails) {
  const auto r = run("get", {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(key_ + " is not set"), std::string::npos) << r.err;
}

TEST_F(MembershipCliTest, UnreachableEtcdIsAnErrorNamingTheEndpoint) {
  const std::string url = "http://127.0.0.1:" + std::to_string(test::freePort());
  const auto r = test::runCommand({test::builtBinary("lb"), "membership", "get", "--etcd", url,
                                   "--key", key_},
                                  std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot read " + key_ + " from " + url), std::string::npos) << r.err;
}

TEST_F(MembershipCliTest, UsageErrorsExitTwo) {
  const auto r = test::runCommand({test::builtBinary("lb"), "membership", "put", "--key", "k"},
                                  std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--etcd URL is required"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage: lb membership"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lb
