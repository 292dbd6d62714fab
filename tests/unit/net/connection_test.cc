// lb::Connection against real sockets on 127.0.0.1: the loop runs on the test's thread, the
// peers are plain blocking or non-blocking sockets, and every wait is for a condition with a
// deadline. One behaviour per test; each ends with the loop holding no live handle.
#include "lb/net/connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lb/core/log.h"
#include "lb/tls/tls_client_context.h"
#include "lb/tls/tls_context.h"
#include "lb/tls/tls_transport.h"
#include "tests/support/tcp_test_servers.h"
#include "tests/support/tls_certs.h"

namespace lb {
namespace {

using namespace std::chrono_literals;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A connected blocking client socket to 127.0.0.1:port; `rcvbuf` > 0 keeps its receive
// window small (set before the handshake, where the window scale is agreed).
int dial(uint16_t port, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Records what the connection tells its owner; each hook may run a test's action.
struct Owner final : ConnectionOwner {
  explicit Owner(uv_loop_t* loop) : conn(*this, loop) {}

  void onConnected(Connection&, int status) noexcept override {
    connected.push_back(status);
    if (on_connected) on_connected(status);
  }
  void onEstablished(Connection&) noexcept override { ++established; }
  void onRead(Connection&, char* p, size_t n) noexcept override {
    if (n > 0) {
      got.append(p, n);
      if (pool != nullptr) pool->put(p);
    }
    if (on_read) on_read();
  }
  void onEof(Connection&) noexcept override { ++eofs; }
  void onError(Connection&, int status) noexcept override { errors.push_back(status); }
  void onWritten(Connection&, ConnectionWrite* w, int status) noexcept override {
    (void)w;
    written.push_back(status);
  }
  void onDrained(Connection&) noexcept override { ++drained; }
  void onShutdown(Connection&, int status) noexcept override { shutdowns.push_back(status); }
  void onTimer(Connection&) noexcept override { ++timers; }
  void onLingerDone(Connection&) noexcept override { ++lingers; }
  void onClosed(Connection&) noexcept override {
    ++closed;
    closed_after_writes = written.size();
  }

  Connection conn;
  BufferPool* pool = nullptr;
  std::function<void(int)> on_connected;
  std::function<void()> on_read;
  std::vector<int> connected, errors, written, shutdowns;
  std::string got;
  int eofs = 0, drained = 0, timers = 0, lingers = 0, closed = 0, established = 0;
  size_t closed_after_writes = 0;
};

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    uv_tcp_init(&loop_, &listener_);
    sockaddr_in a = loopback(0);
    ASSERT_EQ(uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&a), 0), 0);
    listener_.data = this;
    ASSERT_EQ(uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 16,
                        [](uv_stream_t* s, int) {
                          ++static_cast<ConnectionTest*>(s->data)->incoming_;
                        }),
              0);
    sockaddr_in bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.sin_port);
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
    // Nothing of the connection's may outlive its onClosed.
    int live = 0;
    uv_walk(&loop_, [](uv_handle_t* h, void* arg) {
      if (!uv_is_closing(h)) ++*static_cast<int*>(arg);
    }, &live);
    EXPECT_EQ(live, 0);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
    EXPECT_EQ(pool_.outstanding(), 0u);
  }

  // Runs the loop until pred() or the deadline.
  bool runUntil(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (!pred()) usleep(1000);
    }
    return true;
  }

  // A client connected to the listener, and `o` accepting it.
  int acceptInto(Owner& o, int rcvbuf = 0) {
    int fd = dial(port_, rcvbuf);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    EXPECT_TRUE(runUntil([&] { return incoming_ > 0; }));
    --incoming_;
    EXPECT_EQ(o.conn.accept(stream(), nullptr), 0);
    if (rcvbuf > 0) {   // and lb's side sends through a small buffer too
      int size = rcvbuf;
      uv_send_buffer_size(reinterpret_cast<uv_handle_t*>(o.conn.tcp()), &size);
    }
    return fd;
  }

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&listener_); }

  uv_loop_t loop_;
  uv_tcp_t listener_;
  uint16_t port_ = 0;
  int incoming_ = 0;   // connections libuv has announced and nobody accepted yet
  BufferPool pool_;
  std::vector<int> fds_;
};

