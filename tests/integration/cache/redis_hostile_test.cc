// Hostile input on a redis listener, measured as a victim sees it: one redis-server 7.0
// behind lb with `workers = 1`, so an attacker's commands and a victim's share lb's one
// server connection. The server is frozen (SIGSTOP) while the attacker's bytes and then the
// victim's command reach lb, so that whatever lb forwards is queued on that connection ahead
// of the victim's command; then it thaws and the victim must get its own answer. And a
// scripted fake Redis that answers garbage: the client gets "-ERR lb: ...", never the garbage.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "tests/support/cache_fleet.h"
#include "tests/support/tcp_test_servers.h"

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;

// Bytes waiting unread in the established sockets whose local port is `port` (the frozen
// server's side of lb's connection), from /proc/net/tcp.
size_t unreadAt(uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);
  size_t total = 0;
  while (std::getline(in, line)) {
    unsigned local_port = 0, state = 0;
    unsigned long tx = 0, rx = 0;
    char local_ip[16];
    if (sscanf(line.c_str(), " %*d: %8[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %lx:%lx", local_ip,
               &local_port, &state, &tx, &rx) == 5 &&
        local_port == port && state == 1)
      total += rx;
  }
  return total;
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

class RedisHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("timeouts = { response = \"3s\" }")) << fleet_.output();
    ASSERT_TRUE(victim_.connect(fleet_.port()));
    ASSERT_EQ(redisCall(victim_, {"SET", "k1", "v1"}), "OK");   // the server connection is up
  }
  void TearDown() override {
    kill(fleet_.server(0).pid(), SIGCONT);
    EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output();
  }

  // The attacker's bytes reach lb (and whatever lb forwards of them the frozen server's
  // socket), then the victim's GET k1 does; the server thaws. Returns the victim's reply;
  // the attacker's is left in attacker_.
  std::optional<RespValue> victimAfter(const std::string& attack) {
    const uint16_t server = fleet_.server(0).port();
    EXPECT_EQ(kill(fleet_.server(0).pid(), SIGSTOP), 0);
    EXPECT_TRUE(attacker_.connect(fleet_.port()));
    EXPECT_TRUE(attacker_.send(attack));
    // lb either answers the attacker itself or forwards something: wait for one.
    EXPECT_TRUE(waitFor([&] {
      return unreadAt(server) > 0 || attacker_.readAtLeast(1, 5ms);
    }));
    const size_t before = unreadAt(server);
    EXPECT_TRUE(victim_.send(redisEncode({"GET", "k1"})));
    EXPECT_TRUE(waitFor([&] { return unreadAt(server) > before; }))
        << "the victim's GET never reached the server";
    EXPECT_EQ(kill(fleet_.server(0).pid(), SIGCONT), 0);
    return readResp(victim_, 8s);
  }

  void expectVictimGetsItsOwn(const std::optional<RespValue>& v) {
    ASSERT_TRUE(v.has_value()) << "no reply for the victim";
    EXPECT_EQ(v->type, '$') << v->text;
    EXPECT_EQ(v->text, "v1");
  }

  // The attacker's reply, then EOF.
  std::string attackerReplyThenClose() {
    attacker_.readUntil("\r\n", 5s);
    const std::string got = attacker_.buffer();
    EXPECT_TRUE(attacker_.waitClosed(5s)) << "lb kept the attacker's connection open";
    return got;
  }

  CacheFleet fleet_{CacheServer::kRedis, 1, /*workers=*/1};
  TcpClient victim_;
  TcpClient attacker_;
};

TEST_F(RedisHostileTest, ABulkLengthWithALeadingZeroIsRefusedAndTheVictimGetsItsValue) {
  expectVictimGetsItsOwn(victimAfter("*2\r\n$3\r\nGET\r\n$02\r\nk1\r\n"));
  EXPECT_EQ(attackerReplyThenClose(), "-ERR Protocol error: invalid bulk length\r\n");
}

TEST_F(RedisHostileTest, AMultibulkCountWithALeadingZeroIsRefusedAndTheVictimGetsItsValue) {
  expectVictimGetsItsOwn(victimAfter("*02\r\n$3\r\nGET\r\n$2\r\nk1\r\n"));
  EXPECT_EQ(attackerReplyThenClose(), "-ERR Protocol error: invalid multibulk length\r\n");
}

