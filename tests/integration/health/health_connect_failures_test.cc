// lb_backend_connect_failures_total{reason} for HTTP and TCP alike, against a real lb, one
// real lb-origin and two backends that cannot be reached: one refuses (nothing listens on its
// port), one never completes a connect (a listener whose accept queue is full: the kernel
// drops the SYNs, as for a host that has gone silent). Every request or connection whose turn
// falls on one of them moves to the next host and is answered; each failed connect is counted
// with its reason. The HTTP and the TCP test each use one listener of the same lb, so what is
// counted comes from that protocol alone.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <string>
#include <vector>

#include "tests/support/health_harness.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

// A listening socket on 127.0.0.1 that accepts nothing and whose accept queue is full, so
// that a new connect to it gets no answer at all. Test-thread only.
class SilentListener {
 public:
  SilentListener() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        listen(listen_fd_, 0) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    // Connects until one is left unanswered: the queue is full from then on.
    for (int i = 0; i < 16; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (fd < 0) return;
      connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 300) == 0) {   // no SYN-ACK within 300 ms: silent
        ::close(fd);
        full_ = true;
        return;
      }
      fillers_.push_back(fd);
    }
  }
  ~SilentListener() {
    for (int fd : fillers_) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  bool ok() const { return full_; }
  uint16_t port() const { return port_; }

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  bool full_ = false;
  std::vector<int> fillers_;
};

class HealthConnectFailuresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(silent_.ok()) << "could not fill the accept queue of the silent listener";
    std::string why;
    ASSERT_TRUE(h_.startOrigin("a", &why)) << why;
    // {PORT2} is free: nothing listens there, its connects are refused. One worker: one
    // rotation, so that every backend gets its turn within three connections.
    ASSERT_TRUE(h_.startLb(
        "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
        "on_missing_key = \"round_robin\"\ntimeouts = { connect = \"200ms\" }\n"
        "[listeners.pipe]\nlisten = \"127.0.0.1:{PORT1}\"\nprotocol = \"tcp\"\ncluster = \"c\"\n"
        "on_missing_key = \"round_robin\"\ntimeouts = { connect = \"200ms\" }\n"
        "[clusters.c]\nselector = \"ring_hash\"\nretries = 3\nbackends = [\n"
        "  { name = \"a\", address = \"127.0.0.1:" +
            std::to_string(h_.originPort("a")) +
            "\" },\n"
            "  { name = \"refused\", address = \"127.0.0.1:{PORT2}\" },\n"
            "  { name = \"silent\", address = \"127.0.0.1:" +
            std::to_string(silent_.port()) + "\" },\n]\n",
        &why))
        << why;
  }

  double failures(const std::string& backend, const std::string& reason) {
    return metricSample(h_.adminPort(), "lb_backend_connect_failures_total",
                        "backend=\"" + backend + "\",cluster=\"c\",reason=\"" + reason + "\"");
  }

  // Every connect failure so far is zero: the other test's protocol counted nothing here.
  void expectNoneYet() {
    for (const char* b : {"a", "refused", "silent"})
      for (const char* r : {"refused", "timeout", "reset"}) EXPECT_EQ(failures(b, r), 0) << b << r;
  }

  SilentListener silent_;
  ProxyHarness h_;
};

TEST_F(HealthConnectFailuresTest, HttpConnectFailuresAreCountedByReasonAndMovedOn) {
  expectNoneYet();
  // Six keyless requests, each on its own connection: each backend's turn comes twice.
  for (int i = 0; i < 6; ++i) {
    TcpClient c;
    ASSERT_TRUE(c.connect(h_.port()));
    int status = 0;
    EXPECT_EQ(backendFor(c, "/", "", &status), "a") << "request " << i << ": " << status;
  }
  EXPECT_GE(failures("refused", "refused"), 1);
  EXPECT_GE(failures("silent", "timeout"), 1);
  EXPECT_EQ(failures("a", "refused") + failures("a", "timeout") + failures("a", "reset"), 0);
}

TEST_F(HealthConnectFailuresTest, TcpConnectFailuresAreCountedByReasonAndMovedOn) {
  expectNoneYet();
  // Six connections through the tcp listener, an HTTP request on each: the bytes reach
  // whichever backend the connection was piped to, always a.
  for (int i = 0; i < 6; ++i) {
    TcpClient c;
    ASSERT_TRUE(c.connect(h_.extraPort(1)));
    int status = 0;
    EXPECT_EQ(backendFor(c, "/", "", &status), "a") << "connection " << i << ": " << status;
  }
  EXPECT_GE(failures("refused", "refused"), 1);
  EXPECT_GE(failures("silent", "timeout"), 1);
  EXPECT_EQ(failures("a", "refused") + failures("a", "timeout") + failures("a", "reset"), 0);
}

}  // namespace
}  // namespace lb::test
