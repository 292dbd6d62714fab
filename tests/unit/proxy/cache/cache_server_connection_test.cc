// ServerConnection (lb/proxy/cache/server_connection.h) on a real libuv loop, against a real
// loopback backend, through a fake protocol: one reply is one '\n'-terminated line, a line
// starting with '-' is an error, one starting with '!' cannot be a reply (frameReply -1), and
// the handshake is "AUTH <password>\n", answered "OK\n". The connection is stood up the way a
// session gets it (CacheWorker::holdTable over a snapshot of one backend) and fed fragments
// of commands whose owner is a fake that records what it is told. The backend is a blocking
// socket on a thread that records the lines it reads; the test writes its replies on that
// socket itself, so what arrives when is the test's choice.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lb/proxy/cache/cache_worker.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/runtime/worker_env.h"
#include "tests/support/loop_thread.h"
#include "tests/support/tcp_test_servers.h"

namespace lb {
namespace {

using namespace std::chrono_literals;

class LineWire final : public CacheWire {
 public:
  const char* name() const noexcept override { return "line"; }
  int64_t frameReply(uint8_t, const char* p, size_t n, ReplyScan& scan) const noexcept override {
    if (n > 0 && p[0] == '!') return -1;
    for (size_t i = scan.pos; i < n; ++i)
      if (p[i] == '\n') return static_cast<int64_t>(i + 1);
    scan.pos = n;   // the next read scans only what is new
    return 0;
  }
  bool isError(const char* p, size_t n) const noexcept override { return n > 0 && p[0] == '-'; }
  std::string handshake(std::string_view password) const override {
    return password.empty() ? std::string() : "AUTH " + std::string(password) + "\n";
  }
  bool handshakeOk(const char* p, size_t n) const noexcept override {
    return std::string_view(p, n) == "OK\n";
  }
};

const LineWire kLineWire;

// What the server connection told the owner of one command.
struct Event {
  uint64_t seq;
  bool failed;
  std::string text;   // the reply, or the failure's text
  CacheErrorReason reason = CacheErrorReason::kProtocol;
};

class RecordingOwner final : public FragmentOwner {
 public:
  void fragmentReply(CacheFragment* f, const char* p, size_t n) noexcept override {
    events.push_back({f->command->seq, false, std::string(p, n)});
    f->command = nullptr;
  }
  // As CacheSession does: the command is answered now, its fragment detached (it may stay
  // queued as a tombstone).
  void fragmentFailed(CacheFragment* f, CacheErrorReason reason,
                      std::string_view text) noexcept override {
    events.push_back({f->command->seq, true, std::string(text), reason});
    f->command = nullptr;
  }
  std::vector<Event> events;
};

// One backend connection at a time: records every line it reads; the test writes replies
// on it with reply() and closes it with hangUp().
class LineBackend {
 public:
  LineBackend()
      : server_([this](int fd) {
          {
            std::lock_guard<std::mutex> g(mu_);
            fd_ = fd;
            ++connections_;
          }
          cv_.notify_all();
          std::string partial;
          char buf[4096];
          for (;;) {
            const ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0) break;
            partial.append(buf, static_cast<size_t>(n));
            std::lock_guard<std::mutex> g(mu_);
            for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
              lines_.push_back(partial.substr(0, nl));
              partial.erase(0, nl + 1);
            }
            cv_.notify_all();
          }
          std::lock_guard<std::mutex> g(mu_);
          closed_ = true;
          cv_.notify_all();
        }) {}

  uint16_t port() const { return server_.port(); }

