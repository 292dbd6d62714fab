// `lb upgrade` under HTTP load, against real processes: wrk's keep-alive and close loads see
// no error across upgrades, a long download finishes on the old process while the new one
// serves, the admin port answers throughout with the new process's generation, and what the
// old process knew to be out of rotation stays out without a request to find out. Found from
// outside: a stop-then-start cost 4,722 refused requests, and a start-beside lost the admin
// port for good.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"
#include "tests/support/upgrade_harness.h"

namespace lb::test {
namespace {

std::string httpConfig(uint16_t port, uint16_t admin, const std::string& backends,
                       const std::string& cluster_extra = "") {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
         std::to_string(port) +
         "\"\nprotocol = \"http\"\ncluster = \"origins\"\nhash = [ { path = true } ]\n"
         "[clusters.origins]\nbackends = [\n" + backends + "]\n" + cluster_extra;
}

// wrk's summary line of socket errors, or "" when it had none.
std::string socketErrors(const std::string& wrk_out) {
  const size_t at = wrk_out.find("Socket errors");
  return at == std::string::npos ? "" : wrk_out.substr(at, wrk_out.find('\n', at) - at);
}

// The sum of a family's samples whose labels hold `label` (backend="origin-b").
double sumOf(const std::string& metrics, const std::string& family, const std::string& label) {
  double sum = 0;
  for (size_t at = metrics.find(family + "{"); at != std::string::npos;
       at = metrics.find(family + "{", at + 1)) {
    const size_t eol = metrics.find('\n', at);
    const std::string line = metrics.substr(at, eol - at);
    if (line.find(label) != std::string::npos) sum += atof(line.c_str() + line.rfind(' ') + 1);
  }
  return sum;
}

long metric(uint16_t admin, const std::string& name) {
  HttpResponse r = httpExchange(admin, httpRequest("GET", "/metrics"));
  const size_t at = r.body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : atol(r.body.c_str() + at + name.size() + 2);
}

class UpgradeHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.ok()) << fleet_.error();
    ASSERT_TRUE(lb_.start(httpConfig(port_, admin_, fleet_.backends(2)), {port_, admin_}))
        << lb_.output();
  }
  // Upgrades `times` times, one after the other, each from the lb the last one started.
  // Returns the pid serving at the end (0 when one failed).
  pid_t upgradeChain(int times, std::vector<std::string>* lines) {
    pid_t serving = lb_.process().pid();
    for (int i = 0; i < times; ++i) {
      UpgradeOutcome o = upgrades_.upgrade(serving);
      lines->push_back(o.out + o.err);
      if (o.exit_code != 0 || o.new_pid == 0) return 0;
      serving = o.new_pid;
    }
    return serving;
  }

  OriginFleet fleet_{2};
  uint16_t port_ = freePort();
  uint16_t admin_ = freePort();
  LbProcess lb_;
  UpgradeHarness upgrades_;
};

// wrk on keep-alive connections: each connection's response after the upgrade carries
// Connection: close, and wrk reconnects to the new process. No error of any kind.
TEST_F(UpgradeHttpTest, KeepAliveLoadSeesNoErrorAcrossThreeUpgrades) {
  Process wrk({"wrk", "-t1", "-c16", "-d4s", localUrl(port_, "/k")});
  ASSERT_TRUE(waitForPort(port_));
  std::this_thread::sleep_for(500ms);   // the load is under way before the first upgrade
  std::vector<std::string> lines;
  const pid_t last = upgradeChain(3, &lines);
  ASSERT_NE(last, 0) << lines.back() << lb_.output();
  ASSERT_TRUE(wrk.waitExit(15s).has_value());
  const std::string out = wrk.output();
  EXPECT_NE(out.find("requests in"), std::string::npos) << out;
  EXPECT_EQ(socketErrors(out), "") << out;
  EXPECT_EQ(out.find("Non-2xx"), std::string::npos) << out;
  // The first process drained and left; the last serves, three generations on.
  EXPECT_TRUE(lb_.process().waitExit(10s).has_value()) << lb_.output();
  EXPECT_EQ(metric(admin_, "lb_process_generation"), 4);
  EXPECT_TRUE(httpExchange(port_, httpRequest("GET", "/after")).ok);
}

// The same with a new connection per request (Connection: close): nothing is refused while
// the listening sockets pass from one process to the next.
TEST_F(UpgradeHttpTest, ConnectionCloseLoadIsNeverRefused) {
  Process wrk({"wrk", "-t1", "-c8", "-d3s", "-H", "Connection: close", localUrl(port_, "/c")});
  std::this_thread::sleep_for(500ms);
  std::vector<std::string> lines;
  ASSERT_NE(upgradeChain(2, &lines), 0) << lines.back() << lb_.output();
  ASSERT_TRUE(wrk.waitExit(15s).has_value());
  const std::string out = wrk.output();
  EXPECT_NE(out.find("requests in"), std::string::npos) << out;
  EXPECT_EQ(socketErrors(out), "") << out;
  EXPECT_EQ(out.find("Non-2xx"), std::string::npos) << out;
}