TEST_F(ConnectionTest, AcceptReadsThePeerAddress) {
  Owner o(&loop_);
  int fd = acceptInto(o);
  sockaddr_in mine{};
  socklen_t len = sizeof mine;
  getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len);
  auto* peer = reinterpret_cast<const sockaddr_in*>(o.conn.peer());
  EXPECT_EQ(peer->sin_family, AF_INET);
  EXPECT_EQ(peer->sin_port, mine.sin_port);
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(o.conn.local())->sin_port), port_);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, ReadsIntoPoolBlocksAndCountsBytes) {
  Owner o(&loop_);
  o.pool = &pool_;
  o.conn.readIntoPool(&pool_);
  int fd = acceptInto(o);
  ASSERT_EQ(o.conn.readStart(), 0);
  ASSERT_EQ(::write(fd, "hello", 5), 5);
  ASSERT_TRUE(runUntil([&] { return o.got == "hello"; }));
  EXPECT_EQ(o.conn.bytesRead(), 5u);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, PeerCloseIsEofAndStopsReading) {
  Owner o(&loop_);
  o.conn.readIntoPool(&pool_);
  o.pool = &pool_;
  int fd = acceptInto(o);
  o.conn.readStart();
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(runUntil([&] { return o.eofs == 1; }));
  EXPECT_FALSE(o.conn.reading());
  EXPECT_TRUE(o.errors.empty());
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, OwnerBuffersOfZeroLengthAreEnobufs) {
  Owner o(&loop_);   // no pool, and the default onAlloc offers no room
  int fd = acceptInto(o);
  o.conn.readStart();
  ASSERT_EQ(::write(fd, "x", 1), 1);
  ASSERT_TRUE(runUntil([&] { return !o.errors.empty(); }));
  EXPECT_EQ(o.errors[0], UV_ENOBUFS);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

// Owner-supplied buffers: the one handed out for the read that saw EOF comes back (p, 0)
// before onEof, so the owner can free it.
TEST_F(ConnectionTest, EofGivesTheOwnersBufferBackFirst) {
  struct BufferOwner final : ConnectionOwner {
    explicit BufferOwner(uv_loop_t* loop) : conn(*this, loop) {}
    void onAlloc(Connection&, uv_buf_t* buf) noexcept override {
      ++allocs;
      *buf = uv_buf_init(space, sizeof space);
    }
    void onRead(Connection&, char* p, size_t n) noexcept override {
      if (n == 0 && p == space) ++returned;
    }
    void onEof(Connection&) noexcept override { returned_before_eof = returned; ++eofs; }
    void onError(Connection&, int) noexcept override {}
    void onClosed(Connection&) noexcept override { ++closed; }
    Connection conn;
    char space[64];
    int allocs = 0, returned = 0, returned_before_eof = -1, eofs = 0, closed = 0;
  };
  BufferOwner o(&loop_);
  int fd = dial(port_);
  fds_.push_back(fd);
  ASSERT_TRUE(runUntil([&] { return incoming_ > 0; }));
  --incoming_;
  ASSERT_EQ(o.conn.accept(stream(), nullptr), 0);
  o.conn.readStart();
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(runUntil([&] { return o.eofs == 1; }));
  EXPECT_GE(o.returned_before_eof, 1);
  EXPECT_EQ(o.returned, o.allocs);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, CloseFromInsideAReadCallbackCallsOnClosedOnce) {
  Owner o(&loop_);
  o.conn.readIntoPool(&pool_);
  o.pool = &pool_;
  int fd = acceptInto(o);
  o.on_read = [&] { o.conn.close(); o.conn.close(); };
  o.conn.readStart();
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_EQ(o.closed, 1);
  EXPECT_EQ(o.eofs, 0);
}

TEST_F(ConnectionTest, SmallWriteGoesOutAtOnce) {
  Owner o(&loop_);
  int fd = acceptInto(o);
  ConnectionWrite w;
  char text[] = "ping";
  uv_buf_t b = uv_buf_init(text, 4);
  EXPECT_EQ(o.conn.write(&w, &b, 1), 4);
  EXPECT_EQ(o.conn.queued(), 0u);
  EXPECT_EQ(o.conn.bytesWritten(), 4u);
  char in[8];
  EXPECT_EQ(::read(fd, in, sizeof in), 4);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_TRUE(o.written.empty());
}

// A peer that does not read: the write queues past the high watermark, and once the peer
// reads it down to the low one the owner hears onDrained, once.
TEST_F(ConnectionTest, WatermarksPauseUntilThePeerReads) {
  Owner o(&loop_);
  int fd = acceptInto(o, 4096);
  std::string big(8 << 20, 'z');
  ConnectionWrite w;
  uv_buf_t b = uv_buf_init(big.data(), static_cast<unsigned>(big.size()));
  ssize_t now = o.conn.write(&w, &b, 1);
  ASSERT_GE(now, 0);
  ASSERT_LT(static_cast<size_t>(now), big.size());
  EXPECT_EQ(o.conn.writesInFlight(), 1u);
  EXPECT_TRUE(o.conn.aboveHigh());
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_EQ(o.drained, 0);
  size_t total = 0;
  char in[65536];
  ASSERT_TRUE(runUntil([&] {
    ssize_t r = recv(fd, in, sizeof in, MSG_DONTWAIT);
    if (r > 0) total += static_cast<size_t>(r);
    return o.drained == 1;
  }, 10s));
  EXPECT_EQ(o.written, std::vector<int>{0});
  EXPECT_EQ(o.conn.queued(), 0u);
  EXPECT_EQ(o.conn.writesInFlight(), 0u);
  EXPECT_FALSE(o.conn.aboveHigh());
  EXPECT_EQ(o.conn.bytesWritten(), big.size());
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

// A queued write comes back cancelled, before onClosed, so the owner can free its buffer.
TEST_F(ConnectionTest, CloseWhileAWriteIsQueuedCancelsItBeforeOnClosed) {
  Owner o(&loop_);
  acceptInto(o, 4096);
  std::string big(8 << 20, 'q');
  ConnectionWrite w;
  uv_buf_t b = uv_buf_init(big.data(), static_cast<unsigned>(big.size()));
  ASSERT_GE(o.conn.write(&w, &b, 1), 0);
  ASSERT_GT(o.conn.queued(), 0u);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.written, std::vector<int>{UV_ECANCELED});
  EXPECT_EQ(o.closed_after_writes, 1u);
}

// A write with its own completion (a writer that does not own the connection) hears it
// there, the owner not at all, and still before onClosed.
TEST_F(ConnectionTest, AWritesOwnCompletionGetsTheCancelAfterClose) {
  Owner o(&loop_);
  acceptInto(o, 4096);
  std::string big(8 << 20, 'w');
  static std::vector<int> heard;
  heard.clear();
  ConnectionWrite w;
  w.done = [](ConnectionWrite*, int status) noexcept { heard.push_back(status); };
  uv_buf_t b = uv_buf_init(big.data(), static_cast<unsigned>(big.size()));
  ASSERT_GE(o.conn.write(&w, &b, 1, /*try_first=*/false), 0);
  EXPECT_EQ(o.conn.writesInFlight(), 1u);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(heard, std::vector<int>{UV_ECANCELED});
  EXPECT_TRUE(o.written.empty());
}

TEST_F(ConnectionTest, ShutdownSendsEofAfterQueuedBytes) {
  Owner o(&loop_);
  int fd = acceptInto(o);
  ConnectionWrite w;
  char text[] = "bye";
  uv_buf_t b = uv_buf_init(text, 3);
  ASSERT_EQ(o.conn.write(&w, &b, 1), 3);
  ASSERT_EQ(o.conn.shutdown(), 0);
  ASSERT_TRUE(runUntil([&] { return o.shutdowns.size() == 1; }));
  EXPECT_EQ(o.shutdowns[0], 0);
  char in[8];
  EXPECT_EQ(::read(fd, in, sizeof in), 3);
  EXPECT_EQ(::read(fd, in, sizeof in), 0);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, TimerFiresOnce) {
  Owner o(&loop_);
  acceptInto(o);
  o.conn.startTimer(20);
  ASSERT_TRUE(runUntil([&] { return o.timers == 1; }));
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_EQ(o.timers, 1);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, CloseStopsAnArmedTimer) {
  Owner o(&loop_);
  acceptInto(o);
  o.conn.startTimer(10);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.timers, 0);
}