TEST_F(RedisHostileTest, AMinusZeroBulkLengthIsRefusedAndTheVictimGetsItsValue) {
  expectVictimGetsItsOwn(victimAfter("*2\r\n$3\r\nGET\r\n$-0\r\n\r\n"));
  EXPECT_EQ(attackerReplyThenClose(), "-ERR Protocol error: invalid bulk length\r\n");
}

TEST_F(RedisHostileTest, AnInlineCommandWithANulIsRefusedAndTheServerDoesNotFreeze) {
  expectVictimGetsItsOwn(victimAfter(std::string("GET nul:0\0x\r\n", 13)));
  const std::string got = attackerReplyThenClose();
  EXPECT_EQ(got.rfind("-ERR Protocol error: a NUL byte", 0), 0u) << got;
}

TEST_F(RedisHostileTest, ABulkWithoutItsDollarIsRedisExpectedDollarNamingTheByte) {
  ASSERT_TRUE(attacker_.connect(fleet_.port()));
  ASSERT_TRUE(attacker_.send("*1\r\n!3\r\nGET\r\n"));
  EXPECT_EQ(attackerReplyThenClose(), "-ERR Protocol error: expected '$', got '!'\r\n");
}

TEST_F(RedisHostileTest, AnInlineCommandReachesTheServerAsItsArguments) {
  // Quotes and escapes are lb's to decode: the server must see the words lb saw.
  ASSERT_TRUE(victim_.send("SET \"sp ace\" \"a\\x00b\\x0d\\x0a\"\r\nGET \"sp ace\"\r\n"));
  auto set = readResp(victim_);
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->text, "OK");
  auto get = readResp(victim_);
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->text, std::string("a\0b\r\n", 5));
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet_.server(0).port()));
  EXPECT_EQ(redisCall(direct, {"STRLEN", "sp ace"}), "5");
}

class RedisUnauthenticatedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.start("password = \"s3cret\"")) << fleet_.output();
  }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  std::string replyThenClose(const std::string& in) {
    TcpClient c;
    EXPECT_TRUE(c.connect(fleet_.port()));
    EXPECT_TRUE(c.send(in));
    c.readUntil("\r\n", 5s);
    const std::string got = c.buffer();
    EXPECT_TRUE(c.waitClosed(5s)) << "lb kept the connection open";
    return got;
  }

  CacheFleet fleet_{CacheServer::kRedis, 1, /*workers=*/1};
};

TEST_F(RedisUnauthenticatedTest, MoreThanTenArgumentsBeforeAuthAreRefusedAtOnce) {
  EXPECT_EQ(replyThenClose("*11\r\n"),
            "-ERR Protocol error: unauthenticated multibulk length\r\n");
}

TEST_F(RedisUnauthenticatedTest, ABulkOver16384BytesBeforeAuthIsRefusedAtOnce) {
  EXPECT_EQ(replyThenClose("*2\r\n$3\r\nGET\r\n$16385\r\n"),
            "-ERR Protocol error: unauthenticated bulk length\r\n");
}

