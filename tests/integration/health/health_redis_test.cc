// Redis through a tcp listener with `health = { type = "redis" }`: real redis-server
// backends, real redis-cli clients. The listener keys on the source address, so every client
// (all on 127.0.0.1) lands on one server, the owner; the test freezes that server with
// SIGSTOP (the kernel still accepts its connections; nothing answers) and starts twelve
// redis-cli at once, as a user comparing with nutcracker (`timeout: 400`,
// `auto_eject_hosts`) would. None may hang beyond fall x interval + timeout: those that
// reached the frozen server get an error when its checks take it down (lb closes their
// connections), the later ones are answered by the next server. After SIGCONT the server is
// up after `rise` checks and the clients are back on it, with its keys.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cache_server.h"
#include "tests/support/health_harness.h"
#include "tests/support/lb_fixture.h"

namespace lb::test {
namespace {

constexpr int kIntervalMs = 200, kTimeoutMs = 100, kRise = 2, kFall = 2;
constexpr double kDetectMs = kFall * kIntervalMs + kTimeoutMs;
constexpr double kSlackMs = 1500;   // process start-up of 12 redis-cli, polls, a busy box

class HealthRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      redis_.push_back(std::make_unique<CacheServer>(CacheServer::kRedis));
      ASSERT_TRUE(redis_.back()->ok()) << redis_.back()->output();
    }
    port_ = freePort();
    admin_ = freePort();
    std::string backends;
    for (int i = 0; i < 3; ++i)
      backends += "  { name = \"redis-" + std::to_string(i) + "\", address = \"" +
                  redis_[i]->address() + "\" },\n";
    std::string toml =
        "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
        std::to_string(admin_) + "\"\n[listeners.redis]\nlisten = \"127.0.0.1:" +
        std::to_string(port_) +
        "\"\nprotocol = \"tcp\"\ncluster = \"redis\"\nhash = [ { source_ip = true } ]\n"
        "timeouts = { connect = \"200ms\", idle = \"60s\" }\n"
        "[clusters.redis]\nselector = \"ring_hash\"\n"
        "health = { type = \"redis\", interval = \"" + std::to_string(kIntervalMs) +
        "ms\", timeout = \"" + std::to_string(kTimeoutMs) + "ms\", rise = " +
        std::to_string(kRise) + ", fall = " + std::to_string(kFall) + " }\n"
        "backends = [\n" + backends + "]\n";
    started_ = true;
    ASSERT_TRUE(lb_.start(toml, {port_, admin_})) << lb_.output();
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(waitUntil(
          [&] { return backendHealth(admin_, "redis", "redis-" + std::to_string(i)).checked; },
          5s))
          << lb_.output();
  }
  void TearDown() override {
    for (auto& r : redis_)
      if (r->ok()) thaw(r->process());
    if (started_) {
      EXPECT_EQ(lb_.process().stop(15, 10s), std::optional<int>(0)) << lb_.output();
    }
  }

  // The port of the redis-server a new connection through lb reaches (INFO server), or 0.
  uint16_t servingPort() {
    auto r = runCommand({"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_), "INFO",
                         "server"},
                        5s);
    size_t at = r.out.find("tcp_port:");
    return at == std::string::npos ? 0 : static_cast<uint16_t>(atoi(r.out.c_str() + at + 9));
  }
  int indexOfPort(uint16_t port) {
    for (int i = 0; i < 3; ++i)
      if (redis_[i]->port() == port) return i;
    return -1;
  }
  std::string cli(const std::string& command, Millis timeout = 10s) {
    std::vector<std::string> argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_)};
    size_t at = 0;
    for (size_t sp; (sp = command.find(' ', at)) != std::string::npos; at = sp + 1)
      argv.push_back(command.substr(at, sp - at));
    argv.push_back(command.substr(at));
    auto r = runCommand(argv, timeout);
    return r.timed_out ? "(timed out)" : r.out + r.err;
  }

  std::vector<std::unique_ptr<CacheServer>> redis_;
  LbProcess lb_;
  bool started_ = false;
  uint16_t port_ = 0, admin_ = 0;
};

TEST_F(HealthRedisTest, ClientsOfAFrozenServerGetAnErrorOrTheNextServerNeverAHang) {
  const int owner = indexOfPort(servingPort());
  ASSERT_GE(owner, 0);
  const std::string owner_name = "redis-" + std::to_string(owner);
  EXPECT_EQ(cli("SET health:key kept"), "OK\n");

  // A client that is connected to the owner when it freezes.
  TcpClient held;
  ASSERT_TRUE(held.connect(port_));
  ASSERT_EQ(redisCall(held, {"PING"}), "PONG");

  freeze(redis_[owner]->process());
  const auto t0 = Clock::now();
  constexpr int kClients = 12;
  std::vector<std::string> outputs(kClients);
  std::vector<double> took_ms(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      const auto start = Clock::now();
      outputs[i] = cli("PING", 10s);
      took_ms[i] = msSince(start);
    });
  for (auto& t : clients) t.join();
  const double all_done_ms = msSince(t0);

  int answered = 0, errors = 0;
  double slowest = 0;
  for (int i = 0; i < kClients; ++i) {
    EXPECT_NE(outputs[i], "(timed out)") << "client " << i << " hung";
    if (outputs[i] == "PONG\n")
      ++answered;
    else
      ++errors;
    slowest = std::max(slowest, took_ms[i]);
    EXPECT_LE(took_ms[i], kDetectMs + kSlackMs) << "client " << i << ": " << outputs[i];
  }
  RecordProperty("answered", answered);
  RecordProperty("errors", errors);
  RecordProperty("slowest_client_ms", static_cast<int>(slowest));
  RecordProperty("all_clients_done_ms", static_cast<int>(all_done_ms));
  EXPECT_EQ(answered + errors, kClients);

  // The owner is down, and the connection held to it was closed rather than left waiting.
  auto view = backendHealth(admin_, "redis", owner_name);
  EXPECT_FALSE(view.healthy);
  EXPECT_EQ(view.reason, "2 checks timed out after 100ms");
  EXPECT_TRUE(held.waitClosed(3s)) << "a connection to the frozen server was left open";
  EXPECT_NE(lb_.output().find("backend " + owner_name + " down: 2 checks timed out after 100ms"),
            std::string::npos)
      << lb_.output();

  // New clients go to the next server at once.
  const auto t1 = Clock::now();
  const int next = indexOfPort(servingPort());
  EXPECT_LE(msSince(t1), 2000);
  EXPECT_GE(next, 0);
  EXPECT_NE(next, owner);
  EXPECT_EQ(cli("PING"), "PONG\n");

  // Back: up after `rise` checks, the clients with it, and its keys were never moved.
  thaw(redis_[owner]->process());
  ASSERT_TRUE(waitUntil([&] { return backendHealth(admin_, "redis", owner_name).healthy; }, 10s))
      << lb_.output();
  EXPECT_EQ(backendHealth(admin_, "redis", owner_name).reason, "2 checks passed");
  EXPECT_EQ(indexOfPort(servingPort()), owner);
  EXPECT_EQ(cli("GET health:key"), "kept\n");
}

}  // namespace
}  // namespace lb::test