  bool waitLines(size_t n, std::chrono::milliseconds limit = 5s) {
    std::unique_lock<std::mutex> g(mu_);
    return cv_.wait_for(g, limit, [&] { return lines_.size() >= n; });
  }
  // True when lb closed its side of the connection.
  bool waitClosed(std::chrono::milliseconds limit = 5s) {
    std::unique_lock<std::mutex> g(mu_);
    return cv_.wait_for(g, limit, [&] { return closed_; });
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> g(mu_);
    return lines_;
  }
  int connections() {
    std::lock_guard<std::mutex> g(mu_);
    return connections_;
  }
  void reply(const std::string& bytes) {
    int fd;
    {
      std::lock_guard<std::mutex> g(mu_);
      fd = fd_;
    }
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(test::BlockingServer::writeAll(fd, bytes));
  }
  void hangUp() {
    std::lock_guard<std::mutex> g(mu_);
    if (fd_ >= 0) shutdown(fd_, SHUT_WR);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int fd_ = -1;
  int connections_ = 0;
  bool closed_ = false;
  std::vector<std::string> lines_;
  test::BlockingServer server_;   // last: its threads stop before the rest goes
};

std::shared_ptr<Snapshot> oneBackend(uint16_t port, const std::string& password) {
  auto snap = std::make_shared<Snapshot>();
  snap->generation = 1;
  ClusterConfig cc;
  cc.name = "c";
  cc.password = password;
  cc.server_connections = 1;
  cc.backends.push_back({"b0", "127.0.0.1:" + std::to_string(port), 1, "", "", {}});
  snap->config.clusters.push_back(cc);
  ClusterSnapshot& cs = snap->clusters.emplace_back();
  cs.config = &snap->config.clusters[0];
  cs.backends.resize(1);
  BackendSnapshot& b = cs.backends[0];
  b.config = &cs.config->backends[0];
  b.state = std::make_shared<BackendState>("c", "b0", 1);
  uv_ip4_addr("127.0.0.1", port, reinterpret_cast<sockaddr_in*>(&b.address));
  b.address_len = sizeof(sockaddr_in);
  return snap;
}

class ServerConnectionTest : public ::testing::Test {
 protected:
  // Stands the worker's cache service up on the loop and holds the backend's table.
  void start(const std::string& password = "", uint16_t port = 0) {
    snap_ = oneBackend(port != 0 ? port : backend_.port(), password);
    loop_.run([&] {
      cache_ = env_.service<CacheWorker>();
      table_ = cache_->holdTable(*snap_, 0, kLineWire);
    });
    ASSERT_NE(cache_, nullptr);
    ASSERT_NE(table_, nullptr);
    server_ = table_->hosts[0]->servers[0];
  }

  void TearDown() override {
    if (cache_ != nullptr) {
      EXPECT_TRUE(loop_.waitFor([&] { return cache_->fragmentsOut() == 0; }))
          << "a fragment was never freed";
      loop_.run([&] {
        EXPECT_EQ(cache_->commandsOut(), 0u);
        cache_->releaseTable(table_);
        env_.closeServices();
        env_.upstreams().closeAll();
      });
      // Everything it opened closes; what is left is the test loop's own wake-up handle.
      EXPECT_TRUE(loop_.waitFor([&] { return handlesOpen() == 1; }))
          << handlesOpen() - 1 << " handle(s) left on the loop";
      loop_.run([&] {
        EXPECT_EQ(cache_->fragmentsOut(), 0u);
        EXPECT_EQ(cache_->commandsOut(), 0u);
        EXPECT_EQ(cache_->serverCount(), 0u);
      });
    }
    EXPECT_TRUE(loop_.stop()) << "uv_loop_close: a handle was left open";
    EXPECT_EQ(env_.buffers().outstanding(), 0u) << "a pool block was not returned";
  }

  // Loop thread: handles on the loop, closing ones included (they are not gone yet).
  size_t handlesOpen() {
    size_t n = 0;
    uv_walk(loop_.loop(), [](uv_handle_t*, void* arg) { ++*static_cast<size_t*>(arg); }, &n);
    return n;
  }

  // Sends `line` as command `seq` (a command of its own, owned by owner_), due within
  // `timeout_ms`; returns its fragment (valid while queued).
  CacheFragment* send(const std::string& line, uint64_t seq, uint32_t timeout_ms = 5000) {
    return loop_.run([&] {
      CacheCommand* c = cache_->newCommand();
      c->session = &owner_;
      c->seq = seq;
      commands_.push_back(c);
      ByteChain& out = server_->open(1000);
      out.append(line + "\n");
      CacheFragment* f = cache_->newFragment();
      f->command = c;
      f->timeout_ms = timeout_ms;
      f->sent_ns = uv_hrtime();
      c->fragments = f;
      c->pending = 1;
      server_->push(f);
      return f;
    });
  }