// Lingering: the peer reads lb's last bytes then EOF; what it still sends is dropped until
// it closes, and then the connection closes by itself.
TEST_F(ConnectionTest, LingerDropsInputUntilThePeerCloses) {
  Owner o(&loop_);
  o.conn.readIntoPool(&pool_);
  o.pool = &pool_;
  int fd = acceptInto(o);
  ConnectionWrite w;
  char text[] = "ERR\r\n";
  uv_buf_t b = uv_buf_init(text, 5);
  ASSERT_EQ(o.conn.write(&w, &b, 1), 5);
  ASSERT_TRUE(o.conn.lingerClose(5000));
  ASSERT_EQ(::write(fd, "more", 4), 4);
  std::string seen;
  bool eof = false;
  ASSERT_TRUE(runUntil([&] {
    char in[16];
    ssize_t r = recv(fd, in, sizeof in, MSG_DONTWAIT);
    if (r > 0) seen.append(in, static_cast<size_t>(r));
    if (r == 0) eof = true;   // the write side is shut
    return eof;
  }));
  EXPECT_EQ(seen, "ERR\r\n");
  ASSERT_TRUE(runUntil([&] { return o.conn.bytesRead() == 4; }));
  EXPECT_EQ(o.got, "");   // dropped, never the owner's
  close(fd);
  fds_.clear();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.lingers, 1);
  EXPECT_TRUE(o.shutdowns.empty());
}

