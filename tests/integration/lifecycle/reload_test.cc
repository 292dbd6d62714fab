// SIGHUP reload against a real lb and real lb-origin backends: a reload under load drops
// nothing, only the keys the change gives to (or takes from) a backend move, a bad file
// changes nothing, and listeners open and close as the file says.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin_fleet.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// One http listener per (name, port), all on cluster "origins" keyed by x-cache-key.
std::string httpConfig(const std::vector<std::pair<std::string, uint16_t>>& listeners,
                       const std::string& backends, uint16_t admin) {
  std::string out = "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                    std::to_string(admin) + "\"\n";
  for (const auto& [name, port] : listeners)
    out += "[listeners." + name + "]\nlisten = \"127.0.0.1:" + std::to_string(port) +
           "\"\nprotocol = \"http\"\ncluster = \"origins\"\n"
           "hash = [ { header = \"x-cache-key\", terminal = true }, { path = true } ]\n";
  out += "[clusters.origins]\nselector = \"ring_hash\"\nbackends = [\n" + backends + "]\n";
  return out;
}

// Which origin answers each of n keys.
std::map<std::string, std::string> owners(uint16_t port, int n) {
  std::map<std::string, std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string key = "key-" + std::to_string(i);
    HttpResponse r = httpExchange(port, httpRequest("GET", "/", "x-cache-key: " + key + "\r\n"));
    out[key] = r ? r.header("x-backend").value_or("?") : "error: " + r.error;
  }
  return out;
}

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.ok()) << fleet_.error();
    port_ = freePort();
    admin_ = freePort();
    ASSERT_TRUE(lb_.start(httpConfig({{"web", port_}}, fleet_.backends(3), admin_), {port_}))
        << lb_.output();
  }

  OriginFleet fleet_{4};   // origin-d is started but not in the first config
  LbProcess lb_;
  uint16_t port_ = 0;
  uint16_t admin_ = 0;
};

TEST_F(ReloadTest, AddingABackendMovesOnlyTheKeysItNowOwns) {
  auto before = owners(port_, 300);
  ASSERT_TRUE(lb_.reload(httpConfig({{"web", port_}}, fleet_.backends(4), admin_))) << lb_.output();
  auto after = owners(port_, 300);
  int moved = 0;
  for (const auto& [key, owner] : before) {
    ASSERT_NE(owner.rfind("origin-", 0), std::string::npos) << key << ": " << owner;
    if (after[key] == owner) continue;
    ++moved;
    EXPECT_EQ(after[key], "origin-d") << key << " moved from " << owner << " to " << after[key];
  }
  // Ring hash with 4 equal hosts: the new one owns about a quarter.
  EXPECT_GT(moved, 30);
  EXPECT_LT(moved, 130);
}

TEST_F(ReloadTest, RemovingABackendMovesOnlyTheKeysItOwned) {
  auto before = owners(port_, 300);
  // Keep a and c: origin-b leaves.
  std::string backends = "  { name = \"origin-a\", address = \"127.0.0.1:" +
                         std::to_string(fleet_.port(0)) + "\" },\n" +
                         "  { name = \"origin-c\", address = \"127.0.0.1:" +
                         std::to_string(fleet_.port(2)) + "\" },\n";
  ASSERT_TRUE(lb_.reload(httpConfig({{"web", port_}}, backends, admin_))) << lb_.output();
  auto after = owners(port_, 300);
  for (const auto& [key, owner] : before) {
    if (owner == "origin-b")
      EXPECT_NE(after[key], "origin-b") << key;
    else
      EXPECT_EQ(after[key], owner) << key << " moved though its owner stayed";
  }
}

TEST_F(ReloadTest, ABadFileLogsEveryErrorAndKeepsTheRunningConfig) {
  auto before = owners(port_, 50);
  std::string bad = httpConfig({{"web", port_}}, fleet_.backends(4), admin_);
  bad += "[clusters.broken]\nselector = \"maglevv\"\nretries = -1\nbackends = []\n";
  EXPECT_FALSE(lb_.reload(bad)) << lb_.output();
  std::string out = lb_.output();
  EXPECT_NE(out.find("clusters.broken.selector"), std::string::npos) << out;
  EXPECT_NE(out.find("clusters.broken.retries"), std::string::npos) << out;
  EXPECT_EQ(owners(port_, 50), before) << "a bad file must change nothing";
}

