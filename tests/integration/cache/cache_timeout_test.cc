// timeouts.response on a redis listener: a frozen server (SIGSTOP) costs the commands sent to
// it a timeout error; commands for the other servers, on the same connection or another
// one, are answered meanwhile, and lb_backend_commands_total counts the timeouts.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

class CacheTimeoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("timeouts = { connect = \"1s\", response = \"300ms\", idle = \"1m\" }"))
        << fleet_.output();
    // One key on s1 (to be frozen) and one elsewhere.
    std::vector<std::string> candidates;
    for (int i = 0; i < 60; ++i) candidates.push_back("user:" + std::to_string(i * 7));
    const auto owners = fleet_.ringOwners(candidates);
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (owners[i] == "s1" && frozen_key_.empty()) frozen_key_ = candidates[i];
      if (owners[i] != "s1" && owners[i] != "?" && live_key_.empty()) live_key_ = candidates[i];
    }
    ASSERT_FALSE(frozen_key_.empty());
    ASSERT_FALSE(live_key_.empty());
    TcpClient c;
    ASSERT_TRUE(c.connect(fleet_.port()));
    ASSERT_EQ(redisCall(c, {"SET", frozen_key_, "cold"}), "OK");
    ASSERT_EQ(redisCall(c, {"SET", live_key_, "warm"}), "OK");
  }
  void TearDown() override {
    kill(fleet_.server(0).pid(), SIGCONT);
    EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output();
  }

  CacheFleet fleet_{CacheServer::kRedis, 3};
  std::string frozen_key_, live_key_;
};

TEST_F(CacheTimeoutTest, AFrozenServerCostsOnlyItsOwnCommandsATimeoutError) {
  ASSERT_EQ(kill(fleet_.server(0).pid(), SIGSTOP), 0);
  TcpClient a, b;
  ASSERT_TRUE(a.connect(fleet_.port()));
  ASSERT_TRUE(b.connect(fleet_.port()));
  // a: the frozen key, then a live one, pipelined; b: a live one.
  ASSERT_TRUE(a.send(redisEncode({"GET", frozen_key_}) + redisEncode({"GET", live_key_})));
  ASSERT_TRUE(b.send(redisEncode({"GET", live_key_})));
  auto b_reply = readResp(b);
  ASSERT_TRUE(b_reply);
  EXPECT_EQ(b_reply->text, "warm");
  EXPECT_EQ(a.buffer(), "") << "b's answer should not wait for the frozen server";

  auto timed_out = readResp(a);
  ASSERT_TRUE(timed_out);
  EXPECT_EQ(timed_out->text, "-ERR lb: backend s1 timed out after 300ms");
  auto after = readResp(a);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->text, "warm");
  EXPECT_EQ(redisCall(a, {"PING"}), "PONG");

  const std::string metrics = fleet_.metrics();
  EXPECT_NE(metrics.find("lb_backend_commands_total{backend=\"s1\",cluster=\"fleet\",result=\"timeout\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("lb_cache_errors_total{listener=\"cache\",reason=\"backend_timeout\"} 1"),
            std::string::npos)
      << metrics;

  // Thawed, the server answers again through lb.
  ASSERT_EQ(kill(fleet_.server(0).pid(), SIGCONT), 0);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  std::optional<std::string> v;
  while (std::chrono::steady_clock::now() < deadline) {
    v = redisCall(a, {"GET", frozen_key_});
    if (v == "cold") break;
  }
  EXPECT_EQ(v, "cold");
}

}  // namespace
}  // namespace lb::test
