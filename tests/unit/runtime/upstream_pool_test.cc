// lb::UpstreamPool and UpstreamConn against real sockets on 127.0.0.1: a session owns the
// backend connection it holds and hears it in the one dialect every Connection speaks
// (ConnectionOwner, each callback naming the connection); the pool takes it back by owning
// it again, watches it while idle, and frees it after its last callback. The loop runs on the
// test's thread; every wait is for a condition with a deadline.
#include "lb/runtime/upstream_pool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lb/core/log.h"
#include "lb/routing/snapshot.h"

namespace lb {
namespace {

using namespace std::chrono_literals;

// A session's side of a backend connection: what it heard, and from which connection.
struct Holder final : ConnectionOwner {
  void onConnected(Connection& c, int status) noexcept override {
    from.push_back(&c);
    connected.push_back(status);
  }
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override {
    (void)c;
    *buf = uv_buf_init(buf_, sizeof buf_);
  }
  void onRead(Connection& c, char* p, size_t n) noexcept override {
    if (n == 0) return;
    from.push_back(&c);
    got.append(p, n);
  }
  void onEof(Connection& c) noexcept override {
    from.push_back(&c);
    ++eofs;
  }
  void onError(Connection& c, int) noexcept override {
    from.push_back(&c);
    ++errors;
  }
  void onWritten(Connection& c, ConnectionWrite*, int status) noexcept override {
    from.push_back(&c);
    written.push_back(status);
  }
  // A backend connection's last callbacks are its UpstreamConn's, never the session's.
  void onClosed(Connection&) noexcept override { ++closed; }

  char buf_[256];
  std::vector<Connection*> from;
  std::vector<int> connected, written;
  std::string got;
  int eofs = 0, errors = 0, closed = 0;
};

// The backend's end of a connection: reads what lb sends, writes what the test says.
struct Backend final : ConnectionOwner {
  explicit Backend(uv_loop_t* loop) : conn(*this, loop) {}
  void onAlloc(Connection&, uv_buf_t* buf) noexcept override {
    *buf = uv_buf_init(buf_, sizeof buf_);
  }
  void onRead(Connection&, char* p, size_t n) noexcept override { got.append(p, n); }
  void onEof(Connection&) noexcept override { ++eofs; }
  void onError(Connection&, int) noexcept override { ++eofs; }
  void onClosed(Connection&) noexcept override { ++closed; }
  void send(const char* text) {
    uv_buf_t b = uv_buf_init(const_cast<char*>(text), static_cast<unsigned>(strlen(text)));
    ConnectionWrite w;
    ASSERT_EQ(conn.write(&w, &b, 1), static_cast<ssize_t>(b.len));
  }

  Connection conn;
  char buf_[256];
  std::string got;
  int eofs = 0, closed = 0;
};

class UpstreamPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    uv_tcp_init(&loop_, &listener_);
    sockaddr_in a{};
    uv_ip4_addr("127.0.0.1", 0, &a);
    ASSERT_EQ(uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&a), 0), 0);
    listener_.data = this;
    ASSERT_EQ(uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 16,
                        [](uv_stream_t* s, int) {
                          ++static_cast<UpstreamPoolTest*>(s->data)->incoming_;
                        }),
              0);
    int len = sizeof a;
    uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&a), &len);
    memcpy(&backend_.address, &a, sizeof a);
    backend_.address_len = sizeof a;
    backend_.state = std::make_shared<BackendState>("c", "b1", 1);
    pool_ = std::make_unique<UpstreamPool>(&loop_, 0, 4);
  }
  void TearDown() override {
    pool_->closeAll();
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    // Every UpstreamConn freed itself: the gauge it keeps is back to zero.
    EXPECT_TRUE(runUntil([&] { return connections() == 0; })) << connections();
    uv_run(&loop_, UV_RUN_NOWAIT);
    int live = 0;
    uv_walk(&loop_, [](uv_handle_t* h, void* arg) {
      if (!uv_is_closing(h)) ++*static_cast<int*>(arg);
    }, &live);
    EXPECT_EQ(live, 0);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  bool runUntil(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (!pred()) usleep(1000);
    }
    return true;
  }

  int64_t connections() { return backend_.state->per_worker[0].connections.get(); }

  // A new connection for `s`, connected, and its backend end accepted into `b` (reading).
  UpstreamConn* dial(Holder& s, Backend& b) {
    int err = 0;
    UpstreamConn* c = pool_->connect(backend_, s, 5000, true, &err);
    EXPECT_NE(c, nullptr) << err;
    if (c == nullptr) return nullptr;
    EXPECT_TRUE(runUntil([&] { return s.connected.size() == 1 && incoming_ > 0; }));
    --incoming_;
    EXPECT_EQ(b.conn.accept(reinterpret_cast<uv_stream_t*>(&listener_), nullptr), 0);
    EXPECT_EQ(b.conn.readStart(), 0);
    return c;
  }

  void closeBackend(Backend& b) {
    b.conn.close();
    ASSERT_TRUE(runUntil([&] { return b.closed == 1; }));
  }

  uv_loop_t loop_;
  uv_tcp_t listener_;
  int incoming_ = 0;
  BackendSnapshot backend_;
  std::unique_ptr<UpstreamPool> pool_;
};

TEST(UpstreamStateTest, EveryStateHasANameOfItsOwn) {
  EXPECT_STREQ(upstreamStateName(UpstreamState::kDialled), "dialled");
  EXPECT_STREQ(upstreamStateName(UpstreamState::kReused), "reused");
  EXPECT_STREQ(upstreamStateName(UpstreamState::kIdle), "idle");
  EXPECT_STREQ(upstreamStateName(UpstreamState::kClosing), "closing");
}

