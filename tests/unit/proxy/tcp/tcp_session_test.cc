// TcpSession on a real libuv loop with real loopback sockets: a proxy loop on its own thread
// (a WorkerEnv of its own, as a worker has) accepting into TcpSession, backends as
// blocking-socket servers on threads, and the test thread as the client. The snapshot is built by hand over a table whose preference order is
// host 0, 1, 2, ... for every key, so which host is tried first is known.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "lb/proxy/tcp/tcp_session.h"
#include "lb/runtime/access_log.h"
#include "lb/runtime/listener.h"
#include "lb/runtime/worker_env.h"
#include "tests/support/proxy_loop.h"
#include "tests/support/tcp_test_servers.h"

namespace lb {
namespace {

using namespace std::chrono_literals;
using test::BlockingServer;
using test::Client;

// attempt k -> host k: every key's owner is host 0.
class InOrderTable final : public SelectorTable {
 public:
  explicit InOrderTable(uint32_t n) : n_(n) {}
  uint32_t pick(uint64_t, uint32_t attempt) const noexcept override { return attempt % n_; }
  uint32_t hostCount() const noexcept override { return n_; }
  size_t memoryBytes() const noexcept override { return 0; }

 private:
  uint32_t n_;
};

std::shared_ptr<Snapshot> makeSnapshot(const std::vector<uint16_t>& ports, uint32_t retries,
                                       Duration idle = Duration{10000},
                                       Duration connect = Duration{1000}) {
  auto snap = std::make_shared<Snapshot>();
  ClusterConfig cc;
  cc.name = "c";
  cc.retries = retries;
  for (size_t i = 0; i < ports.size(); ++i)
    cc.backends.push_back({"b" + std::to_string(i), "127.0.0.1:" + std::to_string(ports[i]), 1, "", "", {}});
  snap->config.clusters.push_back(cc);
  ListenerConfig lc;
  lc.name = "t";
  lc.protocol = Protocol::kTcp;
  lc.cluster = "c";
  lc.on_missing_key = OnMissingKey::kRoundRobin;
  lc.timeouts.connect = connect;
  lc.timeouts.idle = idle;
  snap->config.listeners.push_back(lc);

  ClusterSnapshot& cs = snap->clusters.emplace_back();
  cs.config = &snap->config.clusters[0];
  cs.table = std::make_unique<InOrderTable>(static_cast<uint32_t>(ports.size()));
  cs.backends.resize(ports.size());
  auto cluster_load = std::make_shared<ClusterLoadState>();
  for (size_t i = 0; i < ports.size(); ++i) {
    BackendSnapshot& b = cs.backends[i];
    b.config = &cs.config->backends[i];
    b.state = std::make_shared<BackendState>("c", b.config->name, 1, cluster_load);
    auto* in = reinterpret_cast<sockaddr_in*>(&b.address);
    uv_ip4_addr("127.0.0.1", ports[i], in);
    b.address_len = sizeof(sockaddr_in);
  }
  cs.loads = std::make_unique<ClusterLoads>(&cs.backends, cluster_load);
  cs.rotation = Rotation(1);
  ListenerSnapshot& ls = snap->listeners.emplace_back();
  ls.config = &snap->config.listeners[0];
  ls.cluster = 0;
  ls.state = std::make_shared<ListenerState>("t", 1);
  return snap;
}

// Every protocol accepts as tcp here.
class ProxyLoop : public test::ProxyLoop {
 public:
  explicit ProxyLoop(std::shared_ptr<const Snapshot> snap,
                     std::shared_ptr<AccessLogSink> sink = nullptr)
      : test::ProxyLoop(std::move(snap), TcpSession::accept, std::move(sink)) {}
};

int64_t liveOf(const Snapshot& s, int host) {
  return s.clusters[0].backends[host].state->live.load();
}

TEST(TcpSessionTest, PipesBytesBothWays) {
  BlockingServer echo(BlockingServer::echo);
  auto snap = makeSnapshot({echo.port()}, 0);
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  ASSERT_TRUE(c.send("hello through lb"));
  EXPECT_EQ(c.readExactly(16), "hello through lb");
}

TEST(TcpSessionTest, CountsBytesEachWayInTheWorkersSlot) {
  BlockingServer echo(BlockingServer::echo);
  auto snap = makeSnapshot({echo.port()}, 0);
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  ASSERT_TRUE(c.send(std::string(1000, 'x')));
  EXPECT_EQ(c.readExactly(1000).size(), 1000u);
  const BackendWorkerStats& st = snap->clusters[0].backends[0].state->per_worker[0];
  // The client can read the echo before the loop thread has counted what it moved (the splice
  // pump counts after its call returns): wait, on the loop, for the count to reach it.
  EXPECT_TRUE(proxy.waitFor([&] { return st.bytes_rx.get() == 1000u; }));
  EXPECT_EQ(st.bytes_tx.get(), 1000u);
  EXPECT_EQ(st.bytes_rx.get(), 1000u);
  EXPECT_EQ(st.picks[static_cast<int>(PickReason::kOwner)].get(), 1u);
}

TEST(TcpSessionTest, LiveLoadCountsTheOpenConnectionUntilItCloses) {
  BlockingServer echo(BlockingServer::echo);
  auto snap = makeSnapshot({echo.port()}, 0);
  ProxyLoop proxy(snap);
  {
    Client c;
    ASSERT_TRUE(c.connect(proxy.port()));
    ASSERT_TRUE(c.send("x"));
    ASSERT_EQ(c.readExactly(1), "x");
    EXPECT_EQ(liveOf(*snap, 0), 1);
  }
  EXPECT_TRUE(proxy.waitFor([&] { return proxy.env().sessionCount() == 0; }));
  EXPECT_EQ(liveOf(*snap, 0), 0);
}

TEST(TcpSessionTest, ClientHalfCloseReachesTheBackendAndTheReplyStillArrives) {
  // The backend answers only after EOF, as `nc -N` or an HTTP/1.0 server might.
  BlockingServer replier([](int fd) {
    std::string got = BlockingServer::readToEof(fd);
    BlockingServer::writeAll(fd, "got " + std::to_string(got.size()) + " bytes");
  });
  auto snap = makeSnapshot({replier.port()}, 0);
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  ASSERT_TRUE(c.send("abcdef"));
  c.shutdownWrite();
  EXPECT_EQ(c.readToEof(), "got 6 bytes");
  EXPECT_TRUE(proxy.waitFor([&] { return proxy.env().sessionCount() == 0; }));
}

TEST(TcpSessionTest, BackendHalfCloseReachesTheClientWhichCanStillSend) {
  // The backend greets, shuts its write side, then reads what the client sends.
  std::promise<std::string> received;
  BlockingServer greeter([&](int fd) {
    BlockingServer::writeAll(fd, "hello");
    shutdown(fd, SHUT_WR);
    received.set_value(BlockingServer::readToEof(fd));
  });
  auto snap = makeSnapshot({greeter.port()}, 0);
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  EXPECT_EQ(c.readToEof(), "hello");
  ASSERT_TRUE(c.send("after eof"));
  c.shutdownWrite();
  auto f = received.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get(), "after eof");
}

// A ping through a proxy whose host 0 fails and host 1 echoes: it arrives, host 0 was the
// owner pick and host 1 the failover, and only host 1 still carries a live unit.
void expectPingFailsOverFromHost0ToHost1(const std::shared_ptr<Snapshot>& snap) {
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  ASSERT_TRUE(c.send("ping"));
  EXPECT_EQ(c.readExactly(4), "ping");
  const auto& b0 = snap->clusters[0].backends[0].state->per_worker[0];
  const auto& b1 = snap->clusters[0].backends[1].state->per_worker[0];
  EXPECT_EQ(b0.picks[static_cast<int>(PickReason::kOwner)].get(), 1u);
  EXPECT_EQ(b1.picks[static_cast<int>(PickReason::kFailover)].get(), 1u);
  EXPECT_EQ(liveOf(*snap, 0), 0) << "the failed attempt must give its live unit back";
  EXPECT_EQ(liveOf(*snap, 1), 1);
}

TEST(TcpSessionTest, RefusedConnectFailsOverToTheNextHost) {
  uint16_t dead = test::closedPort();
  BlockingServer echo(BlockingServer::echo);
  expectPingFailsOverFromHost0ToHost1(makeSnapshot({dead, echo.port()}, 1));
}

TEST(TcpSessionTest, ConnectTimeoutFailsOverToTheNextHost) {
  test::SilentPort silent;
  ASSERT_TRUE(silent.swallowsConnects(200ms)) << "the kernel answered a SYN to a full queue";
  BlockingServer echo(BlockingServer::echo);
  expectPingFailsOverFromHost0ToHost1(
      makeSnapshot({silent.port(), echo.port()}, 1, Duration{10000}, Duration{100}));
}

TEST(TcpSessionTest, RetriesStopAtTheConfiguredCount) {
  // Three dead hosts and retries = 1: two attempts, then the client is closed.
  auto snap = makeSnapshot({test::closedPort(), test::closedPort(), test::closedPort()}, 1);
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  EXPECT_EQ(c.readToEof(), "");
  uint64_t picks = 0;
  for (int i = 0; i < 3; ++i)
    for (const auto& p : snap->clusters[0].backends[i].state->per_worker[0].picks) picks += p.get();
  EXPECT_EQ(picks, 2u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(liveOf(*snap, i), 0);
}

TEST(TcpSessionTest, IdleConnectionIsClosedAfterTheIdleTimeout) {
  BlockingServer silent([](int fd) { BlockingServer::readToEof(fd); });
  auto snap = makeSnapshot({silent.port()}, 0, Duration{100});
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  EXPECT_TRUE(c.waitClosed(5s));
}

TEST(TcpSessionTest, SlowBackendStopsTheClientSideReadingAtTheHighWatermark) {
  // The backend reads nothing until told to, then drains everything.
  std::promise<void> go;
  std::shared_future<void> go_f = go.get_future().share();
  std::atomic<size_t> drained{0};
  BlockingServer slow([&](int fd) {
    go_f.wait();
    drained += BlockingServer::readToEof(fd).size();
  });
  auto snap = makeSnapshot({slow.port()}, 0);
  ProxyLoop proxy(snap);
  Client c;
  ASSERT_TRUE(c.connect(proxy.port()));
  // Push until the client's own send would block: the kernel buffers fill on both hops and
  // lb stops reading rather than queueing everything in memory.
  size_t sent = c.sendUntilBlocked(64 << 20, 500ms);
  ASSERT_LT(sent, size_t{64} << 20) << "lb never pushed back";
  size_t held = proxy.query<size_t>([&] { return proxy.env().buffers().outstanding(); });
  size_t chunk = BufferPool::kBlockSize;
  EXPECT_LE(held * chunk, TcpSession::kHighWatermark + 4 * chunk);
  go.set_value();
  c.shutdownWrite();
  EXPECT_TRUE(c.waitClosed(10s));
  EXPECT_EQ(drained.load(), sent) << "every byte sent arrives once the backend reads";
}

TEST(TcpSessionTest, WritesOneAccessLogLinePerConnection) {
  char path[] = "/tmp/lb-tcp-access-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  BlockingServer echo(BlockingServer::echo);
  auto snap = makeSnapshot({echo.port()}, 0);
  std::string err;
  {
    ProxyLoop proxy(snap, AccessLogSink::open(path, &err));
    Client c;
    ASSERT_TRUE(c.connect(proxy.port()));
    ASSERT_TRUE(c.send("12345"));
    ASSERT_EQ(c.readExactly(5), "12345");
    c.close();
    ASSERT_TRUE(proxy.waitFor([&] { return proxy.env().sessionCount() == 0; }));
  }   // stop(): the final flush
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  std::string log = ss.str();
  EXPECT_NE(log.find("listener=t proto=tcp client=127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find(" backend=b0 status=ok bytes_in=5 bytes_out=5 "), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

}  // namespace
}  // namespace lb
