// Socket activation as systemd does it (conf/systemd/lb.socket): the listening socket is
// handed to lb as fd 3 with LISTEN_FDS and LISTEN_PID set, lb serves on it instead of binding,
// and connections made while no lb runs wait in the socket's queue and are answered by the
// next lb, as across `systemctl restart lb`. systemd itself is not needed: a small launcher
// sets what it would.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// What systemd does for a socket unit, in small: binds and listens on 127.0.0.1:argv[1] and
// keeps the socket; each time the file argv[2] + N appears (N = 0, 1), starts argv[3:] with
// the socket as fd 3, LISTEN_FDS=1 and LISTEN_PID set to the started process, and waits for it
// to exit. Prints "bound", "started PID", "exited". Every wait is bounded.
constexpr char kSocketManager[] = R"(
import os, socket, sys, time
port, go, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', port))
s.listen(64)
print('bound', flush=True)
for n in range(2):
    end = time.time() + 30
    while not os.path.exists(go + str(n)):
        if time.time() > end: sys.exit(1)
        time.sleep(0.01)
    pid = os.fork()
    if pid == 0:
        os.dup2(s.fileno(), 3)
        os.set_inheritable(3, True)   # dup2 onto itself keeps close-on-exec
        os.environ['LISTEN_FDS'] = '1'
        os.environ['LISTEN_PID'] = str(os.getpid())
        os.execv(argv[0], argv)
    print('started %d' % pid, flush=True)
    os.waitpid(pid, 0)
    print('exited', flush=True)
)";

class SocketActivationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.ok()) << fleet_.error();
    writeWholeFile(config_,
                   "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                       std::to_string(freePort()) + "\"\n[listeners.web]\nlisten = "
                       "\"127.0.0.1:" + std::to_string(port_) + "\"\nprotocol = \"http\"\n"
                       "cluster = \"origins\"\n[clusters.origins]\nbackends = [\n" +
                       fleet_.backends(1) + "]\n");
    manager_ = std::make_unique<Process>(std::vector<std::string>{
        "/usr/bin/python3", "-c", kSocketManager, std::to_string(port_), go_,
        builtBinary("lb"), "--config", config_});
    ASSERT_TRUE(manager_->waitForOutput("bound", 10s)) << manager_->output();
  }
  void TearDown() override {
    if (pid_t lb = startedPid(); lb > 0) kill(lb, SIGKILL);
    manager_.reset();
    for (int n = 0; n < 2; ++n) unlink((go_ + std::to_string(n)).c_str());
    unlink(go_.c_str());
    unlink(config_.c_str());
  }
  // Has the manager start lb for the n-th time; true once it says so.
  bool startLb(int n) {
    writeWholeFile(go_ + std::to_string(n), "");
    return manager_->waitForOutput(std::string(n == 0 ? "" : "exited\n") + "started", 10s) &&
           countOf(manager_->output(), "started ") == static_cast<size_t>(n + 1);
  }
  // The pid of the lb started last (0 before any).
  pid_t startedPid() const {
    const std::string out = manager_ ? manager_->output() : "";
    const size_t at = out.rfind("started ");
    return at == std::string::npos ? 0 : static_cast<pid_t>(atoi(out.c_str() + at + 8));
  }

  OriginFleet fleet_{1};
  uint16_t port_ = freePort();
  std::string config_ = tempPath("activation");
  std::string go_ = tempPath("go");
  std::unique_ptr<Process> manager_;
};

TEST_F(SocketActivationTest, ARequestQueuedBeforeLbStartsIsAnswered) {
  // The client connects and sends while nothing but the kernel holds the port.
  TcpClient early;
  ASSERT_TRUE(early.connect(port_));
  ASSERT_TRUE(early.send(httpRequest("GET", "/early")));
  ASSERT_TRUE(startLb(0)) << manager_->output();
  HttpResponse r = readHttpResponse(early, false, 10s);
  ASSERT_TRUE(r.ok) << r.error << manager_->output();
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(manager_->output().find("socket activation: 1 listening socket"), std::string::npos)
      << manager_->output();
}

// A restart: the first lb drains and exits, a client connects while none runs, and the next
// lb answers it. Nothing was refused.
TEST_F(SocketActivationTest, ARestartQueuesConnectionsInsteadOfRefusingThem) {
  ASSERT_TRUE(startLb(0)) << manager_->output();
  ASSERT_TRUE(manager_->waitForOutput("listener web listening", 10s)) << manager_->output();
  EXPECT_TRUE(httpExchange(port_, httpRequest("GET", "/one")).ok);
  kill(startedPid(), SIGTERM);
  ASSERT_TRUE(manager_->waitForOutput("exited", 10s)) << manager_->output();
  TcpClient between;
  ASSERT_TRUE(between.connect(port_)) << "refused while no lb ran";
  ASSERT_TRUE(between.send(httpRequest("GET", "/between")));
  ASSERT_TRUE(startLb(1)) << manager_->output();
  HttpResponse r = readHttpResponse(between, false, 10s);
  ASSERT_TRUE(r.ok) << r.error << manager_->output();
  EXPECT_EQ(r.status, 200);
}

}  // namespace
}  // namespace lb::test
