// Redis checks against a fleet with requirepass: a real redis-server started with
// --requirepass behind a redis listener whose cluster has `password` and
// `health = { type = "redis" }`. The check AUTHs with the cluster's password before PING (as
// lb's data connections do), so the right password keeps the backend up; a wrong one takes
// it down with the AUTH's own refusal as the reason, not as a dead server; no password says
// the server wants one. Also what a client of the listener gets when the cluster's password
// is wrong (the data connection's AUTH refused).
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cache_server.h"
#include "tests/support/health_harness.h"
#include "tests/support/lb_fixture.h"

namespace lb::test {
namespace {

constexpr const char* kPassword = "s3cret";
// Redis 7 acl.c, a password no user has.
constexpr const char* kWrongPass =
    "-WRONGPASS invalid username-password pair or user is disabled.";

class HealthRedisAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_ = std::make_unique<CacheServer>(CacheServer::kRedis,
                                           std::vector<std::string>{"--requirepass", kPassword});
    ASSERT_TRUE(redis_->ok()) << redis_->output();
  }
  void TearDown() override {
    if (started_) {
      EXPECT_EQ(lb_.process().stop(15, 10s), std::optional<int>(0)) << lb_.output();
    }
  }

  // lb with one redis listener in front of the server; `cluster_extra`: TOML lines of the
  // cluster (password, health).
  void startLb(const std::string& cluster_extra) {
    port_ = freePort();
    admin_ = freePort();
    const std::string toml =
        "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
        std::to_string(admin_) + "\"\n[listeners.cache]\nlisten = \"127.0.0.1:" +
        std::to_string(port_) + "\"\nprotocol = \"redis\"\ncluster = \"fleet\"\n" +
        "[clusters.fleet]\n" + cluster_extra + "\nbackends = [ { name = \"s1\", address = \"" +
        redis_->address() + "\" } ]\n";
    started_ = true;
    ASSERT_TRUE(lb_.start(toml, {port_, admin_})) << lb_.output();
  }
  static std::string health() {
    return "health = { type = \"redis\", interval = \"100ms\", timeout = \"100ms\", rise = 2, "
           "fall = 2 }\n";
  }
  static std::string password(const std::string& p) { return "password = \"" + p + "\"\n"; }
  BackendHealthView view() { return backendHealth(admin_, "fleet", "s1"); }

  std::unique_ptr<CacheServer> redis_;
  LbProcess lb_;
  bool started_ = false;
  uint16_t port_ = 0, admin_ = 0;
};

TEST_F(HealthRedisAuthTest, ChecksPassWithTheClustersPassword) {
  startLb(password(kPassword) + health());
  ASSERT_TRUE(waitUntil([&] { return view().last_result == "ok"; }, 5s))
      << "last check: " << view().last_result << "; " << lb_.output();
  const auto v = view();
  EXPECT_TRUE(v.healthy);
  EXPECT_EQ(v.health, "up");
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  EXPECT_EQ(redisCall(c, {"PING"}), "PONG");
}

TEST_F(HealthRedisAuthTest, AWrongPasswordIsReportedAsTheAuthFailingNotAsADeadServer) {
  startLb(password("not-the-password") + health());
  ASSERT_TRUE(waitUntil([&] { return view().health == "down"; }, 5s)) << lb_.output();
  const auto v = view();
  EXPECT_FALSE(v.healthy);
  EXPECT_EQ(v.last_result, "fail");
  EXPECT_EQ(v.reason, std::string("2 checks failed (last: redis AUTH failed: ") + kWrongPass + ")");
  EXPECT_NE(lb_.output().find(std::string("backend s1 down: 2 checks failed (last: redis AUTH "
                                          "failed: ") +
                              kWrongPass + ")"),
            std::string::npos)
      << lb_.output();
}

TEST_F(HealthRedisAuthTest, NoPasswordAgainstRequirepassSaysTheServerWantsOne) {
  startLb(health());
  ASSERT_TRUE(waitUntil([&] { return view().health == "down"; }, 5s)) << lb_.output();
  EXPECT_EQ(view().reason,
            "2 checks failed (last: redis PING refused: -NOAUTH Authentication required. (the "
            "server wants a password; the cluster has none))");
}

// lb/proxy/cache/server_connection.cc: the AUTH of lb's own connection is refused; every command
// queued on that connection is answered with the refusal, the connection is closed.
TEST_F(HealthRedisAuthTest, AClientIsToldTheBackendRefusedLbsAuth) {
  startLb(password("not-the-password"));
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  EXPECT_EQ(redisCall(c, {"GET", "k"}),
            std::string("-ERR lb: backend s1 refused lb's AUTH: ") + kWrongPass);
  // The client's own connection stays: the next command is tried on a new one.
  EXPECT_EQ(redisCall(c, {"GET", "k"}),
            std::string("-ERR lb: backend s1 refused lb's AUTH: ") + kWrongPass);
}

}  // namespace
}  // namespace lb::test
