// The hand-over channel between an lb and the one it starts: listening sockets arrive as the
// same kernel sockets, with the admin one marked, the health view and the generation arrive
// whole, the answer goes back, and the peer check tells the started process from anyone else.
#include "lb/upgrade/upgrade_channel.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>
#include <thread>

#include "lb/net/inherited_sockets.h"

#include "tests/support/listening_socket.h"

namespace lb {
namespace {

using test::listeningSocket;
using test::socketInode;

// The running lb's side of one hand-over, on a thread: accepts one connection on `server`
// (waiting at most 5 s), lets `peer` look at it, sends its sockets, generation and health,
// and reads the answer into *reply.
struct OldSide {
  std::vector<int> fds;
  int admin = -1;
  uint64_t generation = 2;
  std::vector<HealthCarry> health;
  std::function<void(int conn)> peer;

  std::thread run(int server, HandoverReply* reply) const {
    return std::thread([this, server, reply] {
      int conn = -1;
      for (int i = 0; i < 5000; ++i) {
        if ((conn = accept4(server, nullptr, nullptr, SOCK_CLOEXEC)) >= 0 || errno != EAGAIN)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (conn < 0) return;
      if (peer) peer(conn);
      std::string error;
      if (sendHandover(conn, fds, admin, generation, health, &error)) {
        pollfd p{conn, POLLIN, 0};
        poll(&p, 1, 5000);
        *reply = readHandoverReply(conn);
      }
      close(conn);
    });
  }
};

class UpgradeChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    releaseInheritedSockets();
    char tmpl[] = "/tmp/lb-channel-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    releaseInheritedSockets();
    unlink((dir_ + "/handover.sock").c_str());
    unlink((dir_ + "/result").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(UpgradeChannelTest, SocketsHealthAndGenerationArriveAndTheAnswerGoesBack) {
  const std::string path = dir_ + "/handover.sock";
  std::string error;
  int server = listenHandover(path, &error);
  ASSERT_GE(server, 0) << error;
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  sockaddr_in web{}, admin{};
  int web_fd = listeningSocket(0, &web);
  int admin_fd = listeningSocket(0, &admin);
  ASSERT_GE(web_fd, 0);
  ASSERT_GE(admin_fd, 0);
  const ino_t web_inode = socketInode(web_fd);
  std::vector<HealthCarry> health{
      {"cache", "b2", HealthStatus::kEjected, false, 800, 1000, 1, "ejected for 1s"}};

  HandoverReply reply;
  bool peer_is_me = false, peer_is_init = true;
  OldSide old{{web_fd}, admin_fd, 7, health, [&](int conn) {
                std::string who;
                peer_is_me = peerIsChild(conn, getpid(), &who);
                peer_is_init = peerIsChild(conn, 1, &who);
              }};
  std::thread old_side = old.run(server, &reply);
  HandoverIn in;
  ASSERT_TRUE(receiveHandover(path, &in, &error)) << error;
  EXPECT_EQ(in.sockets, 2u);
  EXPECT_EQ(in.generation, 7u);
  EXPECT_EQ(in.from, getpid());
  ASSERT_EQ(in.health.size(), 1u);
  EXPECT_EQ(in.health[0].backend, "b2");
  EXPECT_EQ(in.health[0].status, HealthStatus::kEjected);
  EXPECT_EQ(in.health[0].ejected_left_ms, 800u);
  EXPECT_EQ(in.health[0].reason, "ejected for 1s");
  // The same kernel socket, not a new one on the same port.
  std::vector<int> got = takeInheritedSockets(reinterpret_cast<const sockaddr*>(&web),
                                              sizeof web, 0, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(socketInode(got[0]), web_inode);
  close(got[0]);
  int admin_got = takeInheritedAdminSocket(reinterpret_cast<const sockaddr*>(&admin),
                                           sizeof admin);
  EXPECT_GE(admin_got, 0);
  if (admin_got >= 0) close(admin_got);
  sayReady(&in);
  old_side.join();
  EXPECT_EQ(reply.kind, HandoverReply::Kind::kReady);
  EXPECT_EQ(reply.pid, getpid());
  EXPECT_TRUE(peer_is_me);
  EXPECT_FALSE(peer_is_init);
  close(server);
  close(web_fd);
  close(admin_fd);
}

TEST_F(UpgradeChannelTest, AFailureIsSentWithItsReason) {
  const std::string path = dir_ + "/handover.sock";
  std::string error;
  int server = listenHandover(path, &error);
  ASSERT_GE(server, 0) << error;
  HandoverReply reply;
  OldSide old;
  std::thread old_side = old.run(server, &reply);
  HandoverIn in;
  ASSERT_TRUE(receiveHandover(path, &in, &error)) << error;
  EXPECT_EQ(in.sockets, 0u);
  sayFailed(&in, "lb.toml:3:1: clusters.x.selector: unknown");
  old_side.join();
  EXPECT_EQ(reply.kind, HandoverReply::Kind::kFailed);
  EXPECT_EQ(reply.why, "lb.toml:3:1: clusters.x.selector: unknown");
  close(server);
}

TEST_F(UpgradeChannelTest, ADirectoryOthersMayEnterIsRefused) {
  std::string error;
  EXPECT_TRUE(prepareUpgradeDir(dir_, &error)) << error;   // mkdtemp made it 0700
  chmod(dir_.c_str(), 0755);
  EXPECT_FALSE(prepareUpgradeDir(dir_, &error));
  EXPECT_NE(error.find("mode 0700"), std::string::npos) << error;
  chmod(dir_.c_str(), 0700);
}

TEST_F(UpgradeChannelTest, TheRuntimeDirectoryFollowsTheEnvironmentInOrder) {
  auto env = [](std::map<std::string, std::string> m) {
    return [m](const char* name) -> const char* {
      auto it = m.find(name);
      return it == m.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(upgradeRuntimeDir(env({})), "/tmp");
  EXPECT_EQ(upgradeRuntimeDir(env({{"XDG_RUNTIME_DIR", "/run/user/0"}})), "/run/user/0");
  EXPECT_EQ(upgradeRuntimeDir(env({{"XDG_RUNTIME_DIR", "/run/user/0"},
                                   {"RUNTIME_DIRECTORY", "/run/lb:/run/other"}})),
            "/run/lb");
  EXPECT_EQ(upgradeRuntimeDir(env({{"RUNTIME_DIRECTORY", "/run/lb"},
                                   {"LB_RUNTIME_DIR", "/srv/lb"}})),
            "/srv/lb");
  EXPECT_EQ(upgradeDirFor(42, "/run/lb"), "/run/lb/lb-upgrade.42");
}

}  // namespace
}  // namespace lb
