// lb under a service manager (Type=notify): started with NOTIFY_SOCKET pointing at a unix
// datagram socket this test reads, as systemd would, it must say READY=1 only once its
// listeners and admin server accept, RELOADING=1 then READY=1 around a SIGHUP, and
// STOPPING=1 when SIGTERM starts the drain.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// The receiving end of sd_notify(3): a SOCK_DGRAM socket bound to a path in the temp dir.
class NotifySocket {
 public:
  NotifySocket() {
    path_ = tempPath("notify");
    unlink(path_.c_str());   // tempPath made a file there; the socket takes the name
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path_.size() >= sizeof a.sun_path) return;
    memcpy(a.sun_path, path_.c_str(), path_.size() + 1);
    ok_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

  // The next datagram, or nullopt when none arrives before the deadline.
  std::optional<std::string> next(Millis timeout = 10s) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool ok_ = false;
};

// The lines of a notify message ("READY=1\nSTATUS=...") as one string each.
bool hasLine(const std::string& message, const std::string& line) {
  return ("\n" + message + "\n").find("\n" + line + "\n") != std::string::npos;
}

// MONOTONIC_USEC's value, or 0 when absent.
uint64_t monotonicUsec(const std::string& message) {
  size_t at = message.find("MONOTONIC_USEC=");
  return at == std::string::npos ? 0 : std::strtoull(message.c_str() + at + 15, nullptr, 10);
}

uint64_t nowMonotonicUsec() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_nsec) / 1000;
}

class ServiceNotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(notify_.ok()) << notify_.path();
    http_ = freePort();
    tcp_ = freePort();
    admin_ = freePort();
    writeWholeFile(config_, config());
  }
  void TearDown() override { unlink(config_.c_str()); }

  std::string config() const {
    return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
           std::to_string(admin_) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
           std::to_string(http_) + "\"\ncluster = \"c\"\n[listeners.raw]\nlisten = \"127.0.0.1:" +
           std::to_string(tcp_) + "\"\nprotocol = \"tcp\"\ncluster = \"c\"\n" +
           "hash = [ { source_ip = true } ]\n[clusters.c]\n" +
           "backends = [ { name = \"a\", address = \"127.0.0.1:9\" } ]\n";
  }

  // Starts lb with NOTIFY_SOCKET set for it alone.
  void startLb() {
    setenv("NOTIFY_SOCKET", notify_.path().c_str(), 1);
    lb_ = std::make_unique<Process>(std::vector<std::string>{builtBinary("lb"), "-c", config_});
    unsetenv("NOTIFY_SOCKET");
  }

  // Every port accepts a connection at once, without waiting.
  bool everyPortAcceptsNow() {
    return waitForPort(http_, 0ms) && waitForPort(tcp_, 0ms) && waitForPort(admin_, 0ms);
  }

  NotifySocket notify_;
  std::string config_ = tempPath("notify-conf");
  uint16_t http_ = 0, tcp_ = 0, admin_ = 0;
  std::unique_ptr<Process> lb_;
};

TEST_F(ServiceNotifyTest, ReadyComesOnlyOnceEveryListenerAndTheAdminServerAccept) {
  startLb();
  auto first = notify_.next();
  ASSERT_TRUE(first.has_value()) << "no notification\n" << lb_->output();
  EXPECT_TRUE(hasLine(*first, "READY=1")) << *first;
  // Checked once, right after READY=1: a manager that starts dependents now must find lb
  // accepting on every port.
  EXPECT_TRUE(everyPortAcceptsNow()) << lb_->output();
  EXPECT_EQ(lb_->stop(SIGTERM, 10s), 0) << lb_->output();
}

TEST_F(ServiceNotifyTest, ReloadIsBracketedByReloadingAndReady) {
  startLb();
  auto ready = notify_.next();
  ASSERT_TRUE(ready && hasLine(*ready, "READY=1")) << lb_->output();
  const uint64_t before = nowMonotonicUsec();
  kill(lb_->pid(), SIGHUP);
  auto reloading = notify_.next();
  ASSERT_TRUE(reloading.has_value()) << lb_->output();
  EXPECT_TRUE(hasLine(*reloading, "RELOADING=1")) << *reloading;
  // systemd >= 253 matches a reload to its READY=1 by this timestamp (CLOCK_MONOTONIC, µs).
  const uint64_t stamp = monotonicUsec(*reloading);
  EXPECT_GE(stamp, before) << *reloading;
  EXPECT_LE(stamp, nowMonotonicUsec()) << *reloading;
  auto ready_again = notify_.next();
  ASSERT_TRUE(ready_again.has_value()) << lb_->output();
  EXPECT_TRUE(hasLine(*ready_again, "READY=1")) << *ready_again;
  EXPECT_NE(lb_->output().find("reloaded "), std::string::npos) << lb_->output();
  EXPECT_EQ(lb_->stop(SIGTERM, 10s), 0) << lb_->output();
}

TEST_F(ServiceNotifyTest, RefusedReloadStillEndsWithReady) {
  startLb();
  ASSERT_TRUE(notify_.next().has_value()) << lb_->output();
  writeWholeFile(config_, config() + "[bogus]\n");
  kill(lb_->pid(), SIGHUP);
  auto reloading = notify_.next();
  ASSERT_TRUE(reloading && hasLine(*reloading, "RELOADING=1")) << lb_->output();
  // lb keeps serving the old config: systemd must not be left waiting in "reloading".
  auto ready = notify_.next();
  ASSERT_TRUE(ready.has_value()) << lb_->output();
  EXPECT_TRUE(hasLine(*ready, "READY=1")) << *ready;
  EXPECT_NE(lb_->output().find("reload failed"), std::string::npos) << lb_->output();
  EXPECT_TRUE(everyPortAcceptsNow());
  EXPECT_EQ(lb_->stop(SIGTERM, 10s), 0) << lb_->output();
}

TEST_F(ServiceNotifyTest, SigtermSendsStoppingThenExitsZero) {
  startLb();
  ASSERT_TRUE(notify_.next().has_value()) << lb_->output();
  kill(lb_->pid(), SIGTERM);
  auto stopping = notify_.next();
  ASSERT_TRUE(stopping.has_value()) << lb_->output();
  EXPECT_TRUE(hasLine(*stopping, "STOPPING=1")) << *stopping;
  auto code = lb_->waitExit(10s);
  ASSERT_TRUE(code.has_value()) << lb_->output();
  EXPECT_EQ(*code, 0) << lb_->output();
}

}  // namespace
}  // namespace lb::test
