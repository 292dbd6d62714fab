// The runtime under the HTTP proxy: workers bind their own SO_REUSEPORT listeners, a new
// snapshot opens and closes listeners to match, a taken port fails start, stop joins.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "lb/app/worker_group.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb {
namespace {

using namespace std::chrono_literals;

Config configWith(const std::vector<std::pair<std::string, uint16_t>>& listeners) {
  Config c;
  c.workers = 2;
  ClusterConfig cluster;
  cluster.name = "c";
  BackendConfig b;
  b.name = "a";
  b.address = "127.0.0.1:" + std::to_string(test::freePort());   // nobody listens: 502
  cluster.backends.push_back(b);
  c.clusters.push_back(cluster);
  for (const auto& [name, port] : listeners) {
    ListenerConfig l;
    l.name = name;
    l.listen = "127.0.0.1:" + std::to_string(port);
    l.cluster = "c";
    c.listeners.push_back(l);
  }
  return c;
}

bool accepts(uint16_t port) {
  test::TcpClient c;
  return c.connect(port, 1s);
}

// Waits (bounded) until the port's state is `want`.
bool eventually(uint16_t port, bool want) {
  for (auto end = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < end;) {
    if (accepts(port) == want) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(HttpWorkerTest, EveryWorkerServesTheListenerAndStopClosesIt) {
  uint16_t port = test::freePort();
  WorkerGroup server(2);
  auto snap = buildSnapshot(configWith({{"web", port}}), server.registry(), 1);
  ASSERT_TRUE(snap.ok());
  std::string error;
  ASSERT_TRUE(server.start(snap.value(), &error)) << error;
  // A request proves a session runs on the worker: no backend listens, so 502.
  auto r = test::httpExchange(port, test::httpRequest("GET", "/"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 502);
  server.stop();
  EXPECT_FALSE(accepts(port));
}

TEST(HttpWorkerTest, NewSnapshotOpensAddedListenersAndClosesDroppedOnes) {
  uint16_t a = test::freePort(), b = test::freePort();
  WorkerGroup server(2);
  auto first = buildSnapshot(configWith({{"a", a}}), server.registry(), 1);
  ASSERT_TRUE(first.ok());
  std::string error;
  ASSERT_TRUE(server.start(first.value(), &error)) << error;
  EXPECT_TRUE(accepts(a));
  auto second = buildSnapshot(configWith({{"b", b}}), server.registry(), 2);
  ASSERT_TRUE(second.ok());
  server.applySnapshot(second.value());
  EXPECT_TRUE(eventually(b, true));
  EXPECT_TRUE(eventually(a, false));
  server.stop();
}

TEST(HttpWorkerTest, StartFailsWhenThePortIsHeldWithoutReuseport) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof sin;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len);
  WorkerGroup server(2);
  auto snap = buildSnapshot(configWith({{"web", ntohs(sin.sin_port)}}), server.registry(), 1);
  ASSERT_TRUE(snap.ok());
  std::string error;
  EXPECT_FALSE(server.start(snap.value(), &error));
  EXPECT_NE(error.find("listeners.web"), std::string::npos) << error;
  close(fd);
}

TEST(HttpWorkerTest, WorkersZeroMeansOnePerCore) {
  EXPECT_EQ(resolveWorkerCount(3), 3u);
  EXPECT_GE(resolveWorkerCount(0), 1u);
}

}  // namespace
}  // namespace lb
