// The test-support library itself (tests/support/): the helpers every integration test leans
// on must report failure as failure, and must never leave a process behind.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

TEST(RunCommandTest, CapturesStdoutStderrAndExitCode) {
  auto r = runCommand({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(RunCommandTest, FeedsStdin) {
  auto r = runCommand({"cat"}, 5s, "hello");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "hello");
}

TEST(RunCommandTest, KillsAtTheDeadline) {
  auto r = runCommand({"sleep", "30"}, 200ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

TEST(RunCommandTest, MissingBinaryExits127) {
  EXPECT_EQ(runCommand({"/nonexistent/binary"}).exit_code, 127);
}

TEST(ProcessTest, WaitsForOutputAndReportsThePort) {
  Process p({"sh", "-c", "echo 'x listening on 127.0.0.1:4321' >&2; sleep 30"});
  auto port = p.waitForListeningPort();
  ASSERT_TRUE(port) << p.output();
  EXPECT_EQ(*port, 4321);
  EXPECT_TRUE(p.running());
  EXPECT_EQ(p.stop(SIGTERM), 128 + SIGTERM);
  EXPECT_FALSE(p.running());
}

TEST(ProcessTest, WaitForOutputFailsWhenTheChildExitsFirst) {
  Process p({"sh", "-c", "echo nope"});
  EXPECT_FALSE(p.waitForOutput("listening on", 5s));
  EXPECT_EQ(p.waitExit(), 0);
}

TEST(ProcessTest, DestructorKillsAndReaps) {
  pid_t pid;
  {
    Process p({"sleep", "30"});
    pid = p.pid();
    ASSERT_TRUE(p.running());
  }
  // Reaped: the pid no longer names a child of ours.
  EXPECT_EQ(kill(pid, 0), -1);
}

TEST(FreePortTest, NothingListensThere) {
  uint16_t port = freePort();
  ASSERT_NE(port, 0);
  TcpClient c;
  EXPECT_FALSE(c.connect(port, 1s));
}

}  // namespace
}  // namespace lb::test