TEST_F(ConnectionTest, LingerEndsAtItsDeadline) {
  Owner o(&loop_);
  acceptInto(o);   // the peer never closes
  ASSERT_TRUE(o.conn.lingerClose(30));
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.lingers, 1);
  EXPECT_EQ(o.timers, 0);
}

TEST_F(ConnectionTest, ConnectReportsSuccess) {
  Owner o(&loop_);
  sockaddr_in a = loopback(port_);
  ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), 1000), 0);
  EXPECT_TRUE(o.conn.connecting());
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1; }));
  EXPECT_EQ(o.connected[0], 0);
  EXPECT_FALSE(o.conn.connecting());
  EXPECT_EQ(ntohs(reinterpret_cast<const sockaddr_in*>(o.conn.peer())->sin_port), port_);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, ConnectRefused) {
  Owner o(&loop_);
  sockaddr_in a = loopback(test::closedPort());
  ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), 1000), 0);
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1; }));
  EXPECT_EQ(o.connected[0], UV_ECONNREFUSED);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, ConnectTimesOut) {
  test::SilentPort silent;
  ASSERT_TRUE(silent.swallowsConnects(100ms));
  Owner o(&loop_);
  o.on_connected = [&](int) { o.conn.close(); };
  sockaddr_in a = loopback(silent.port());
  ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), 50), 0);
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.connected, std::vector<int>{UV_ETIMEDOUT});
  EXPECT_EQ(o.timers, 0);
}

// Closing mid-connect cancels it: the owner hears no connect result, only onClosed, after the
// connect request's own callback.
TEST_F(ConnectionTest, CloseWhileConnectingCallsOnlyOnClosed) {
  test::SilentPort silent;
  Owner o(&loop_);
  sockaddr_in a = loopback(silent.port());
  ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), 0), 0);
  uv_run(&loop_, UV_RUN_NOWAIT);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_TRUE(o.connected.empty());
}

TEST_F(ConnectionTest, CloseWithoutAcceptFreesQuietly) {
  Owner o(&loop_);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

// A transport with an opening of its own, as TLS's connect side has: it sends "HELLO\n" and
// the handshake ends when the peer answers "OK\n" (done) or "NO\n" (refused); after it,
// bytes pass through as the plain transport's do.
class ScriptedHandshake final : public Transport {
 public:
  void allocRead(Connection& c, uv_buf_t* buf) noexcept override {
    if (!done_) {
      *buf = uv_buf_init(scratch_, sizeof scratch_);
      return;
    }
    c.ownerBuffer(buf);
  }
  void readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept override {
    if (done_) {
      c.deliver(n, buf);
      return;
    }
    if (n < 0) {
      c.handshakeDone(static_cast<int>(n));
      return;
    }
    heard_.append(buf->base, static_cast<size_t>(n));
    if (heard_ == "OK\n") {
      done_ = true;
      c.handshakeDone(0);
    } else if (heard_ == "NO\n") {
      c.handshakeDone(UV_EPROTO);
    }
  }
  int tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept override {
    return uv_try_write(c.stream(), bufs, n);
  }
  int queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                 uv_write_cb cb) noexcept override {
    return uv_write(req, c.stream(), bufs, n, cb);
  }
  int shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept override {
    return uv_shutdown(req, c.stream(), cb);
  }
  size_t queued(Connection& c) noexcept override { return c.stream()->write_queue_size; }
  bool handshakes() const noexcept override { return true; }
  int startHandshake(Connection& c) noexcept override {
    ++started;
    uv_buf_t b = uv_buf_init(const_cast<char*>("HELLO\n"), 6);
    return uv_try_write(c.stream(), &b, 1) == 6 ? 0 : UV_EIO;
  }
  void release(Connection&) noexcept override { ++released; }

  int started = 0, released = 0;

 private:
  char scratch_[64];
  std::string heard_;
  bool done_ = false;
};

