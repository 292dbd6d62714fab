// Redis behind a tcp listener: redis-server instances from the Debian package on free
// loopback ports, real clients (redis-cli, redis-benchmark, raw RESP), lb in between.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

class TcpRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      redis_.push_back(std::make_unique<CacheServer>(CacheServer::kRedis));
      ASSERT_TRUE(redis_.back()->ok()) << redis_.back()->output();
    }
    port_ = freePort();
    std::string backends;
    for (int i = 0; i < 3; ++i)
      backends += "  { name = \"redis-" + std::to_string(i) + "\", address = \"" +
                  redis_[i]->address() + "\" },\n";
    std::string toml = "[lb]\nworkers = 2\naccess_log = \"" + lb_.accessLogPath() +
                       "\"\n[admin]\nlisten = \"127.0.0.1:" + std::to_string(freePort()) +
                       "\"\n[listeners.redis]\nlisten = \"127.0.0.1:" + std::to_string(port_) +
                       "\"\nprotocol = \"tcp\"\ncluster = \"redis\"\n"
                       "hash = [ { five_tuple = true } ]\n"
                       "[clusters.redis]\nselector = \"ring_hash\"\nbackends = [\n" +
                       backends + "]\n";
    ASSERT_TRUE(lb_.start(toml, {port_})) << lb_.output();
  }

  std::vector<std::unique_ptr<CacheServer>> redis_;
  LbProcess lb_;
  uint16_t port_ = 0;
};

uint16_t localPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

TEST_F(TcpRedisTest, RedisCliSetThenGetOnOneConnection) {
  auto r = runCommand({"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_)}, 10s,
                      "SET greeting hello\nGET greeting\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\nhello\n") << r.err;
}

TEST_F(TcpRedisTest, EachKeyIsStoredOnTheBackendItsConnectionWasRoutedTo) {
  // Five-tuple keys: each connection may land on another server. The access log says which
  // (by the client's port); the servers themselves, asked directly, must agree.
  constexpr int kKeys = 30;
  std::map<uint16_t, std::string> key_of_port;
  for (int i = 0; i < kKeys; ++i) {
    TcpClient c;
    ASSERT_TRUE(c.connect(port_));
    std::string key = "key:" + std::to_string(i);
    ASSERT_EQ(redisCall(c, {"SET", key, "v" + std::to_string(i)}), "OK");
    key_of_port[localPort(c.fd())] = key;
  }
  ASSERT_TRUE(lb_.waitAccessLines(kKeys)) << lb_.accessLog();
  std::map<std::string, std::string> backend_of_key;
  for (const auto& line : lines(lb_.accessLog())) {
    std::string client = logField(line, "client");
    uint16_t port = static_cast<uint16_t>(std::stoi(client.substr(client.rfind(':') + 1)));
    ASSERT_TRUE(key_of_port.count(port)) << line;
    EXPECT_EQ(logField(line, "status"), "ok") << line;
    backend_of_key[key_of_port[port]] = logField(line, "backend");
  }
  std::set<std::string> used;
  for (int b = 0; b < 3; ++b) {
    TcpClient direct;
    ASSERT_TRUE(direct.connect(redis_[b]->port()));
    std::string name = "redis-" + std::to_string(b);
    for (const auto& [key, backend] : backend_of_key) {
      auto v = redisCall(direct, {"GET", key});
      EXPECT_EQ(v.has_value(), backend == name)
          << key << " routed to " << backend << " but " << name << " says "
          << v.value_or("(nil)");
      if (v) used.insert(name);
    }
  }
  EXPECT_GE(used.size(), 2u) << "30 five-tuple keys should spread over the servers";
}

TEST_F(TcpRedisTest, RedisBenchmarkWithFiftyClientsFinishesWithoutErrors) {
  auto r = runCommand({"redis-benchmark", "-h", "127.0.0.1", "-p", std::to_string(port_), "-c",
                       "50", "-n", "20000", "-t", "set,get", "-q"},
                      120s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("SET:"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("GET:"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("rror"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("rror"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lb::test
