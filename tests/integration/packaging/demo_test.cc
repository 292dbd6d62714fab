// conf/: every example config passes `lb --check`, and conf/run_demo.sh (what `make run`
// calls) starts lb, four origins that answer curl, two redis-servers and two memcached that
// answer the redis-cli and memcached lines it prints, and a spare redis-server the line that
// adds it adds (its moved keys then read warm), then stops all of them on SIGINT.
#include <signal.h>

#include <cerrno>
#include <cctype>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/health_harness.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

std::string repoFile(const std::string& rel) { return builtBinary("../" + rel); }

// The lines of `out` that start (after their indentation) with `prefix`, without the
// indentation: the commands the demo prints for the user to paste.
std::vector<std::string> printedCommands(const std::string& out, const std::string& prefix) {
  std::vector<std::string> found;
  size_t at = 0;
  while (at < out.size()) {
    size_t eol = out.find('\n', at);
    if (eol == std::string::npos) eol = out.size();
    std::string line = out.substr(at, eol - at);
    line.erase(0, line.find_first_not_of(' '));
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
    at = eol + 1;
  }
  return found;
}

// Runs a printed line as the user's shell would.
CommandResult paste(const std::string& line) { return runCommand({"bash", "-c", line}, 10s); }

class ExampleConfigTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleConfigTest, PassesLbCheck) {
  auto r = runCommand({builtBinary("lb"), "--check", "--config", repoFile(GetParam())});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(Conf, ExampleConfigTest,
                         ::testing::Values("conf/demo.toml", "conf/http_cache.toml",
                                           "conf/memcached_redis.toml", "conf/lb.toml",
                                           "conf/redis.toml", "conf/memcached.toml",
                                           "conf/redis_zones.toml"));

TEST(RunDemoTest, AnswersCurlRedisCliAndMemcachedAndStopsEverythingOnSigint) {
  uint16_t http = freePort(), tcp = freePort(), admin = freePort();
  uint16_t redis = freePort(), memcached = freePort();
  // Space-separated lists of n free ports, for LB_DEMO_*_PORTS; each also into `all`.
  std::vector<uint16_t> backend_ports, redis_ports, memcached_ports;
  auto ports = [](int n, std::vector<uint16_t>* into) {
    std::string list;
    for (int i = 0; i < n; ++i) {
      into->push_back(freePort());
      list += (i ? " " : "") + std::to_string(into->back());
    }
    return list;
  };
  const std::string backends = ports(4, &backend_ports);
  const std::string redis_backends = ports(2, &redis_ports);
  const std::string memcached_backends = ports(2, &memcached_ports);
  std::string build = builtBinary("");
  const uint16_t https = freePort();
  const uint16_t spare = freePort();
  Process demo({"env", "LB_DEMO_REDIS_SPARE_PORT=" + std::to_string(spare), "LB_DEMO_HTTP_PORT=" + std::to_string(http),
                "LB_DEMO_HTTPS_PORT=" + std::to_string(https),
                "LB_DEMO_TCP_PORT=" + std::to_string(tcp),
                "LB_DEMO_ADMIN_PORT=" + std::to_string(admin), "LB_DEMO_BACKEND_PORTS=" + backends,
                "LB_DEMO_REDIS_PORT=" + std::to_string(redis),
                "LB_DEMO_REDIS_BACKEND_PORTS=" + redis_backends,
                "LB_DEMO_MEMCACHED_PORT=" + std::to_string(memcached),
                "LB_DEMO_MEMCACHED_BACKEND_PORTS=" + memcached_backends,
                repoFile("conf/run_demo.sh"), build});
  ASSERT_TRUE(demo.waitForOutput("Ctrl-C stops everything", 30s)) << demo.output();

  auto r = runCommand({"curl", "-s", "-i", "--max-time", "5", localUrl(http, "/hello")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("HTTP/1.1 200"), std::string::npos) << r.out;
  std::string lower = r.out;
  for (char& ch : lower) ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
  EXPECT_NE(lower.find("x-backend: origin-"), std::string::npos) << r.out;
  // The HTTPS listener, on the self-signed certificate the demo made (curl -k).
  auto tls = runCommand({"curl", "-s", "-i", "-k", "--max-time", "5",
                         "https://127.0.0.1:" + std::to_string(https) + "/hello"});
  EXPECT_NE(tls.out.find("HTTP/1.1 200"), std::string::npos) << tls.out << tls.err;
  auto raw = runCommand({"curl", "-s", "-i", "--max-time", "5", localUrl(tcp, "/")});
  EXPECT_NE(raw.out.find("HTTP/1.1 200"), std::string::npos) << raw.out << raw.err;

  // The redis-cli lines it prints, pasted: set, mset, then mget of all four in order (the
  // fourth, a get after the spare joins, comes below).
  std::string out = demo.output();
  const auto cli = printedCommands(out, "redis-cli -p " + std::to_string(redis) + " ");
  ASSERT_EQ(cli.size(), 4u) << out;
  for (size_t i = 0; i < 2; ++i) {
    auto r = paste(cli[i]);
    EXPECT_EQ(r.out, "OK\n") << cli[i] << ": " << r.err;
  }
  auto mget = paste(cli[2]);
  EXPECT_EQ(mget.out, "alice\nbob\ncarol\ndave\n") << cli[2] << ": " << mget.err;
  // Each key sits on exactly one of the two redis-servers, the one /ring names.
  for (const char* key : {"user:1", "user:2", "user:3", "user:4"}) {
    auto ring = runCommand({"curl", "-s", "--max-time", "5",
                            localUrl(admin, std::string("/ring?cluster=redis&key=") + key)});
    int holders = 0;
    for (int i = 0; i < 2; ++i) {
      auto r = runCommand({"redis-cli", "-p", std::to_string(redis_ports[static_cast<size_t>(i)]),
                           "exists", key});
      if (r.out == "1\n") {
        ++holders;
        EXPECT_NE(ring.out.find("\"owner\":\"redis-" + std::to_string(i + 1) + "\""),
                  std::string::npos)
            << key << ": " << ring.out;
      }
    }
    EXPECT_EQ(holders, 1) << key;
  }

  // The line that adds the spare: user:1 moves to it, empty, and still reads alice through
  // lb (the handover read it from its old server), and the spare holds the copy after.
  const auto grow = printedCommands(out, "sed -i ");
  ASSERT_EQ(grow.size(), 1u) << out;
  auto grown = paste(grow[0]);
  EXPECT_EQ(grown.exit_code, 0) << grow[0] << ": " << grown.err;
  EXPECT_TRUE(waitUntil(
      [&] {
        auto ring = runCommand({"curl", "-s", "--max-time", "5",
                                localUrl(admin, "/ring?cluster=redis&key=user:1")});
        return ring.out.find("\"owner\":\"redis-3\"") != std::string::npos;
      },
      10s, 50ms))
      << "the reload did not add redis-3";
  auto warm = paste(cli[3]);
  EXPECT_EQ(warm.out, "alice\n") << cli[3] << ": " << warm.err;
  EXPECT_TRUE(waitUntil(
      [&] {
        return runCommand({"redis-cli", "-p", std::to_string(spare), "get", "user:1"}).out ==
               "alice\n";
      },
      10s, 50ms))
      << "no copy at the spare";

  // The memcached line: a set and a get of three keys (one hit) through lb, then quit.
  const auto mc = printedCommands(out, "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" +
                                           std::to_string(memcached) + ";");
  ASSERT_EQ(mc.size(), 1u) << out;
  auto mr = paste(mc[0]);
  EXPECT_EQ(mr.out, "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n") << mc[0] << ": " << mr.err;

  // The demo says which lb pid to send SIGHUP to; it must be gone afterwards.
  size_t at = out.find("kill -HUP ");
  ASSERT_NE(at, std::string::npos) << out;
  pid_t lb_pid = static_cast<pid_t>(std::stol(out.substr(at + 10)));

  auto code = demo.stop(SIGINT, 30s);
  ASSERT_TRUE(code.has_value()) << "run_demo.sh did not stop on SIGINT\n" << demo.output();
  EXPECT_EQ(*code, 0) << demo.output();
  EXPECT_TRUE(kill(lb_pid, 0) != 0 && errno == ESRCH) << "lb is still running";
  for (uint16_t p : backend_ports) EXPECT_FALSE(waitForPort(p, 0ms)) << "an origin still runs";
  for (uint16_t p : redis_ports) EXPECT_FALSE(waitForPort(p, 0ms)) << "a redis-server still runs";
  EXPECT_FALSE(waitForPort(spare, 0ms)) << "the spare redis-server still runs";
  for (uint16_t p : memcached_ports) EXPECT_FALSE(waitForPort(p, 0ms)) << "a memcached still runs";
  for (uint16_t p : {http, redis, memcached}) EXPECT_FALSE(waitForPort(p, 0ms)) << "lb still listens";
}

}  // namespace
}  // namespace lb::test