class ConnectHandshakeTest : public ConnectionTest {
 protected:
  // Connects `o` through `t` and accepts the other end into `server`, which reads.
  void connectThrough(Owner& o, ScriptedHandshake& t, Owner& server, uint64_t timeout_ms) {
    sockaddr_in a = loopback(port_);
    ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), timeout_ms, &t), 0);
    ASSERT_TRUE(runUntil([&] { return incoming_ > 0; }));
    --incoming_;
    ASSERT_EQ(server.conn.accept(stream(), nullptr), 0);
    server.conn.readIntoPool(&pool_);
    server.pool = &pool_;
    ASSERT_EQ(server.conn.readStart(), 0);
  }
  void answer(Owner& server, const char* text) {
    uv_buf_t b = uv_buf_init(const_cast<char*>(text), static_cast<unsigned>(strlen(text)));
    ConnectionWrite w;
    ASSERT_EQ(server.conn.write(&w, &b, 1), static_cast<ssize_t>(b.len));
  }
  void closeBoth(Owner& o, Owner& server) {
    o.conn.close();
    server.conn.close();
    ASSERT_TRUE(runUntil([&] { return o.closed == 1 && server.closed == 1; }));
  }
};

TEST_F(ConnectHandshakeTest, OnConnectedWaitsForTheHandshake) {
  Owner o(&loop_), server(&loop_);
  ScriptedHandshake t;
  connectThrough(o, t, server, 5000);
  ASSERT_TRUE(runUntil([&] { return server.got == "HELLO\n"; }));
  EXPECT_TRUE(o.connected.empty());   // TCP is up, the handshake is not
  EXPECT_TRUE(o.conn.connecting());
  EXPECT_TRUE(o.conn.handshaking());
  answer(server, "OK\n");
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1; }));
  EXPECT_EQ(o.connected[0], 0);
  EXPECT_FALSE(o.conn.connecting());
  EXPECT_EQ(t.started, 1);
  closeBoth(o, server);
  EXPECT_EQ(t.released, 1);
}

TEST_F(ConnectHandshakeTest, ARefusedHandshakeIsAFailedConnect) {
  Owner o(&loop_), server(&loop_);
  ScriptedHandshake t;
  connectThrough(o, t, server, 5000);
  answer(server, "NO\n");
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1; }));
  EXPECT_EQ(o.connected[0], UV_EPROTO);
  EXPECT_TRUE(o.errors.empty());   // a connect result, not a read error
  closeBoth(o, server);
}

TEST_F(ConnectHandshakeTest, AHandshakeUnfinishedAtTheDeadlineTimesOut) {
  Owner o(&loop_), server(&loop_);
  ScriptedHandshake t;
  o.on_connected = [&](int) { o.conn.close(); };
  connectThrough(o, t, server, 50);
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.connected, std::vector<int>{UV_ETIMEDOUT});
  EXPECT_EQ(o.timers, 0);   // the connect's timer, not the owner's
  server.conn.close();
  ASSERT_TRUE(runUntil([&] { return server.closed == 1; }));
}

TEST_F(ConnectHandshakeTest, ReadingStopsAfterTheHandshakeUnlessTheOwnerAskedDuringIt) {
  Owner o(&loop_), server(&loop_);
  ScriptedHandshake t;
  connectThrough(o, t, server, 5000);
  answer(server, "OK\n");
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1; }));
  EXPECT_FALSE(o.conn.reading());   // the handshake's reads were its own
  closeBoth(o, server);

  Owner o2(&loop_), server2(&loop_);
  ScriptedHandshake t2;
  o2.conn.readIntoPool(&pool_);
  o2.pool = &pool_;
  connectThrough(o2, t2, server2, 5000);
  ASSERT_TRUE(runUntil([&] { return o2.conn.handshaking(); }));
  EXPECT_EQ(o2.conn.readStart(), 0);   // asked for while the handshake reads
  answer(server2, "OK\n");
  ASSERT_TRUE(runUntil([&] { return o2.connected.size() == 1; }));
  EXPECT_TRUE(o2.conn.reading());
  answer(server2, "data");
  ASSERT_TRUE(runUntil([&] { return o2.got == "data"; }));
  closeBoth(o2, server2);
}

