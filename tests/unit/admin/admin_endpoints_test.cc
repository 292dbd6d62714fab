// The admin entry points (startAdmin/stopAdmin/noteReload) end to end on a real loopback
// socket: each path, its status and Content-Type, and a stop that closes every handle.
#include <gtest/gtest.h>

#include <atomic>

#include "lb/admin/admin.h"
#include "lb/admin/admin_server.h"
#include "lb/admin/metrics.h"
#include "tests/support/admin_test_support.h"
#include "tests/support/json_reader.h"
#include "tests/support/metrics_test_snapshot.h"

namespace lb {
namespace {

using testing::httpGet;
using testing::JsonReader;

class AdminEndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snap_ = testing::buildTestSnapshot(registry_);
    ASSERT_NE(snap_, nullptr);
    AdminHooks hooks{[this] { return snap_; }, [this] { return draining_.load(); }};
    admin_ = loop_.run([&] {
      std::string error;
      Admin* a = startAdmin(loop_.loop(), "127.0.0.1:0", hooks, &error);
      EXPECT_NE(a, nullptr) << error;
      return a;
    });
    ASSERT_NE(admin_, nullptr);
    port_ = loop_.run([this] { return admin_->port(); });
  }
  void TearDown() override {
    loop_.run([this] { stopAdmin(admin_); });
    EXPECT_TRUE(loop_.stop()) << "stopAdmin left a handle open";
  }

  StateRegistry registry_{2};
  std::shared_ptr<const Snapshot> snap_;
  std::atomic<bool> draining_{false};
  testing::LoopThread loop_;
  Admin* admin_ = nullptr;
  int port_ = 0;
};

TEST_F(AdminEndpointsTest, MetricsServesTextExposition) {
  auto r = httpGet(port_, "/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r->body.find("lb_backend_weight{backend=\"cache-c\",cluster=\"cache\"} 2\n"),
            std::string::npos);
  EXPECT_NE(r->body.find("process_open_fds "), std::string::npos);
}

TEST_F(AdminEndpointsTest, MetricsShowsReloadsNoted) {
  loop_.run([this] { noteReload(admin_, false); });
  auto r = httpGet(port_, "/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("lb_config_reloads_total{result=\"failure\"} 1\n"), std::string::npos);
}

TEST_F(AdminEndpointsTest, ReadyAnswers200UntilDraining) {
  auto ready = httpGet(port_, "/ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "ready\n");
  draining_ = true;
  auto draining = httpGet(port_, "/ready");
  ASSERT_TRUE(draining);
  EXPECT_EQ(draining->status, 503);
  EXPECT_EQ(draining->body, "draining\n");
}

TEST_F(AdminEndpointsTest, BackendsServesJson) {
  auto r = httpGet(port_, "/backends");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("content-type"), "application/json");
  auto doc = JsonReader::parse(r->body);
  EXPECT_EQ(doc["clusters"][0]["backends"].items().size(), 3u);
}

TEST_F(AdminEndpointsTest, RingServesJsonForAKey) {
  auto r = httpGet(port_, "/ring?cluster=cache&key=user%3A7");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(JsonReader::parse(r->body)["key"].asString(), "user:7");
}

TEST_F(AdminEndpointsTest, RingWithoutKeyIs400) {
  auto r = httpGet(port_, "/ring?cluster=cache");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

TEST_F(AdminEndpointsTest, UnknownPathIs404) {
  auto r = httpGet(port_, "/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(AdminEndpointsTest, StopClosesAnOpenClientConnection) {
  testing::HttpClient idle(port_);
  idle.send("GET /ready HTTP/1.1\r\nHost: x\r\n\r\n");   // accepted, then kept alive
  ASSERT_TRUE(idle.read());
  loop_.run([this] { stopAdmin(admin_); });
  admin_ = nullptr;   // TearDown's stopAdmin(nullptr) is a no-op
  EXPECT_TRUE(idle.closedByPeer());
}

TEST(AdminStartTest, ReportsBindFailure) {
  testing::LoopThread loop;
  std::string error;
  Admin* a = loop.run([&] { return startAdmin(loop.loop(), "127.0.0.1:notaport", {}, &error); });
  EXPECT_EQ(a, nullptr);
  EXPECT_FALSE(error.empty());
  EXPECT_TRUE(loop.stop());
}

}  // namespace
}  // namespace lb
