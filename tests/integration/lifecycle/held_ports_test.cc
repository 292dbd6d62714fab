// A port another process listens on is refused by name, a running lb's first of all: lb binds
// its listeners with SO_REUSEPORT (one socket per worker), which would let a second lb started
// by hand on the same file share the first one's ports without a word, each taking some of
// the connections. Found from outside: two lbs on one file both ran, and the second only
// said that its admin port was taken.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// One HTTP listener on `port` for lb-less backends, the admin on `admin`.
std::string config(uint16_t port, uint16_t admin, const std::string& extra = "") {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
         std::to_string(port) + "\"\ncluster = \"c\"\n" + extra +
         "[clusters.c]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9\" } ]\n";
}

class HeldPortsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (holder_ >= 0) close(holder_);
    for (const auto& f : files_) unlink(f.c_str());
  }
  std::string file(const std::string& text) {
    files_.push_back(tempPath("held"));
    writeWholeFile(files_.back(), text);
    return files_.back();
  }
  // A socket of this test process listening on a free loopback port with SO_REUSEPORT, as
  // another lb's worker would: its port.
  uint16_t holdSharedPort() {
    holder_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(holder_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(holder_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(holder_, 4) != 0 ||
        getsockname(holder_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return 0;
    return ntohs(a.sin_port);
  }

  int holder_ = -1;
  std::vector<std::string> files_;
};

TEST_F(HeldPortsTest, ASecondLbOnARunningLbsPortsIsRefusedByName) {
  const uint16_t port = freePort();
  LbProcess first;
  ASSERT_TRUE(first.start(config(port, freePort()), {port})) << first.output();
  Process second({builtBinary("lb"), "-c", file(config(port, freePort()))});
  const auto code = second.waitExit(10s);
  ASSERT_TRUE(code.has_value()) << "the second lb runs beside the first:\n" << second.output();
  EXPECT_EQ(*code, 1);
  const std::string out = second.output();
  EXPECT_NE(out.find("listeners.web.listen: cannot bind 127.0.0.1:" + std::to_string(port) +
                     ": another process listens on it (pid " +
                     std::to_string(first.process().pid()) + ", lb)"),
            std::string::npos)
      << out;
  // The first goes on serving, alone.
  EXPECT_TRUE(httpExchange(port, httpRequest("GET", "/")).ok) << first.output();
}

// The same for a port that a reload would add: the running config stays.
TEST_F(HeldPortsTest, AReloadOntoAPortSharedByAnotherProcessIsAFailure) {
  const uint16_t port = freePort();
  const uint16_t admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(config(port, admin), {port})) << lb.output();
  const uint16_t held = holdSharedPort();
  ASSERT_NE(held, 0);
  const std::string extra = "[listeners.more]\nlisten = \"127.0.0.1:" + std::to_string(held) +
                            "\"\ncluster = \"c\"\n";
  EXPECT_FALSE(lb.reload(config(port, admin, "") + extra)) << lb.output();
  EXPECT_NE(lb.output().find("listeners.more.listen: cannot bind 127.0.0.1:" +
                             std::to_string(held) + ": another process listens on it (pid " +
                             std::to_string(getpid()) + ", "),
            std::string::npos)
      << lb.output();
  EXPECT_TRUE(httpExchange(port, httpRequest("GET", "/")).ok);
}

// Once the holder is gone, the same file starts.
TEST_F(HeldPortsTest, APortFreedAgainCanBeTaken) {
  const uint16_t held = holdSharedPort();
  ASSERT_NE(held, 0);
  Process refused({builtBinary("lb"), "-c", file(config(held, freePort()))});
  const auto code = refused.waitExit(10s);
  ASSERT_TRUE(code.has_value()) << refused.output();
  EXPECT_EQ(*code, 1);
  close(holder_);
  holder_ = -1;
  LbProcess lb;
  EXPECT_TRUE(lb.start(config(held, freePort()), {held})) << lb.output();
}

}  // namespace
}  // namespace lb::test