TEST_F(ConnectHandshakeTest, CloseMidHandshakeCallsOnlyOnClosed) {
  Owner o(&loop_), server(&loop_);
  ScriptedHandshake t;
  connectThrough(o, t, server, 5000);
  ASSERT_TRUE(runUntil([&] { return o.conn.handshaking(); }));
  o.conn.close();
  answer(server, "OK\n");
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_TRUE(o.connected.empty());
  EXPECT_EQ(t.released, 1);
  server.conn.close();
  ASSERT_TRUE(runUntil([&] { return server.closed == 1; }));
}

// --- The lifecycle, one state at a time ------------------------------------------------------

TEST(ConnStateTest, EveryStateHasANameOfItsOwn) {
  std::set<std::string> names;
  for (ConnState st : {ConnState::kNew, ConnState::kConnecting, ConnState::kHandshaking,
                       ConnState::kAccepting, ConnState::kOpen, ConnState::kFailed,
                       ConnState::kLingering, ConnState::kClosing}) {
    EXPECT_STRNE(connStateName(st), "?");
    names.insert(connStateName(st));
  }
  EXPECT_EQ(names.size(), 8u);
}

TEST_F(ConnectionTest, AConnectGoesConnectingThenOpen) {
  Owner o(&loop_), server(&loop_);
  EXPECT_EQ(o.conn.state(), ConnState::kNew);
  sockaddr_in a = loopback(port_);
  ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), 5000), 0);
  EXPECT_EQ(o.conn.state(), ConnState::kConnecting);
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1 && incoming_ > 0; }));
  EXPECT_EQ(o.connected[0], 0);
  EXPECT_EQ(o.conn.state(), ConnState::kOpen);
  --incoming_;
  ASSERT_EQ(server.conn.accept(stream(), nullptr), 0);
  EXPECT_EQ(server.conn.state(), ConnState::kOpen);
  o.conn.close();
  EXPECT_EQ(o.conn.state(), ConnState::kClosing);
  server.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1 && server.closed == 1; }));
}

TEST_F(ConnectionTest, ARefusedConnectIsFailedUntilTheOwnerCloses) {
  Owner o(&loop_);
  sockaddr_in a = loopback(test::closedPort());
  ASSERT_EQ(o.conn.connect(reinterpret_cast<sockaddr*>(&a), 5000), 0);
  ASSERT_TRUE(runUntil([&] { return o.connected.size() == 1; }));
  EXPECT_LT(o.connected[0], 0);
  EXPECT_EQ(o.conn.state(), ConnState::kFailed);
  EXPECT_FALSE(o.conn.connecting());
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

TEST_F(ConnectionTest, ALingerEndsInClosingWhenThePeerCloses) {
  Owner o(&loop_);
  o.conn.readIntoPool(&pool_);
  o.pool = &pool_;
  int fd = acceptInto(o);
  o.conn.lingerClose(5000);
  EXPECT_EQ(o.conn.state(), ConnState::kLingering);
  EXPECT_TRUE(o.conn.lingering());
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.lingers, 1);
  EXPECT_EQ(o.conn.state(), ConnState::kClosing);
}

// Each change of state is one debug line with both states' names, whatever the owner.
TEST_F(ConnectionTest, StateChangesAreLoggedByName) {
  setLogLevel(LogLevel::kDebug);
  testing::internal::CaptureStderr();
  Owner o(&loop_);
  o.conn.readIntoPool(&pool_);
  o.pool = &pool_;
  acceptInto(o);
  o.conn.lingerClose(5000);
  o.conn.close();
  const bool closed = runUntil([&] { return o.closed == 1; });
  const std::string log = testing::internal::GetCapturedStderr();
  setLogLevel(LogLevel::kInfo);
  ASSERT_TRUE(closed);
  EXPECT_NE(log.find(": new -> open\n"), std::string::npos) << log;
  EXPECT_NE(log.find(": open -> lingering\n"), std::string::npos) << log;
  EXPECT_NE(log.find(": lingering -> closing\n"), std::string::npos) << log;
}

// --- The transport is accept's argument ---------------------------------------------------------

TEST_F(ConnectionTest, AnAcceptWithNoTransportIsPlainAndOpen) {
  Owner o(&loop_);
  acceptInto(o);
  EXPECT_TRUE(o.conn.plain());
  EXPECT_TRUE(o.conn.open());
  EXPECT_EQ(o.conn.state(), ConnState::kOpen);
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(o.established, 0);   // a plain connection is open from the start
}