  // Loop thread, at the end of a test: the owner frees its commands.
  void freeCommands() {
    loop_.run([&] {
      for (CacheCommand* c : commands_) cache_->freeCommand(c);
      commands_.clear();
    });
  }

  std::vector<Event> events() {
    return loop_.run([&] { return owner_.events; });
  }
  bool waitEvents(size_t n) {
    return loop_.waitFor([&] { return owner_.events.size() >= n; });
  }
  size_t queued() {
    return loop_.run([&] { return server_->queued(); });
  }
  uint64_t bytesRead() {
    return snap_->clusters[0].backends[0].state->per_worker[0].bytes_rx.get();
  }

  LineBackend backend_;
  testing::LoopThread loop_;
  ProtocolTable protocols_{};
  WorkerEnv env_{loop_.loop(), 0, protocols_};
  std::shared_ptr<Snapshot> snap_;
  CacheWorker* cache_ = nullptr;
  ServerTable* table_ = nullptr;
  ServerConnection* server_ = nullptr;
  RecordingOwner owner_;
  std::vector<CacheCommand*> commands_;
};

TEST_F(ServerConnectionTest, PipelinedRepliesReachTheirFragmentsInOrder) {
  start();
  send("a", 1);
  send("b", 2);
  send("c", 3);
  ASSERT_TRUE(backend_.waitLines(3));
  EXPECT_EQ(backend_.lines(), (std::vector<std::string>{"a", "b", "c"}));
  backend_.reply("ra\n-rb\nrc\n");   // one read, three replies, an error among them
  ASSERT_TRUE(waitEvents(3));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].seq, 1u);
  EXPECT_EQ(ev[0].text, "ra\n");
  EXPECT_EQ(ev[1].seq, 2u);
  EXPECT_EQ(ev[1].text, "-rb\n");
  EXPECT_EQ(ev[2].seq, 3u);
  EXPECT_EQ(ev[2].text, "rc\n");
  for (const Event& e : ev) EXPECT_FALSE(e.failed);
  EXPECT_EQ(queued(), 0u);
  freeCommands();
}

TEST_F(ServerConnectionTest, AReplySplitOverReadsIsDeliveredWhole) {
  start();
  send("a", 1);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(2));
  backend_.reply("hel");
  ASSERT_TRUE(loop_.waitFor([&] { return bytesRead() == 3; }));
  EXPECT_TRUE(events().empty()) << "a partial reply was delivered";
  backend_.reply("lo\nwor");
  ASSERT_TRUE(waitEvents(1));
  ASSERT_TRUE(loop_.waitFor([&] { return bytesRead() == 9; }));
  backend_.reply("ld\n");
  ASSERT_TRUE(waitEvents(2));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].seq, 1u);
  EXPECT_EQ(ev[0].text, "hello\n");
  EXPECT_EQ(ev[1].seq, 2u);
  EXPECT_EQ(ev[1].text, "world\n");
  freeCommands();
}

TEST_F(ServerConnectionTest, ADetachedFragmentSwallowsItsReplyAndTheNextGetsItsOwn) {
  start();
  CacheFragment* a = send("a", 1);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(2));
  // The client of command 1 went away: its fragment stays queued, detached.
  loop_.run([&] { a->command = nullptr; });
  EXPECT_EQ(queued(), 2u);
  backend_.reply("ra\nrb\n");
  ASSERT_TRUE(waitEvents(1));
  ASSERT_TRUE(loop_.waitFor([&] { return server_->queued() == 0; }));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].seq, 2u);
  EXPECT_EQ(ev[0].text, "rb\n");
  EXPECT_FALSE(ev[0].failed);
  freeCommands();
}

