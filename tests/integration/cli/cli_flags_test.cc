// lb's flags as an operator coming from nginx or HAProxy types them (`lb -t -c FILE`, `-v`,
// `-h`), run as the real binary: exit codes, where the text goes, what --help says.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

const char kGood[] = R"([admin]
listen = "127.0.0.1:9901"
[listeners.web]
listen = "127.0.0.1:8080"
cluster = "cache"
[clusters.cache]
backends = [ { name = "a", address = "127.0.0.1:9001" } ]
)";

// One HTTP listener on `port`, the admin server on a free port.
std::string oneListener(uint16_t port) {
  return "[lb]\nworkers = 1\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(freePort()) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
         std::to_string(port) + "\"\ncluster = \"c\"\n[clusters.c]\n" +
         "backends = [ { name = \"a\", address = \"127.0.0.1:9\" } ]\n";
}

class CliFlagsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& f : files_) unlink(f.c_str());
  }
  std::string file(const std::string& text) {
    files_.push_back(tempPath("cli"));
    writeWholeFile(files_.back(), text);
    return files_.back();
  }
  std::vector<std::string> files_;
};

TEST_F(CliFlagsTest, DashTDashCChecksAGoodFile) {
  std::string path = file(kGood);
  auto r = runCommand({builtBinary("lb"), "-t", "-c", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliFlagsTest, DashTDashCReportsABadFileWithExitOne) {
  std::string path = file("[lb]\nworkers = -1\n");
  auto r = runCommand({builtBinary("lb"), "-tc", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(path + ":2:"), std::string::npos) << r.err;
}

TEST_F(CliFlagsTest, DashVPrintsTheVersion) {
  for (const char* flag : {"-v", "--version"}) {
    auto r = runCommand({builtBinary("lb"), flag});
    EXPECT_EQ(r.exit_code, 0) << flag;
    EXPECT_EQ(r.out.rfind("lb ", 0), 0u) << flag << ": " << r.out;
    EXPECT_EQ(r.out.back(), '\n');
    EXPECT_EQ(r.err, "");
  }
}

TEST_F(CliFlagsTest, HelpGoesToStdoutAndListsSignalsEndpointsFilesAndExitCodes) {
  for (const char* flag : {"-h", "--help"}) {
    auto r = runCommand({builtBinary("lb"), flag});
    EXPECT_EQ(r.exit_code, 0) << flag;
    EXPECT_EQ(r.err, "");
    for (const char* needle : {"--config", "--check", "HUP", "TERM", "/metrics", "/ready",
                               "/backends", "/ring?cluster=C&key=K", "access_log",
                               "Exit codes"})
      EXPECT_NE(r.out.find(needle), std::string::npos) << flag << " lacks " << needle;
  }
}

TEST_F(CliFlagsTest, UnknownFlagExitsTwoWithAUsageLineOnStderr) {
  std::string path = file(kGood);
  for (const char* flag : {"--bogus", "-x", "-f"}) {
    auto r = runCommand({builtBinary("lb"), flag, "-c", path});
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_EQ(r.out, "") << flag;
    EXPECT_NE(r.err.find("unknown option"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\nusage: lb "), std::string::npos) << r.err;
  }
}

TEST_F(CliFlagsTest, NoConfigExitsTwo) {
  for (std::vector<std::string> args : {std::vector<std::string>{}, {"-t"}, {"-c"}}) {
    args.insert(args.begin(), builtBinary("lb"));
    auto r = runCommand(args);
    EXPECT_EQ(r.exit_code, 2) << args.size();
    EXPECT_NE(r.err.find("usage: lb "), std::string::npos) << r.err;
  }
}

TEST_F(CliFlagsTest, ShortConfigRunsAndDrainsToExitZero) {
  uint16_t port = freePort();
  std::string path = file(oneListener(port));
  Process lb({builtBinary("lb"), "-c", path});
  ASSERT_TRUE(waitForPort(port, 10s)) << lb.output();
  EXPECT_EQ(lb.stop(SIGTERM, 10s), 0) << lb.output();
}

TEST_F(CliFlagsTest, AListenerThatCannotBindExitsOne) {
  // A plain socket without SO_REUSEPORT holds the port, so lb's SO_REUSEPORT bind fails.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::string path = file(oneListener(ntohs(a.sin_port)));
  Process lb({builtBinary("lb"), "-c", path});
  auto code = lb.waitExit(10s);
  close(fd);
  ASSERT_TRUE(code.has_value()) << lb.output();
  EXPECT_EQ(*code, 1) << lb.output();
}

}  // namespace
}  // namespace lb::test