// An accept side's opening, as a TLS listener's: nothing reaches the owner until the client
// has sent "HI\n"; then Connection::established(), and bytes pass through.
class ScriptedOpening final : public Transport {
 public:
  void allocRead(Connection& c, uv_buf_t* buf) noexcept override {
    if (!done_) {
      *buf = uv_buf_init(scratch_, sizeof scratch_);
      return;
    }
    c.ownerBuffer(buf);
  }
  void readDone(Connection& c, ssize_t n, const uv_buf_t* buf) noexcept override {
    if (done_ || n < 0) {
      uv_buf_t none = uv_buf_init(nullptr, 0);
      c.deliver(n, done_ ? buf : &none);
      return;
    }
    heard_.append(buf->base, static_cast<size_t>(n));
    if (heard_ == "HI\n") {
      done_ = true;
      c.established();
    }
  }
  int tryWrite(Connection& c, const uv_buf_t* bufs, unsigned n) noexcept override {
    return uv_try_write(c.stream(), bufs, n);
  }
  int queueWrite(Connection& c, uv_write_t* req, const uv_buf_t* bufs, unsigned n,
                 uv_write_cb cb) noexcept override {
    return uv_write(req, c.stream(), bufs, n, cb);
  }
  int shutdown(Connection& c, uv_shutdown_t* req, uv_shutdown_cb cb) noexcept override {
    return uv_shutdown(req, c.stream(), cb);
  }
  size_t queued(Connection& c) noexcept override { return c.stream()->write_queue_size; }
  bool established() const noexcept override { return done_; }
  void release(Connection&) noexcept override { ++released; }

  // An AcceptTransport's make: this transport, for the connection being accepted.
  static Transport* make(void* ctx, Connection& c) noexcept {
    auto* t = static_cast<ScriptedOpening*>(ctx);
    t->made_for = &c;
    return t;
  }

  Connection* made_for = nullptr;
  int released = 0;

 private:
  char scratch_[64];
  std::string heard_;
  bool done_ = false;
};

TEST_F(ConnectionTest, AcceptPutsTheTransportItIsGivenUnderTheConnection) {
  Owner o(&loop_);
  o.conn.readIntoPool(&pool_);
  o.pool = &pool_;
  ScriptedOpening t;
  const AcceptTransport transport{ScriptedOpening::make, &t};
  int fd = dial(port_);
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  ASSERT_TRUE(runUntil([&] { return incoming_ > 0; }));
  --incoming_;
  ASSERT_EQ(o.conn.accept(stream(), &transport), 0);
  EXPECT_EQ(t.made_for, &o.conn);
  EXPECT_EQ(o.conn.transport(), &t);
  EXPECT_FALSE(o.conn.plain());
  EXPECT_FALSE(o.conn.open());
  EXPECT_EQ(o.conn.state(), ConnState::kAccepting);
  ASSERT_EQ(o.conn.readStart(), 0);   // the opening runs on the owner's reads
  ASSERT_EQ(::write(fd, "HI\n", 3), 3);
  ASSERT_TRUE(runUntil([&] { return o.established == 1; }));
  EXPECT_EQ(o.conn.state(), ConnState::kOpen);
  EXPECT_TRUE(o.got.empty());   // the opening's bytes were the transport's
  ASSERT_EQ(::write(fd, "data", 4), 4);
  ASSERT_TRUE(runUntil([&] { return o.got == "data"; }));
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
  EXPECT_EQ(t.released, 1);
}

TEST_F(ConnectionTest, AnAcceptWhoseTransportCannotBeMadeFails) {
  Owner o(&loop_);
  const AcceptTransport none{[](void*, Connection&) noexcept -> Transport* { return nullptr; },
                             nullptr};
  int fd = dial(port_);
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  ASSERT_TRUE(runUntil([&] { return incoming_ > 0; }));
  --incoming_;
  EXPECT_EQ(o.conn.accept(stream(), &none), UV_ENOMEM);
  EXPECT_EQ(o.conn.state(), ConnState::kNew);
  EXPECT_TRUE(o.conn.plain());
  o.conn.close();
  ASSERT_TRUE(runUntil([&] { return o.closed == 1; }));
}

