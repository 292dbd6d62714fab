// An upgrade that cannot complete leaves the running lb serving, and `lb upgrade` says why
// with exit 1: a config the new process refuses, a binary that exits at once. And the
// hand-over socket gives nothing to a process that is not the new lb.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "lb/upgrade/upgrade_channel.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"
#include "tests/support/upgrade_harness.h"

namespace lb::test {
namespace {

std::string config(uint16_t port, uint16_t admin, const std::string& backends) {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
         std::to_string(port) + "\"\nprotocol = \"http\"\ncluster = \"origins\"\n"
         "[clusters.origins]\nbackends = [\n" + backends + "]\n";
}

// lb run from a copy of its binary in a directory of the test's, so that the test can put
// another file at the path the upgrade starts, as `make install` would.
class UpgradeRefusalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.ok()) << fleet_.error();
    // Beside the build's binary (the same file system), so that it is a hard link, not a
    // copy: the directory's own name for the same file.
    const std::string built = builtBinary("lb");
    std::string tmpl = built.substr(0, built.rfind('/')) + "/upgrade-bin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    binary_ = dir_ + "/lb";
    installBuilt();
    writeWholeFile(config_path_, config(port_, admin_, fleet_.backends(1)));
    lb_ = std::make_unique<Process>(std::vector<std::string>{binary_, "--config", config_path_});
    ASSERT_TRUE(waitForPort(port_, 10s)) << lb_->output();
    ASSERT_TRUE(waitForPort(admin_, 10s)) << lb_->output();
  }
  void TearDown() override {
    lb_.reset();
    unlink(binary_.c_str());
    unlink(config_path_.c_str());
    rmdir(dir_.c_str());
  }
  // The built lb at the binary's path again.
  void installBuilt() {
    unlink(binary_.c_str());
    ASSERT_EQ(link(builtBinary("lb").c_str(), binary_.c_str()), 0) << strerror(errno);
  }
  // Puts `content` at the binary's path the way an installer does: a new file renamed over
  // the old one (the running lb keeps its own).
  void install(const std::string& content, mode_t mode) {
    const std::string tmp = binary_ + ".new";
    writeWholeFile(tmp, content);
    chmod(tmp.c_str(), mode);
    ASSERT_EQ(rename(tmp.c_str(), binary_.c_str()), 0);
  }
  void expectStillServing() {
    EXPECT_TRUE(lb_->running()) << lb_->output();
    HttpResponse r = httpExchange(port_, httpRequest("GET", "/still"));
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 200);
    HttpResponse ready = httpExchange(admin_, httpRequest("GET", "/ready"));
    EXPECT_EQ(ready.status, 200);
  }

  OriginFleet fleet_{1};
  uint16_t port_ = freePort();
  uint16_t admin_ = freePort();
  std::string dir_, binary_, config_path_ = tempPath("upconf");
  std::unique_ptr<Process> lb_;
  UpgradeHarness upgrades_;
};

TEST_F(UpgradeRefusalTest, AConfigTheNewProcessRefusesLeavesTheOldServing) {
  writeWholeFile(config_path_, config(port_, admin_, fleet_.backends(1)) +
                                   "[clusters.extra]\nselector = \"no_such\"\n");
  UpgradeOutcome o = upgrades_.upgrade(lb_->pid());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.err.find("failed: the new lb did not start: " + config_path_ + ":"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("selector"), std::string::npos) << o.err;
  expectStillServing();
  EXPECT_NE(lb_->output().find("this lb (pid " + std::to_string(lb_->pid()) +
                               ") keeps serving"),
            std::string::npos)
      << lb_->output();
}

TEST_F(UpgradeRefusalTest, ABinaryThatExitsAtOnceLeavesTheOldServing) {
  install("#!/bin/sh\nexit 3\n", 0755);
  UpgradeOutcome o = upgrades_.upgrade(lb_->pid());
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.err.find("exited with status 3 before it was ready"), std::string::npos) << o.err;
  expectStillServing();
  // The real binary back: the next upgrade goes through.
  installBuilt();
  UpgradeOutcome again = upgrades_.upgrade(lb_->pid());
  EXPECT_EQ(again.exit_code, 0) << again.err << lb_->output();
  EXPECT_NE(again.new_pid, 0);
}

// A process that is not the new lb (here the test itself, of the same user) connects to the
// hand-over socket while the upgrade waits: it gets a closed connection and no descriptor,
// and lb logs who it was. The directory is lb's user's alone, the socket 0600.
TEST_F(UpgradeRefusalTest, AStrangerOnTheHandOverSocketGetsNothing) {
  install("#!/bin/sh\nsleep 2\n", 0755);   // never connects, never says ready
  Process upgrade({builtBinary("lb"), "upgrade", "--pid", std::to_string(lb_->pid())});
  ASSERT_TRUE(lb_->waitForOutput("handing over through ", 10s)) << lb_->output();
  const std::string out = lb_->output();
  const size_t at = out.find("handing over through ") + 21;
  const std::string path = out.substr(at, out.find('\n', at) - at);
  struct stat dir_st{}, sock_st{};
  ASSERT_EQ(stat(path.substr(0, path.rfind('/')).c_str(), &dir_st), 0) << path;
  EXPECT_EQ(dir_st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(path.c_str(), &sock_st), 0) << path;
  EXPECT_EQ(sock_st.st_mode & 0777, 0600u);

  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path.c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun), 0) << path;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  char control[CMSG_SPACE(sizeof(int) * 8)];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  close(fd);
  EXPECT_EQ(n, 0) << "the stranger was sent something";
  EXPECT_EQ(msg.msg_controllen, 0u) << "the stranger was sent descriptors";
  EXPECT_TRUE(lb_->waitForOutput("refused a connection to the hand-over socket from pid " +
                                     std::to_string(getpid()),
                                 5s))
      << lb_->output();
  // The script ends without saying ready: the upgrade fails, the old lb serves on.
  const auto code = upgrade.waitExit(20s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1) << upgrade.output();
  EXPECT_NE(upgrade.output().find("before it was ready"), std::string::npos) << upgrade.output();
  expectStillServing();
}

// A directory at the hand-over's place that others may enter (planted before the upgrade) is
// refused by `lb upgrade` at once, and by the lb if signalled anyway; the lb serves on.
TEST_F(UpgradeRefusalTest, APlantedDirectoryIsRefused) {
  const std::string planted = upgradeDirFor(lb_->pid(), upgradeRuntimeDir(getenv));
  ASSERT_EQ(mkdir(planted.c_str(), 0755), 0);
  chmod(planted.c_str(), 0755);
  UpgradeOutcome o = upgrades_.upgrade(lb_->pid());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("is not a directory of the lb's user with mode 0700"), std::string::npos)
      << o.err;
  kill(lb_->pid(), SIGUSR2);
  EXPECT_TRUE(lb_->waitForOutput("upgrade refused: " + planted + " exists and is not a "
                                 "directory of this user with mode 0700", 5s))
      << lb_->output();
  rmdir(planted.c_str());
  expectStillServing();
}

TEST_F(UpgradeRefusalTest, APidThatIsNotAnLbIsRefusedWithoutASignal) {
  Process sleeper({"sleep", "30"});
  UpgradeOutcome o = upgrades_.upgrade(sleeper.pid());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("is not an lb"), std::string::npos) << o.err;
  EXPECT_TRUE(sleeper.running());   // SIGUSR2 would have ended it
}

}  // namespace
}  // namespace lb::test