// The timed-out fragment's owner is answered at its deadline; its late reply is dropped and
// the next fragment still gets its own (the connection stays aligned and open).
TEST_F(ServerConnectionTest, ATimedOutFragmentFailsWithTheTimeoutAndKeepsAlignment) {
  start();
  send("a", 1, /*timeout_ms=*/400);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(2));
  ASSERT_TRUE(waitEvents(1));
  auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].seq, 1u);
  EXPECT_TRUE(ev[0].failed);
  EXPECT_EQ(ev[0].reason, CacheErrorReason::kBackendTimeout);
  EXPECT_EQ(ev[0].text, "backend b0 timed out after 400ms");
  EXPECT_EQ(queued(), 2u) << "the timed-out fragment left the FIFO";
  // Before twice the timeout, when the connection would be taken as stuck.
  backend_.reply("late-a\nrb\n");
  ASSERT_TRUE(waitEvents(2));
  ev = events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].seq, 2u);
  EXPECT_FALSE(ev[1].failed);
  EXPECT_EQ(ev[1].text, "rb\n");
  EXPECT_TRUE(loop_.run([&] { return server_->connected(); }));
  EXPECT_EQ(backend_.connections(), 1);
  freeCommands();
}

// No reply for twice the oldest fragment's timeout: a frozen server. The connection closes
// and what is still queued fails with a timeout.
TEST_F(ServerConnectionTest, ANeverAnsweredFragmentClosesTheConnectionAtTwiceItsTimeout) {
  start();
  send("a", 1, /*timeout_ms=*/50);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(2));
  ASSERT_TRUE(waitEvents(2));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].seq, 1u);
  EXPECT_EQ(ev[0].text, "backend b0 timed out after 50ms");
  EXPECT_EQ(ev[1].seq, 2u);
  EXPECT_TRUE(ev[1].failed);
  EXPECT_EQ(ev[1].reason, CacheErrorReason::kBackendTimeout);
  EXPECT_NE(ev[1].text.find("stopped answering"), std::string::npos) << ev[1].text;
  EXPECT_EQ(queued(), 0u);
  EXPECT_TRUE(backend_.waitClosed());
  EXPECT_FALSE(loop_.run([&] { return server_->connected(); }));
  freeCommands();
}

TEST_F(ServerConnectionTest, ABackendThatClosesFailsEveryQueuedFragmentOnce) {
  start();
  send("a", 1);
  send("b", 2);
  send("c", 3);
  ASSERT_TRUE(backend_.waitLines(3));
  backend_.reply("ra\n");
  ASSERT_TRUE(waitEvents(1));
  backend_.hangUp();
  ASSERT_TRUE(waitEvents(3));
  ASSERT_TRUE(loop_.waitFor([&] { return !server_->connected(); }));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_FALSE(ev[0].failed);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(ev[i].seq, i + 1);
    EXPECT_TRUE(ev[i].failed);
    EXPECT_EQ(ev[i].reason, CacheErrorReason::kBackendFailed);
    EXPECT_EQ(ev[i].text, "backend b0 closed the connection");
  }
  EXPECT_EQ(queued(), 0u);
  freeCommands();
}

TEST_F(ServerConnectionTest, AMalformedReplyClosesTheConnectionAndFailsTheQueue) {
  start();
  send("a", 1);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(2));
  backend_.reply("!garbage\nrb\n");
  ASSERT_TRUE(waitEvents(2));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ev[i].seq, i + 1);
    EXPECT_TRUE(ev[i].failed);
    EXPECT_EQ(ev[i].reason, CacheErrorReason::kBackendFailed);
    EXPECT_EQ(ev[i].text, "backend b0 sent a malformed reply");
  }
  EXPECT_TRUE(backend_.waitClosed()) << "lb kept a connection it cannot trust";
  EXPECT_FALSE(loop_.run([&] { return server_->connected(); }));
  freeCommands();
}