TEST_F(ReloadTest, ListenersOpenAndCloseAsTheFileSays) {
  uint16_t second = freePort();
  ASSERT_TRUE(lb_.reload(httpConfig({{"web", port_}, {"web2", second}}, fleet_.backends(3), admin_)))
      << lb_.output();
  ASSERT_TRUE(waitForPort(second, 5s)) << lb_.output();
  EXPECT_EQ(httpExchange(second, httpRequest("GET", "/")).status, 200);
  ASSERT_TRUE(lb_.reload(httpConfig({{"web2", second}}, fleet_.backends(3), admin_)))
      << lb_.output();
  // Closing is asynchronous on each worker: wait for the refusal.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (waitForPort(port_, 0ms) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(waitForPort(port_, 0ms)) << "the removed listener still accepts";
  EXPECT_EQ(httpExchange(second, httpRequest("GET", "/")).status, 200);
}

// lb_config_reloads_total{result} from the admin endpoint, or -1.
long reloadsCounted(uint16_t admin, const std::string& result) {
  auto r = httpExchange(admin, httpRequest("GET", "/metrics"));
  std::string needle = "lb_config_reloads_total{result=\"" + result + "\"} ";
  size_t at = r.ok ? r.body.find(needle) : std::string::npos;
  return at == std::string::npos ? -1 : atol(r.body.c_str() + at + needle.size());
}

TEST_F(ReloadTest, AReloadWhoseNewListenerCannotBindIsAFailureAndChangesNothing) {
  // A port another socket holds (without SO_REUSEPORT, as any other program would).
  int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  ASSERT_EQ(getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t held = ntohs(a.sin_port);

  auto before = owners(port_, 60);
  std::set<std::string> serving;
  for (const auto& [key, owner] : before) serving.insert(owner);
  ASSERT_EQ(serving.size(), 3u) << "every backend of the running config answers";
  // The new file adds a listener on the held port and shrinks the cluster to one backend:
  // none of it may take effect.
  EXPECT_FALSE(lb_.reload(httpConfig({{"web", port_}, {"held", held}}, fleet_.backends(1), admin_)))
      << lb_.output();
  std::string out = lb_.output();
  EXPECT_NE(out.find("listeners.held.listen: cannot bind 127.0.0.1:" + std::to_string(held)),
            std::string::npos)
      << out;
  EXPECT_EQ(reloadsCounted(admin_, "failure"), 1);
  EXPECT_EQ(reloadsCounted(admin_, "success"), 0);
  EXPECT_EQ(owners(port_, 60), before) << "the running config must stay whole";
  close(holder);
}

TEST_F(ReloadTest, ReloadUnderLoadDropsNothing) {
  // wrk with a different path per request (the path is the key), through a reload that adds
  // origin-d: no socket error, no non-2xx answer, and origin-d serves once it is in.
  std::string script = tempPath("wrk-lua");
  writeWholeFile(script,
                 "local n = 0\n"
                 "request = function()\n"
                 "  n = n + 1\n"
                 "  return wrk.format(\"GET\", \"/k\" .. n)\n"
                 "end\n");
  long d_before = fleet_.requestsServed(3);
  Process wrk({"wrk", "-t2", "-c16", "-d3s", "-s", script, localUrl(port_, "/")});
  // Reload once traffic flows.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (fleet_.requestsServed(0) < 200 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(lb_.reload(httpConfig({{"web", port_}}, fleet_.backends(4), admin_))) << lb_.output();
  auto code = wrk.waitExit(20s);
  unlink(script.c_str());
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << wrk.output();
  std::string out = wrk.output();
  EXPECT_NE(out.find("requests in"), std::string::npos) << out;
  EXPECT_EQ(out.find("Socket errors"), std::string::npos) << out;
  EXPECT_EQ(out.find("Non-2xx"), std::string::npos) << out;
  EXPECT_GT(fleet_.requestsServed(3), d_before + 1) << "origin-d never served after the reload";
}

}  // namespace
}  // namespace lb::test