// A TLS listener's transport, handed to accept as a listener hands it to its protocol: the
// accepted side opens (onEstablished) once lb's own connect side has handshaken with it, and
// both owners see plaintext in the same dialect as a plain connection's.
class TlsAcceptTest : public ConnectionTest {
 protected:
  void SetUp() override {
    ConnectionTest::SetUp();
    std::string tmpl = "/tmp/lb_conn_tls_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    test::TlsCa ca(dir_);
    ASSERT_TRUE(ca.ok()) << ca.error();
    test::TlsCert leaf = ca.issue("a", {"a.test"});
    ASSERT_TRUE(leaf.ok) << leaf.error;
    TlsServerOptions server;
    server.certificates.push_back({leaf.cert, leaf.key});
    std::vector<TlsBuildError> server_errors;
    server_ = TlsServerContext::build(server, &server_errors);
    ASSERT_NE(server_, nullptr);
    TlsClientOptions client;
    client.ca = ca.certPath();
    client.server_name = "a.test";
    client.label = "test";
    std::vector<TlsClientBuildError> client_errors;
    client_ = TlsClientContext::build(client, 1, &client_errors);
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    ConnectionTest::TearDown();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  static Transport* makeTls(void* ctx, Connection&) noexcept {
    auto* self = static_cast<TlsAcceptTest*>(ctx);
    return TlsTransport::accept(self->server_, self->server_stats_, false);
  }

  std::string dir_;
  std::shared_ptr<const TlsServerContext> server_;
  std::shared_ptr<const TlsClientContext> client_;
  std::shared_ptr<TlsWorkerStats> server_stats_ = std::make_shared<TlsWorkerStats>();
  std::shared_ptr<TlsWorkerStats> client_stats_ = std::make_shared<TlsWorkerStats>();
};

TEST_F(TlsAcceptTest, TheListenersTransportArgumentHandshakesUnderTheOwner) {
  Owner client(&loop_), server(&loop_);
  client.conn.readIntoPool(&pool_);
  client.pool = &pool_;
  server.conn.readIntoPool(&pool_);
  server.pool = &pool_;
  sockaddr_in a = loopback(port_);
  Transport* tls = TlsTransport::connect(client_, client_stats_, 0,
                                         reinterpret_cast<sockaddr*>(&a));
  ASSERT_NE(tls, nullptr);
  ASSERT_EQ(client.conn.connect(reinterpret_cast<sockaddr*>(&a), 5000, tls), 0);
  ASSERT_TRUE(runUntil([&] { return incoming_ > 0; }));
  --incoming_;
  const AcceptTransport transport{makeTls, this};
  ASSERT_EQ(server.conn.accept(stream(), &transport), 0);
  EXPECT_FALSE(server.conn.plain());
  EXPECT_EQ(server.conn.state(), ConnState::kAccepting);
  ASSERT_EQ(server.conn.readStart(), 0);
  ASSERT_TRUE(runUntil([&] { return server.established == 1 && client.connected.size() == 1; }));
  EXPECT_EQ(client.connected[0], 0);
  EXPECT_EQ(server.conn.state(), ConnState::kOpen);
  EXPECT_EQ(client.conn.state(), ConnState::kOpen);
  uv_buf_t b = uv_buf_init(const_cast<char*>("ping"), 4);
  ConnectionWrite w;
  ASSERT_GE(client.conn.write(&w, &b, 1), 0);
  ASSERT_TRUE(runUntil([&] { return server.got == "ping"; }));
  client.conn.close();
  server.conn.close();
  ASSERT_TRUE(runUntil([&] { return client.closed == 1 && server.closed == 1; }));
}

// --- One owner after another --------------------------------------------------------------

TEST_F(ConnectionTest, SetOwnerHandsTheNextCallbacksToTheNewOwner) {
  Owner first(&loop_), second(&loop_);
  first.conn.readIntoPool(&pool_);
  first.pool = &pool_;
  second.pool = &pool_;
  int fd = acceptInto(first);
  ASSERT_EQ(first.conn.readStart(), 0);
  ASSERT_EQ(::write(fd, "one", 3), 3);
  ASSERT_TRUE(runUntil([&] { return first.got == "one"; }));
  first.conn.setOwner(second);
  EXPECT_EQ(&first.conn.owner(), &second);
  ASSERT_EQ(::write(fd, "two", 3), 3);
  ASSERT_TRUE(runUntil([&] { return second.got == "two"; }));
  EXPECT_EQ(first.got, "one");
  first.conn.close();
  ASSERT_TRUE(runUntil([&] { return second.closed == 1; }));
  EXPECT_EQ(first.closed, 0);
  second.conn.close();   // its own, never opened
  ASSERT_TRUE(runUntil([&] { return second.closed == 2; }));
}

}  // namespace
}  // namespace lb