TEST_F(RedisUnauthenticatedTest, AnAuthenticatedClientHasNoSuchLimit) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_EQ(redisCall(c, {"AUTH", "s3cret"}), "OK");
  ASSERT_TRUE(c.send(redisEncode({"DEL", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"})));
  auto v = readResp(c);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->type, ':');
}

// A fake Redis: each connection's reads are answered by `reply`, with no check of what was
// asked beyond that.
class FakeRedis : public BlockingServer {
 public:
  explicit FakeRedis(std::function<std::string(const std::string&)> reply)
      : BlockingServer(answering(std::move(reply))) {}
};

class RedisGarbageReplyTest : public ::testing::Test {
 protected:
  // lb in front of the fake servers.
  void startLb(const std::vector<uint16_t>& backends) {
    port_ = freePort();
    std::string toml = "[lb]\nworkers = 1\n[listeners.cache]\nlisten = \"127.0.0.1:" +
                       std::to_string(port_) +
                       "\"\nprotocol = \"redis\"\ncluster = \"fake\"\n[clusters.fake]\n"
                       "selector = \"twemproxy\"\nbackends = [\n";
    for (size_t i = 0; i < backends.size(); ++i)
      toml += "  { name = \"r" + std::to_string(i + 1) + "\", address = \"127.0.0.1:" +
              std::to_string(backends[i]) + "\" },\n";
    toml += "]\n";
    started_ = true;
    ASSERT_TRUE(lb_.start(toml, {port_})) << lb_.output();
  }
  void TearDown() override {
    if (started_) {
      EXPECT_EQ(lb_.process().stop(), 0) << lb_.output();
    }
  }

  // The reply lb gives to `args`.
  std::optional<RespValue> ask(std::initializer_list<std::string_view> args) {
    TcpClient c;
    EXPECT_TRUE(c.connect(port_));
    EXPECT_TRUE(c.send(redisEncode(args)));
    return readResp(c, 8s);
  }

  void expectLbError(const std::optional<RespValue>& v, const std::string& garbage) {
    ASSERT_TRUE(v.has_value()) << "no reply";
    EXPECT_EQ(v->type, '-') << v->text;
    EXPECT_EQ(v->text.rfind("-ERR lb: ", 0), 0u) << v->text;
    EXPECT_EQ(v->text.find(garbage), std::string::npos) << v->text;
  }

  LbProcess lb_;
  uint16_t port_ = 0;
  bool started_ = false;
};

TEST_F(RedisGarbageReplyTest, AStatusLineWithABareLineFeedNeverReachesTheClient) {
  FakeRedis fake([](const std::string&) { return std::string("+OK\n+OK\r\n"); });
  startLb({fake.port()});
  expectLbError(ask({"SET", "k", "v"}), "OK\n");
}

TEST_F(RedisGarbageReplyTest, AnIntegerThatIsNotANumberNeverReachesTheClient) {
  FakeRedis fake([](const std::string&) { return std::string(":abc\r\n"); });
  startLb({fake.port()});
  expectLbError(ask({"INCR", "k"}), "abc");
}

TEST_F(RedisGarbageReplyTest, AnIntegerReplyToMgetFailsTheConnection) {
  FakeRedis fake([](const std::string&) { return std::string(":1\r\n"); });
  startLb({fake.port()});
  expectLbError(ask({"MGET", "a", "b"}), ":1");
}

// Two fakes, so that MGET, DEL and MSET over many keys split; each answers with a reply of
// the right type that its share of the keys cannot produce.
TEST_F(RedisGarbageReplyTest, AnMgetPartWithMoreValuesThanKeysIsNotMerged) {
  // Each fake answers its MGET "*<1 + keys>" with keys + 1 values.
  auto extra = [](const std::string& req) {
    const int count = std::stoi(req.substr(1, req.find('\r') - 1));
    std::string r = "*" + std::to_string(count) + "\r\n";
    for (int i = 0; i < count; ++i) r += "$1\r\nx\r\n";
    return r;
  };
  FakeRedis a(extra), b(extra);
  startLb({a.port(), b.port()});
  // Enough keys that both servers own several.
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  std::string cmd = "*41\r\n$4\r\nMGET\r\n";
  for (int i = 0; i < 40; ++i) {
    const std::string k = "key" + std::to_string(i);
    cmd += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  }
  ASSERT_TRUE(c.send(cmd));
  auto v = readResp(c, 8s);
  expectLbError(v, "$1");
}

TEST_F(RedisGarbageReplyTest, ADelPartCountingMoreKeysThanItHadIsNotSummed) {
  auto many = [](const std::string&) { return std::string(":1000\r\n"); };
  FakeRedis a(many), b(many);
  startLb({a.port(), b.port()});
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  std::string cmd = "*41\r\n$3\r\nDEL\r\n";
  for (int i = 0; i < 40; ++i) {
    const std::string k = "key" + std::to_string(i);
    cmd += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  }
  ASSERT_TRUE(c.send(cmd));
  expectLbError(readResp(c, 8s), "2000");
}

TEST_F(RedisGarbageReplyTest, AnMsetPartAnsweringAnotherStatusIsNotOk) {
  auto queued = [](const std::string&) { return std::string("+QUEUED\r\n"); };
  FakeRedis a(queued), b(queued);
  startLb({a.port(), b.port()});
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  std::string cmd = "*81\r\n$4\r\nMSET\r\n";
  for (int i = 0; i < 40; ++i) {
    const std::string k = "key" + std::to_string(i);
    cmd += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n$1\r\nv\r\n";
  }
  ASSERT_TRUE(c.send(cmd));
  expectLbError(readResp(c, 8s), "QUEUED");
}

}  // namespace
}  // namespace lb::test
