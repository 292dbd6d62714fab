// SIGTERM/SIGINT drain against a real lb: requests in flight finish, new connections are
// refused, the drain timeout bounds the wait, and lb exits 0.
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

std::string drainConfig(uint16_t port, const std::string& backends, const std::string& timeout,
                        uint16_t admin = 0) {
  return "[lb]\nworkers = 2\naccess_log = \"\"\ndrain_timeout = \"" + timeout +
         "\"\n[admin]\nlisten = \"127.0.0.1:" + std::to_string(admin ? admin : freePort()) +
         "\"\n[listeners.web]\nlisten = \"127.0.0.1:" + std::to_string(port) +
         "\"\nprotocol = \"http\"\ncluster = \"origins\"\nhash = [ { path = true } ]\n"
         "[clusters.origins]\nselector = \"maglev\"\nbackends = [\n" + backends + "]\n";
}

// Waits until the origin has parsed `n` request heads besides its /stats probes.
bool waitServed(OriginFleet& fleet, long n) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  long probes = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    ++probes;
    if (fleet.requestsServed(0) - probes >= n) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(DrainTest, SigtermLetsSixtyFourSlowRequestsFinishThenExitsZero) {
  OriginFleet fleet(1);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(drainConfig(port, fleet.backends(1), "20s"), {port})) << lb.output();
  constexpr int kRequests = 64;
  std::vector<std::unique_ptr<TcpClient>> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(clients.back()->connect(port));
    ASSERT_TRUE(clients.back()->send(
        httpRequest("GET", "/slow/" + std::to_string(i) + "?delay_ms=1500")));
  }
  // Every request has reached the origin (is in flight in lb) before the signal.
  ASSERT_TRUE(waitServed(fleet, kRequests)) << lb.output();
  kill(lb.process().pid(), SIGTERM);
  for (int i = 0; i < kRequests; ++i) {
    HttpResponse r = readHttpResponse(*clients[i], false, 10s);
    ASSERT_TRUE(r) << "request " << i << ": " << r.error;
    EXPECT_EQ(r.status, 200) << "request " << i;
  }
  auto code = lb.process().waitExit(10s);
  ASSERT_TRUE(code.has_value()) << "lb did not exit after the drain\n" << lb.output();
  EXPECT_EQ(*code, 0) << lb.output();
}

TEST(DrainTest, NewConnectionsAreRefusedWhileDraining) {
  OriginFleet fleet(1);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(drainConfig(port, fleet.backends(1), "20s"), {port})) << lb.output();
  TcpClient slow;
  ASSERT_TRUE(slow.connect(port));
  ASSERT_TRUE(slow.send(httpRequest("GET", "/?delay_ms=2000")));
  ASSERT_TRUE(waitServed(fleet, 1));
  kill(lb.process().pid(), SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (waitForPort(port, 0ms) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(waitForPort(port, 0ms)) << "lb still accepts while draining";
  EXPECT_TRUE(lb.process().running()) << "lb exited with a request in flight";
  HttpResponse r = readHttpResponse(slow, false, 10s);
  EXPECT_EQ(r.status, 200) << r.error;
  auto code = lb.process().waitExit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

TEST(DrainTest, ReadyAnswers503WhileDraining) {
  OriginFleet fleet(1);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  LbProcess lb;
  uint16_t port = freePort(), admin = freePort();
  ASSERT_TRUE(lb.start(drainConfig(port, fleet.backends(1), "20s", admin), {port, admin}))
      << lb.output();
  EXPECT_EQ(httpExchange(admin, httpRequest("GET", "/ready")).status, 200);
  TcpClient slow;
  ASSERT_TRUE(slow.connect(port));
  ASSERT_TRUE(slow.send(httpRequest("GET", "/?delay_ms=1500")));
  ASSERT_TRUE(waitServed(fleet, 1));
  kill(lb.process().pid(), SIGTERM);
  // A load balancer in front polls /ready: it must see 503 while the request finishes.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    status = httpExchange(admin, httpRequest("GET", "/ready")).status;
    if (status == 503) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(status, 503) << lb.output();
  EXPECT_EQ(readHttpResponse(slow, false, 10s).status, 200);
  auto code = lb.process().waitExit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

TEST(DrainTest, DrainTimeoutEndsTheWaitAndStillExitsZero) {
  OriginFleet fleet(1);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  LbProcess lb;
  uint16_t port = freePort();
  ASSERT_TRUE(lb.start(drainConfig(port, fleet.backends(1), "300ms"), {port})) << lb.output();
  TcpClient stuck;
  ASSERT_TRUE(stuck.connect(port));
  ASSERT_TRUE(stuck.send(httpRequest("GET", "/?delay_ms=30000")));
  ASSERT_TRUE(waitServed(fleet, 1));
  auto code = lb.process().stop(SIGINT, 10s);
  ASSERT_TRUE(code.has_value()) << "lb waited past its drain timeout\n" << lb.output();
  EXPECT_EQ(*code, 0) << lb.output();
  EXPECT_TRUE(stuck.waitClosed(5s));
}

TEST(DrainTest, OpenTcpConnectionKeepsWorkingUntilItCloses) {
  CacheServer mc(CacheServer::kMemcached);
  ASSERT_TRUE(mc.ok()) << mc.output();
  LbProcess lb;
  uint16_t port = freePort();
  std::string toml =
      "[lb]\nworkers = 1\naccess_log = \"\"\ndrain_timeout = \"20s\"\n[admin]\nlisten = "
      "\"127.0.0.1:" + std::to_string(freePort()) +
      "\"\n[listeners.mc]\nlisten = \"127.0.0.1:" + std::to_string(port) +
      "\"\nprotocol = \"tcp\"\ncluster = \"mc\"\nhash = [ { source_ip = true } ]\n"
      "[clusters.mc]\nselector = \"ring_hash\"\nbackends = [ { name = \"mc\", address = \"" +
      mc.address() + "\" } ]\n";
  ASSERT_TRUE(lb.start(toml, {port})) << lb.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  ASSERT_TRUE(c.send("version\r\n"));
  ASSERT_TRUE(c.readUntil("\r\n"));
  c.take(c.buffer().size());
  kill(lb.process().pid(), SIGTERM);
  ASSERT_TRUE(lb.process().waitForOutput("draining", 5s)) << lb.output();
  ASSERT_TRUE(c.send("set k 0 0 1\r\nx\r\n"));
  ASSERT_TRUE(c.readUntil("\r\n")) << "the connection stopped working during the drain";
  EXPECT_EQ(c.buffer(), "STORED\r\n");
  EXPECT_TRUE(lb.process().running());
  c.close();
  auto code = lb.process().waitExit(10s);
  ASSERT_TRUE(code.has_value()) << "lb did not exit once the connection closed\n" << lb.output();
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace lb::test
