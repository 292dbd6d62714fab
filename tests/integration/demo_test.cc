// conf/: every example config passes `lb --check`, and conf/run_demo.sh (what `make run`
// calls) starts lb and four origins that answer curl, then stops all of them on SIGINT.
#include <signal.h>

#include <cerrno>
#include <cctype>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

std::string repoFile(const std::string& rel) { return builtBinary("../" + rel); }

class ExampleConfigTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleConfigTest, PassesLbCheck) {
  auto r = runCommand({builtBinary("lb"), "--check", "--config", repoFile(GetParam())});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(Conf, ExampleConfigTest,
                         ::testing::Values("conf/demo.toml", "conf/http_cache.toml",
                                           "conf/memcached_redis.toml", "conf/lb.toml",
                                           "conf/redis.toml", "conf/memcached.toml"));

TEST(RunDemoTest, AnswersCurlAndStopsEverythingOnSigint) {
  uint16_t http = freePort(), tcp = freePort(), admin = freePort();
  std::string backends;
  std::vector<uint16_t> backend_ports;
  for (int i = 0; i < 4; ++i) {
    backend_ports.push_back(freePort());
    backends += (i ? " " : "") + std::to_string(backend_ports.back());
  }
  std::string build = builtBinary("");
  Process demo({"env", "LB_DEMO_HTTP_PORT=" + std::to_string(http),
                "LB_DEMO_TCP_PORT=" + std::to_string(tcp),
                "LB_DEMO_ADMIN_PORT=" + std::to_string(admin), "LB_DEMO_BACKEND_PORTS=" + backends,
                repoFile("conf/run_demo.sh"), build});
  ASSERT_TRUE(demo.waitForOutput("Ctrl-C stops everything", 30s)) << demo.output();

  auto r = runCommand({"curl", "-s", "-i", "--max-time", "5", localUrl(http, "/hello")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("HTTP/1.1 200"), std::string::npos) << r.out;
  std::string lower = r.out;
  for (char& ch : lower) ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
  EXPECT_NE(lower.find("x-backend: origin-"), std::string::npos) << r.out;
  auto raw = runCommand({"curl", "-s", "-i", "--max-time", "5", localUrl(tcp, "/")});
  EXPECT_NE(raw.out.find("HTTP/1.1 200"), std::string::npos) << raw.out << raw.err;

  // The demo says which lb pid to send SIGHUP to; it must be gone afterwards.
  std::string out = demo.output();
  size_t at = out.find("kill -HUP ");
  ASSERT_NE(at, std::string::npos) << out;
  pid_t lb_pid = static_cast<pid_t>(std::stol(out.substr(at + 10)));

  auto code = demo.stop(SIGINT, 30s);
  ASSERT_TRUE(code.has_value()) << "run_demo.sh did not stop on SIGINT\n" << demo.output();
  EXPECT_EQ(*code, 0) << demo.output();
  EXPECT_TRUE(kill(lb_pid, 0) != 0 && errno == ESRCH) << "lb is still running";
  for (uint16_t p : backend_ports) EXPECT_FALSE(waitForPort(p, 0ms)) << "an origin still runs";
  EXPECT_FALSE(waitForPort(http, 0ms)) << "lb still listens";
}

}  // namespace
}  // namespace lb::test
