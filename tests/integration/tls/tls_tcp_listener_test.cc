// A tcp listener that terminates TLS dials its backend only once the client's handshake is
// over, as HAProxy's ssl binds do: a port scan, plaintext to the TLS port or a handshake that
// never ends costs no backend connection, and ends at timeouts.idle with an access-log status
// of its own; a client's EOF without close_notify is an ordinary end. Real lb, real
// redis-server behind it (its `total_connections_received` counts every connection it was
// offered), redis-cli --tls and raw sockets as the clients.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {
namespace {

class TlsTcpListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    ca_ = std::make_unique<TlsCa>(dir_.path());
    ASSERT_TRUE(ca_->ok()) << ca_->error();
    cert_ = ca_->issue("a", {"a.test"});
    ASSERT_TRUE(cert_.ok) << cert_.error;
    redis_ = std::make_unique<CacheServer>(CacheServer::kRedis);
    ASSERT_TRUE(redis_->ok()) << redis_->output();
    port_ = freePort();
    ASSERT_TRUE(lb_.start("[lb]\nworkers = 1\naccess_log = \"" + lb_.accessLogPath() +
                              "\"\n[admin]\nlisten = \"127.0.0.1:" + std::to_string(freePort()) +
                              "\"\n[listeners.pipe]\nlisten = \"127.0.0.1:" +
                              std::to_string(port_) +
                              "\"\nprotocol = \"tcp\"\ncluster = \"cache\"\n"
                              "hash = [ { five_tuple = true } ]\n"
                              "timeouts = { idle = \"600ms\" }\n"
                              "tls = { certificates = [ { cert = \"" + cert_.cert +
                              "\", key = \"" + cert_.key + "\" } ] }\n"
                              "[clusters.cache]\nbackends = [ { name = \"redis-1\", address = \"" +
                              redis_->address() + "\" } ]\n",
                          {port_}))
        << lb_.output();
    // lb.start's own probe of the port is a client that left before any handshake.
    ASSERT_TRUE(waitStatusCount("tls_handshake_failed", 1)) << lb_.accessLog();
  }

  // Connections redis-server has accepted so far, asked straight (this one counts too).
  long accepted() {
    TcpClient c;
    if (!c.connect(redis_->port())) return -1;
    auto info = redisCall(c, {"INFO", "stats"});
    if (!info) return -1;
    const std::string field = "total_connections_received:";
    const size_t at = info->find(field);
    return at == std::string::npos ? -1 : std::stol(info->substr(at + field.size()));
  }

  bool waitStatusCount(const std::string& status, size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (countOf(lb_.accessLog(), "status=" + status) < n) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  CommandResult redisCli(const std::string& commands) {
    return runCommand({"redis-cli", "--tls", "--cacert", ca_->certPath(), "--sni", "a.test", "-h",
                       "127.0.0.1", "-p", std::to_string(port_)},
                      10s, commands);
  }

  TempDir dir_{"tls-tcp"};
  std::unique_ptr<TlsCa> ca_;
  TlsCert cert_;
  std::unique_ptr<CacheServer> redis_;
  LbProcess lb_;
  uint16_t port_ = 0;
};

TEST_F(TlsTcpListenerTest, PlaintextToTheTlsPortDialsNoBackend) {
  const long before = accepted();
  ASSERT_GE(before, 0);
  TcpClient plain;
  ASSERT_TRUE(plain.connect(port_));
  ASSERT_TRUE(plain.send("PING\r\n"));
  EXPECT_TRUE(plain.waitClosed(5s));
  EXPECT_EQ(plain.buffer(), "");
  ASSERT_TRUE(waitStatusCount("tls_handshake_failed", 2)) << lb_.accessLog();
  // Only our own INFO connection since `before`: lb never connected for the plaintext one.
  EXPECT_EQ(accepted(), before + 1);
}

TEST_F(TlsTcpListenerTest, AStalledHandshakeEndsAtTheIdleTimeoutWithoutABackend) {
  const long before = accepted();
  ASSERT_GE(before, 0);
  TcpClient stalled;
  ASSERT_TRUE(stalled.connect(port_));
  ASSERT_TRUE(stalled.send(std::string("\x16\x03\x01", 3)));   // half a record header
  EXPECT_TRUE(stalled.waitClosed(5s));                           // at timeouts.idle, 600ms
  ASSERT_TRUE(waitStatusCount("tls_handshake_failed", 2)) << lb_.accessLog();
  for (const auto& line : lines(lb_.accessLog(), true))
    EXPECT_EQ(logField(line, "backend"), "-") << line;
  EXPECT_EQ(accepted(), before + 1);
}

TEST_F(TlsTcpListenerTest, AFinishedHandshakeDialsOneBackendAndItsFirstBytesArrive) {
  const long before = accepted();
  ASSERT_GE(before, 0);
  // redis-cli sends its first command right behind the handshake's last flight: bytes that
  // arrive before the backend is connected wait in the transport, none is lost.
  auto r = redisCli("SET tls:pipe hello\nGET tls:pipe\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\nhello\n") << r.err;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (countOf(lb_.accessLog(), "backend=redis-1") < 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(countOf(lb_.accessLog(), "backend=redis-1"), 1u) << lb_.accessLog();
  EXPECT_EQ(accepted(), before + 2);   // lb's one connection, and our INFO
}

TEST_F(TlsTcpListenerTest, AClientThatClosesWithoutCloseNotifyEndsNormally) {
  // redis-cli exits without a TLS close_notify: its FIN is the end of its stream, passed to
  // the backend as one, and the session ends "ok" rather than as a reset.
  auto r = redisCli("PING\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "PONG\n") << r.err;
  ASSERT_TRUE(waitStatusCount("ok", 1)) << lb_.accessLog();
  EXPECT_EQ(countOf(lb_.accessLog(), "status=client_reset"), 0u) << lb_.accessLog();
}

}  // namespace
}  // namespace lb::test
