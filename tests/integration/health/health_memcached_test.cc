// The memcached and tcp check types against real memcached servers behind a tcp listener:
//  - `type = "memcached"` sends `version` and passes on its VERSION line; a server frozen
//    with SIGSTOP (the kernel still accepts, nothing answers) is down after `fall` checks
//    timed out, and up again after `rise` passes once it runs again;
//  - a reload keeps the health of the servers that stay: a down server is still down after
//    it, and comes back under the reloaded `rise`;
//  - `type = "tcp"` passes on a connect alone; a server that is gone (its connects refused)
//    is down with the refusal as its reason.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/cache_server.h"
#include "tests/support/health_harness.h"
#include "tests/support/lb_fixture.h"

namespace lb::test {
namespace {

class HealthMemcachedTest : public ::testing::Test {
 protected:
  void startLb(const std::string& check) {
    for (int i = 0; i < 2; ++i) {
      mc_.push_back(std::make_unique<CacheServer>(CacheServer::kMemcached));
      ASSERT_TRUE(mc_.back()->ok()) << mc_.back()->output();
    }
    port_ = freePort();
    admin_ = freePort();
    const std::string toml = config(check, 2);
    started_ = true;
    ASSERT_TRUE(lb_.start(toml, {port_, admin_})) << lb_.output();
    for (const char* n : {"mc-0", "mc-1"})
      ASSERT_TRUE(waitUntil([&] { return checks(n, "ok") >= 1; }, 5s)) << n << lb_.output();
  }

  // Two workers, a tcp listener keyed by five-tuple over mc-0 and mc-1, checks of `check`
  // type every 200 ms (timeout 100 ms, fall 2) that need `rise` passes to bring one back.
  std::string config(const std::string& check, int rise) {
    return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
           std::to_string(admin_) + "\"\n[listeners.mc]\nlisten = \"127.0.0.1:" +
           std::to_string(port_) +
           "\"\nprotocol = \"tcp\"\ncluster = \"mc\"\nhash = [ { five_tuple = true } ]\n"
           "[clusters.mc]\nselector = \"ring_hash\"\n"
           "health = { type = \"" + check +
           "\", interval = \"200ms\", timeout = \"100ms\", rise = " + std::to_string(rise) +
           ", fall = 2 }\n"
           "backends = [\n"
           "  { name = \"mc-0\", address = \"" + mc_[0]->address() + "\" },\n"
           "  { name = \"mc-1\", address = \"" + mc_[1]->address() + "\" },\n]\n";
  }
  double transitions(const std::string& backend, const std::string& to) {
    return metricSample(admin_, "lb_backend_health_transitions_total",
                        "backend=\"" + backend + "\",cluster=\"mc\",to=\"" + to + "\"");
  }

  void TearDown() override {
    for (auto& m : mc_)
      if (m->ok()) thaw(m->process());
    if (started_) {
      EXPECT_EQ(lb_.process().stop(15, 10s), std::optional<int>(0)) << lb_.output();
    }
  }

  double checks(const std::string& backend, const std::string& result) {
    return metricSample(admin_, "lb_backend_health_checks_total",
                        "backend=\"" + backend + "\",cluster=\"mc\",result=\"" + result + "\"");
  }
  BackendHealthView view(const std::string& backend) {
    return backendHealth(admin_, "mc", backend);
  }

  std::vector<std::unique_ptr<CacheServer>> mc_;
  LbProcess lb_;
  bool started_ = false;
  uint16_t port_ = 0, admin_ = 0;
};

TEST_F(HealthMemcachedTest, AFrozenServerFailsItsVersionChecksAndComesBackAfterRise) {
  startLb("memcached");
  if (HasFatalFailure()) return;
  EXPECT_EQ(view("mc-0").health, "up");
  EXPECT_EQ(checks("mc-0", "fail") + checks("mc-0", "timeout"), 0) << "VERSION is a pass";

  freeze(mc_[0]->process());
  ASSERT_TRUE(waitUntil([&] { return !view("mc-0").healthy; }, 5s)) << lb_.output();
  EXPECT_EQ(view("mc-0").health, "down");
  EXPECT_EQ(view("mc-0").reason, "2 checks timed out after 100ms");
  EXPECT_TRUE(view("mc-1").healthy) << "the other server is untouched";

  thaw(mc_[0]->process());
  ASSERT_TRUE(waitUntil([&] { return view("mc-0").healthy; }, 5s)) << lb_.output();
  EXPECT_EQ(view("mc-0").reason, "2 checks passed");
  EXPECT_NE(lb_.output().find("backend mc-0 down: 2 checks timed out after 100ms (cluster mc)"),
            std::string::npos)
      << lb_.output();
  EXPECT_NE(lb_.output().find("backend mc-0 up: 2 checks passed (cluster mc)"),
            std::string::npos);
}

TEST_F(HealthMemcachedTest, AReloadKeepsTheHealthOfServersThatStay) {
  startLb("memcached");
  if (HasFatalFailure()) return;
  freeze(mc_[0]->process());
  ASSERT_TRUE(waitUntil([&] { return !view("mc-0").healthy; }, 5s)) << lb_.output();

  // Same servers, a stricter rise: the down one stays down, nobody goes through a transition.
  ASSERT_TRUE(lb_.reload(config("memcached", 3))) << lb_.output();
  EXPECT_FALSE(view("mc-0").healthy) << "a reload brought a down server back";
  EXPECT_EQ(view("mc-0").reason, "2 checks timed out after 100ms");
  EXPECT_TRUE(view("mc-1").healthy);
  EXPECT_EQ(transitions("mc-0", "down"), 1);
  EXPECT_EQ(transitions("mc-0", "up"), 0);
  EXPECT_EQ(transitions("mc-1", "down"), 0);

  thaw(mc_[0]->process());
  ASSERT_TRUE(waitUntil([&] { return view("mc-0").healthy; }, 5s)) << lb_.output();
  EXPECT_EQ(view("mc-0").reason, "3 checks passed") << "the reloaded rise applies";
  EXPECT_EQ(transitions("mc-0", "up"), 1);
}

TEST_F(HealthMemcachedTest, ATcpCheckTakesDownAServerWhoseConnectsAreRefused) {
  startLb("tcp");
  if (HasFatalFailure()) return;
  EXPECT_EQ(view("mc-1").health, "up");
  mc_[1]->process().stop(9, 5s);   // gone: its port refuses connects
  ASSERT_TRUE(waitUntil([&] { return !view("mc-1").healthy; }, 5s)) << lb_.output();
  EXPECT_EQ(view("mc-1").reason, "2 checks failed (last: connect: Connection refused)");
  EXPECT_TRUE(view("mc-0").healthy);
  // Clients of the listener are served by the server that is left.
  for (int i = 0; i < 4; ++i) {
    TcpClient c;
    ASSERT_TRUE(c.connect(port_));
    ASSERT_TRUE(c.send("version\r\n"));
    ASSERT_TRUE(c.readUntil("\r\n", 2s)) << "connection " << i;
    EXPECT_EQ(c.buffer().substr(0, 8), "VERSION ") << "connection " << i;
  }
}

}  // namespace
}  // namespace lb::test
