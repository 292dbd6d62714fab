// What an HTTP connection holds while it waits: a kept-alive connection between requests, or
// a new one that has sent nothing, holds no buffer block and no exchange (the parsers and
// header views come from the worker's HttpExchangePool only while a request is in flight).
// HttpSession on a real libuv loop (tests/support/proxy_loop.h), a keep-alive backend on blocking
// sockets, and the test thread as the client.
#include <netinet/in.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lb/proxy/http/http_session.h"
#include "lb/runtime/listener.h"
#include "lb/runtime/worker_env.h"
#include "tests/support/proxy_loop.h"
#include "tests/support/tcp_test_servers.h"

namespace lb {
namespace {

using namespace std::chrono_literals;
using test::BlockingServer;
using test::Client;

constexpr char kReply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// Answers every request head on the connection with kReply, keeping it open.
void keepAliveOrigin(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
    for (size_t end; (end = in.find("\r\n\r\n")) != std::string::npos;) {
      in.erase(0, end + 4);
      if (!BlockingServer::writeAll(fd, kReply)) return;
    }
  }
}

class OneHost final : public SelectorTable {
 public:
  uint32_t pick(uint64_t, uint32_t) const noexcept override { return 0; }
  uint32_t hostCount() const noexcept override { return 1; }
  size_t memoryBytes() const noexcept override { return 0; }
};

std::shared_ptr<Snapshot> makeSnapshot(uint16_t backend_port) {
  auto snap = std::make_shared<Snapshot>();
  ClusterConfig cc;
  cc.name = "c";
  cc.backends.push_back({"b0", "127.0.0.1:" + std::to_string(backend_port), 1, "", "", {}});
  snap->config.clusters.push_back(cc);
  ListenerConfig lc;
  lc.name = "web";
  lc.protocol = Protocol::kHttp;
  lc.cluster = "c";
  lc.on_missing_key = OnMissingKey::kRoundRobin;
  snap->config.listeners.push_back(lc);

  ClusterSnapshot& cs = snap->clusters.emplace_back();
  cs.config = &snap->config.clusters[0];
  cs.table = std::make_unique<OneHost>();
  cs.backends.resize(1);
  auto cluster_load = std::make_shared<ClusterLoadState>();
  BackendSnapshot& b = cs.backends[0];
  b.config = &cs.config->backends[0];
  b.state = std::make_shared<BackendState>("c", b.config->name, 1, cluster_load);
  uv_ip4_addr("127.0.0.1", backend_port, reinterpret_cast<sockaddr_in*>(&b.address));
  b.address_len = sizeof(sockaddr_in);
  cs.loads = std::make_unique<ClusterLoads>(&cs.backends, cluster_load);
  cs.rotation = Rotation(1);
  ListenerSnapshot& ls = snap->listeners.emplace_back();
  ls.config = &snap->config.listeners[0];
  ls.cluster = 0;
  ls.state = std::make_shared<ListenerState>("web", 1);
  return snap;
}

void acceptHttp(WorkerEnv& env, uv_stream_t* server, const AcceptTransport* transport,
                const std::shared_ptr<const Snapshot>& snap, uint32_t listener,
                Admission admission) {
  HttpSession::accept(&env, server, transport, snap, &snap->listeners[listener], admission);
}

// Exchanges the worker's pool has handed out / keeps cached. Loop thread, or after stop.
size_t exchangesOut(WorkerEnv& env) {
  auto* pool = env.findService<HttpExchangePool>();
  return pool == nullptr ? 0 : pool->exchanges().outstanding();
}
size_t exchangesCached(WorkerEnv& env) {
  auto* pool = env.findService<HttpExchangePool>();
  return pool == nullptr ? 0 : pool->exchanges().freeCount();
}

// HttpSession behind the test loop; stop() also checks every exchange went back to the pool.
class ProxyLoop : public test::ProxyLoop {
 public:
  explicit ProxyLoop(std::shared_ptr<const Snapshot> snap)
      : test::ProxyLoop(std::move(snap), acceptHttp) {}
  ~ProxyLoop() {
    stop();
    EXPECT_EQ(exchangesOut(), 0u) << "an exchange was not returned to the pool";
  }
  size_t exchangesOut() { return lb::exchangesOut(env()); }
  size_t exchangesCached() { return lb::exchangesCached(env()); }
};

// True when lb's answer on `c` is a complete 200 with the origin's body.
bool readAnswer(Client& c) {
  std::string r;
  while (r.size() < 4096 && !(r.find("\r\n\r\n") != std::string::npos && r.ends_with("ok"))) {
    std::string b = c.readExactly(1);
    if (b.empty()) return false;
    r += b;
  }
  return r.starts_with("HTTP/1.1 200");
}

bool get(Client& c) { return c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n") && readAnswer(c); }

TEST(HttpSessionIdleTest, KeptAliveConnectionsGiveTheirExchangeAndBlocksBackBetweenRequests) {
  BlockingServer origin(keepAliveOrigin);
  ProxyLoop proxy(makeSnapshot(origin.port()));
  constexpr size_t kConns = 4;
  std::vector<Client> clients(kConns);
  for (auto& c : clients) {
    ASSERT_TRUE(c.connect(proxy.port()));
    ASSERT_TRUE(get(c));
  }
  // Every connection is open and idle: no exchange out, every one back in the pool's cache,
  // and no buffer block held by any of them.
  EXPECT_TRUE(proxy.waitFor([&] {
    return proxy.env().sessionCount() == kConns && proxy.exchangesOut() == 0 &&
           proxy.env().buffers().outstanding() == 0;
  })) << "exchanges out: " << proxy.exchangesOut();
  size_t cached = 0;
  proxy.run([&] { cached = proxy.exchangesCached(); });
  EXPECT_GE(cached, 1u);
  // They still serve, and the second round reuses the cached exchanges: the cache does not
  // grow past its size after the first round (one request in flight at a time here).
  for (auto& c : clients) ASSERT_TRUE(get(c));
  EXPECT_TRUE(proxy.waitFor([&] {
    return proxy.exchangesOut() == 0 && proxy.exchangesCached() == cached &&
           proxy.env().buffers().outstanding() == 0;
  }));
}

TEST(HttpSessionIdleTest, ConnectionsThatSentNothingHoldNoExchangeNorBlock) {
  BlockingServer origin(keepAliveOrigin);
  ProxyLoop proxy(makeSnapshot(origin.port()));
  constexpr size_t kConns = 4;
  std::vector<Client> clients(kConns);
  for (auto& c : clients) ASSERT_TRUE(c.connect(proxy.port()));
  EXPECT_TRUE(proxy.waitFor([&] { return proxy.env().sessionCount() == kConns; }));
  proxy.run([&] {
    EXPECT_EQ(proxy.exchangesOut(), 0u);
    EXPECT_EQ(proxy.env().buffers().outstanding(), 0u);
  });
  // The first byte takes an exchange; the answered request gives it back.
  ASSERT_TRUE(clients[0].send("G"));
  EXPECT_TRUE(proxy.waitFor([&] { return proxy.exchangesOut() == 1; }));
  ASSERT_TRUE(clients[0].send("ET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_TRUE(readAnswer(clients[0]));
  EXPECT_TRUE(proxy.waitFor([&] {
    return proxy.exchangesOut() == 0 && proxy.env().buffers().outstanding() == 0;
  }));
}

TEST(HttpSessionIdleTest, PoolKeepsAtMostItsBoundAndAllocatesOnlyPastItsCache) {
  struct Thing {
    int n = 0;
  };
  ObjectPool<Thing> pool(2);
  std::vector<Thing*> out;
  for (int i = 0; i < 5; ++i) out.push_back(pool.get());
  EXPECT_EQ(pool.outstanding(), 5u);
  for (Thing* t : out) pool.put(t);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.freeCount(), 2u);   // the other three were freed
  Thing* again = pool.get();         // from the cache: the object as it was given back
  EXPECT_TRUE(again == out[0] || again == out[1]);
  pool.put(again);
}

}  // namespace
}  // namespace lb