// A download in flight finishes on the old process, byte for byte, while the new process
// answers new connections and the admin endpoints at once.
TEST_F(UpgradeHttpTest, ADownloadInFlightFinishesOnTheOldProcess) {
  constexpr long kBytes = 48L << 20;
  // curl's rate limit stretches the body over the upgrade (about 3 s).
  Process curl({"curl", "-sS", "--limit-rate", "16M", "-o", "/dev/null", "-w",
                "%{http_code} %{size_download}",
                localUrl(port_, "/bytes?n=" + std::to_string(kBytes))});
  std::this_thread::sleep_for(300ms);
  UpgradeOutcome o = upgrades_.upgrade(lb_.process().pid());
  ASSERT_EQ(o.exit_code, 0) << o.err << lb_.output();
  // The old process still runs: it has the download.
  EXPECT_TRUE(lb_.process().running());
  HttpResponse fresh = httpExchange(port_, httpRequest("GET", "/new"));
  EXPECT_TRUE(fresh.ok);
  HttpResponse ready = httpExchange(admin_, httpRequest("GET", "/ready"));
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(metric(admin_, "lb_process_generation"), 2);
  ASSERT_TRUE(curl.waitExit(20s).has_value());
  EXPECT_EQ(curl.output(), "200 " + std::to_string(kBytes));
  EXPECT_TRUE(lb_.process().waitExit(10s).has_value()) << lb_.output();
}

// /ready, /metrics and /backends answer throughout: a client polls them during two upgrades
// and never sees a refusal, an error or a 503.
TEST_F(UpgradeHttpTest, TheAdminPortAnswersThroughout) {
  std::atomic<bool> stop{false};
  std::atomic<int> polls{0}, bad{0};
  std::string first_bad;
  std::thread poller([&] {
    const char* paths[] = {"/ready", "/metrics", "/backends"};
    for (int i = 0; !stop.load() && i < 20000; ++i) {
      HttpResponse r = httpExchange(admin_, httpRequest("GET", paths[i % 3]));
      ++polls;
      if (!r.ok || r.status != 200) {
        if (bad++ == 0) first_bad = std::string(paths[i % 3]) + ": " + r.error +
                                    std::to_string(r.status) + " " + r.body;
      }
    }
  });
  std::vector<std::string> lines;
  const pid_t last = upgradeChain(2, &lines);
  stop = true;
  poller.join();
  ASSERT_NE(last, 0) << lines.back() << lb_.output();
  EXPECT_GT(polls.load(), 10);
  EXPECT_EQ(bad.load(), 0) << first_bad;
}

// The new config asks for another number of workers: every socket the old process had is
// still accepted from (one orphaned socket would leave the connections the kernel hashes to it
// waiting), whether the new process has fewer workers than sockets or more.
TEST_F(UpgradeHttpTest, AnotherWorkerCountStillAcceptsOnEverySocket) {
  pid_t serving = lb_.process().pid();
  for (const char* workers : {"1", "3"}) {
    std::string config = httpConfig(port_, admin_, fleet_.backends(2));
    config.replace(config.find("workers = 2"), 11, std::string("workers = ") + workers);
    writeWholeFile(lb_.configPath(), config);
    UpgradeOutcome o = upgrades_.upgrade(serving);
    ASSERT_EQ(o.exit_code, 0) << o.err << lb_.output();
    serving = o.new_pid;
    // A new connection per request: the kernel spreads them over every socket of the group.
    int ok = 0;
    for (int i = 0; i < 200; ++i) ok += httpExchange(port_, httpRequest("GET", "/w"), 2s).ok;
    EXPECT_EQ(ok, 200) << "workers = " << workers;
  }
}

// The old process ejected origin-b (passive: its connections were refused); the new one
// starts with it ejected and sends it nothing, though it has never seen it fail.
TEST(UpgradeHealthTest, ABackendOutOfRotationStaysOutWithoutARetry) {
  OriginFleet fleet(2);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  fleet.stopOne(1);
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(httpConfig(port, admin, fleet.backends(2),
                                  "outlier = { consecutive_failures = 1, base_ejection = "
                                  "\"60s\", max_ejected_percent = 50 }\n"),
                       {port, admin}))
      << lb.output();
  // Keys, some of them origin-b's: they fail over, and the next sweep ejects origin-b.
  for (int i = 0; i < 64; ++i)
    EXPECT_TRUE(httpExchange(port, httpRequest("GET", "/key/" + std::to_string(i))).ok);
  ASSERT_TRUE(lb.process().waitForOutput("backend origin-b down", 5s)) << lb.output();
  UpgradeHarness upgrades;
  UpgradeOutcome o = upgrades.upgrade(lb.process().pid());
  ASSERT_EQ(o.exit_code, 0) << o.err << lb.output();
  ASSERT_TRUE(lb.process().waitExit(10s).has_value());
  HttpResponse backends = httpExchange(admin, httpRequest("GET", "/backends"));
  EXPECT_NE(backends.body.find("\"ejected\""), std::string::npos) << backends.body;
  for (int i = 0; i < 64; ++i)
    EXPECT_TRUE(httpExchange(port, httpRequest("GET", "/key/" + std::to_string(i))).ok);
  // Not one connection was tried to origin-b by the new process.
  HttpResponse m = httpExchange(admin, httpRequest("GET", "/metrics"));
  ASSERT_NE(m.body.find("lb_backend_connect_failures_total{"), std::string::npos);
  EXPECT_EQ(sumOf(m.body, "lb_backend_connect_failures_total", "backend=\"origin-b\""), 0)
      << m.body;
  EXPECT_NE(lb.output().find("as before the upgrade"), std::string::npos) << lb.output();
}

}  // namespace
}  // namespace lb::test