// The session is the connection's owner: its connect, reads and writes come straight to it,
// each naming the backend's connection, with no pool in between.
TEST_F(UpstreamPoolTest, TheSessionHearsItsBackendConnectionInTheOneDialect) {
  Holder s;
  Backend b(&loop_);
  UpstreamConn* c = dial(s, b);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->upstreamState(), UpstreamState::kDialled);
  EXPECT_FALSE(c->reused());
  EXPECT_EQ(s.connected, std::vector<int>{0});
  EXPECT_EQ(&c->connection().owner(), &s);
  ASSERT_EQ(c->startRead(), 0);
  EXPECT_EQ(c->write("ping", 4), 0);
  ASSERT_TRUE(runUntil([&] { return b.got == "ping"; }));
  b.send("pong");
  ASSERT_TRUE(runUntil([&] { return s.got == "pong"; }));
  for (Connection* from : s.from) EXPECT_EQ(from, &c->connection());
  b.conn.shutdown();
  ASSERT_TRUE(runUntil([&] { return s.eofs == 1; }));
  c->close();
  EXPECT_EQ(s.closed, 0);
  closeBackend(b);
  ASSERT_TRUE(runUntil([&] { return connections() == 0; }));
  EXPECT_EQ(s.closed, 0);   // the UpstreamConn took the last callbacks and freed itself
}

// put() takes the connection back (the session hears nothing more of it), take() lends it to
// the next session, which hears its bytes from then on.
TEST_F(UpstreamPoolTest, PutAndTakeHandTheConnectionFromOwnerToOwner) {
  Holder first, second;
  Backend b(&loop_);
  UpstreamConn* c = dial(first, b);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->startRead(), 0);
  pool_->put(c);
  EXPECT_EQ(c->upstreamState(), UpstreamState::kIdle);
  EXPECT_EQ(pool_->idleCount(), 1u);
  EXPECT_NE(&c->connection().owner(), &first);
  UpstreamConn* again = pool_->take(backend_, second);
  ASSERT_EQ(again, c);
  EXPECT_EQ(c->upstreamState(), UpstreamState::kReused);
  EXPECT_TRUE(c->reused());
  EXPECT_EQ(&c->connection().owner(), &second);
  EXPECT_EQ(pool_->idleCount(), 0u);
  b.send("for the second");
  ASSERT_TRUE(runUntil([&] { return second.got == "for the second"; }));
  EXPECT_TRUE(first.got.empty());
  c->close();
  closeBackend(b);
}

// While idle the pool is the owner and watches: any byte from the backend ends the
// connection, and no session hears of it.
TEST_F(UpstreamPoolTest, AnIdleConnectionEndsAtAnyByte) {
  Holder s;
  Backend b(&loop_);
  UpstreamConn* c = dial(s, b);
  ASSERT_NE(c, nullptr);
  pool_->put(c);
  ASSERT_EQ(pool_->idleCount(), 1u);
  const size_t heard = s.from.size();
  b.send("unasked");
  ASSERT_TRUE(runUntil([&] { return pool_->idleCount() == 0 && connections() == 0; }));
  ASSERT_TRUE(runUntil([&] { return b.eofs == 1; }));
  EXPECT_EQ(s.from.size(), heard);
  EXPECT_TRUE(s.got.empty());
  closeBackend(b);
}

TEST_F(UpstreamPoolTest, AnIdleConnectionEndsAtTheBackendsEof) {
  Holder s;
  Backend b(&loop_);
  UpstreamConn* c = dial(s, b);
  ASSERT_NE(c, nullptr);
  pool_->put(c);
  b.conn.shutdown();
  ASSERT_TRUE(runUntil([&] { return pool_->idleCount() == 0 && connections() == 0; }));
  EXPECT_EQ(s.eofs, 0);
  closeBackend(b);
}

// A session's connection that cannot be parked (not poolable) is closed by put(), under the
// UpstreamConn: the session hears nothing more.
TEST_F(UpstreamPoolTest, PutClosesAConnectionThatIsNotPoolable) {
  Holder s;
  Backend b(&loop_);
  int err = 0;
  UpstreamConn* c = pool_->connect(backend_, s, 5000, false, &err);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(runUntil([&] { return s.connected.size() == 1 && incoming_ > 0; }));
  --incoming_;
  ASSERT_EQ(b.conn.accept(reinterpret_cast<uv_stream_t*>(&listener_), nullptr), 0);
  ASSERT_EQ(b.conn.readStart(), 0);
  pool_->put(c);
  EXPECT_EQ(pool_->idleCount(), 0u);
  ASSERT_TRUE(runUntil([&] { return connections() == 0 && b.eofs == 1; }));
  EXPECT_EQ(s.closed, 0);
  closeBackend(b);
}

// Each change of an UpstreamConn's state is one debug line naming its backend and both states.
TEST_F(UpstreamPoolTest, StateChangesAreLoggedByName) {
  Holder first, second;
  Backend b(&loop_);
  setLogLevel(LogLevel::kDebug);
  testing::internal::CaptureStderr();
  UpstreamConn* c = dial(first, b);
  if (c != nullptr) {
    pool_->put(c);
    if (pool_->take(backend_, second) == c) c->close();
  }
  const std::string log = testing::internal::GetCapturedStderr();
  setLogLevel(LogLevel::kInfo);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(log.find("upstream b1: dialled -> idle\n"), std::string::npos) << log;
  EXPECT_NE(log.find("upstream b1: idle -> reused\n"), std::string::npos) << log;
  EXPECT_NE(log.find("upstream b1: reused -> closing\n"), std::string::npos) << log;
  closeBackend(b);
}

}  // namespace
}  // namespace lb