TEST_F(ServerConnectionTest, AReplyToNoCommandClosesTheConnection) {
  start();
  send("a", 1);
  ASSERT_TRUE(backend_.waitLines(1));
  backend_.reply("ra\nextra\n");
  ASSERT_TRUE(waitEvents(1));
  EXPECT_TRUE(backend_.waitClosed());
  const auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, "ra\n");
  freeCommands();
}

TEST_F(ServerConnectionTest, TheHandshakeGoesFirstAndItsReplyReachesNoOwner) {
  start("pw");
  send("a", 1);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(3));
  EXPECT_EQ(backend_.lines(), (std::vector<std::string>{"AUTH pw", "a", "b"}));
  backend_.reply("OK\n");
  ASSERT_TRUE(loop_.waitFor([&] { return bytesRead() == 3; }));
  EXPECT_TRUE(events().empty()) << "the handshake's reply reached an owner";
  backend_.reply("ra\nrb\n");
  ASSERT_TRUE(waitEvents(2));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].seq, 1u);
  EXPECT_EQ(ev[0].text, "ra\n");
  EXPECT_EQ(ev[1].seq, 2u);
  EXPECT_EQ(ev[1].text, "rb\n");
  freeCommands();
}

TEST_F(ServerConnectionTest, ARefusedHandshakeFailsTheQueue) {
  start("pw");
  send("a", 1);
  ASSERT_TRUE(backend_.waitLines(2));
  backend_.reply("NO\nra\n");
  ASSERT_TRUE(waitEvents(1));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].failed);
  EXPECT_EQ(ev[0].reason, CacheErrorReason::kBackendFailed);
  EXPECT_EQ(ev[0].text.rfind("backend b0 refused lb's AUTH", 0), 0u) << ev[0].text;
  EXPECT_TRUE(backend_.waitClosed());
  freeCommands();
}

TEST_F(ServerConnectionTest, ARefusedConnectFailsEveryQueuedFragment) {
  start("", test::closedPort());
  send("a", 1);
  send("b", 2);
  ASSERT_TRUE(waitEvents(2));
  const auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ev[i].seq, i + 1);
    EXPECT_TRUE(ev[i].failed);
    EXPECT_EQ(ev[i].reason, CacheErrorReason::kBackendFailed);
    EXPECT_EQ(ev[i].text.rfind("backend b0: connect failed", 0), 0u) << ev[i].text;
  }
  EXPECT_EQ(queued(), 0u);
  freeCommands();
}

// After a failure the connection is idle; the next command connects again (and sends the
// handshake again first).
TEST_F(ServerConnectionTest, TheNextCommandAfterAFailureReconnects) {
  start();
  send("a", 1);
  ASSERT_TRUE(backend_.waitLines(1));
  backend_.hangUp();
  ASSERT_TRUE(waitEvents(1));
  ASSERT_TRUE(backend_.waitClosed());
  send("b", 2);
  ASSERT_TRUE(loop_.waitFor([&] { return backend_.connections() == 2; }));
  ASSERT_TRUE(backend_.waitLines(2));
  backend_.reply("rb\n");
  ASSERT_TRUE(waitEvents(2));
  const auto ev = events();
  EXPECT_EQ(ev[1].seq, 2u);
  EXPECT_EQ(ev[1].text, "rb\n");
  freeCommands();
}

// Worker stop with commands queued: each owner is told once, and nothing stays on the loop
// (TearDown checks the handles and the free lists).
TEST_F(ServerConnectionTest, ClosingTheWorkerFailsWhatIsQueued) {
  start();
  send("a", 1);
  send("b", 2);
  ASSERT_TRUE(backend_.waitLines(2));
  loop_.run([&] { cache_->close(); });
  table_ = nullptr;   // close() dropped it
  const auto ev = events();
  ASSERT_EQ(ev.size(), 2u);
  for (const Event& e : ev) {
    EXPECT_TRUE(e.failed);
    EXPECT_EQ(e.text, "lb is stopping");
  }
  EXPECT_TRUE(backend_.waitClosed());
  freeCommands();
}

}  // namespace
}  // namespace lb
