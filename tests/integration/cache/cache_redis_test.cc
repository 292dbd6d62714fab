// protocol = "redis": three redis-server processes behind lb, real clients (redis-cli,
// redis-benchmark) and raw RESP. Every command is routed by its own key; these tests check
// where keys land (against /ring), that multi-key commands come back merged in key order,
// that pipelines and many clients get exactly their own replies in order, and that what lb
// cannot do through a sharding proxy is refused with the connection still usable.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

class CacheRedisTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.start()) << fleet_.output(); }
  void TearDown() override { EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output(); }

  std::string cli(const std::string& input) {
    auto r = runCommand({"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(fleet_.port())},
                        20s, input);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // Every key each server holds, asked directly.
  std::vector<std::set<std::string>> keysPerServer() {
    std::vector<std::set<std::string>> held(static_cast<size_t>(fleet_.size()));
    for (int i = 0; i < fleet_.size(); ++i) {
      TcpClient c;
      EXPECT_TRUE(c.connect(fleet_.server(i).port()));
      EXPECT_TRUE(c.send(redisEncode({"KEYS", "*"})));
      auto v = readResp(c);
      EXPECT_TRUE(v && v->type == '*');
      if (v)
        for (const auto& k : v->items) held[static_cast<size_t>(i)].insert(k.text);
    }
    return held;
  }

  CacheFleet fleet_{CacheServer::kRedis, 3};
};

TEST_F(CacheRedisTest, RedisCliCommandsAreAnsweredByTheKeysServers) {
  EXPECT_EQ(cli("PING\nSET greeting hello\nGET greeting\nECHO hi\nSELECT 0\nINCR n\nINCR n\n"
                "LPUSH l a b\nLRANGE l 0 -1\nDEL greeting n l\nGET greeting\n"),
            "PONG\nOK\nhello\nhi\nOK\n1\n2\n2\nb\na\n3\n\n");
}

TEST_F(CacheRedisTest, RedisBenchmarkKeysSitOnTheServerRingNames) {
  auto r = runCommand({"redis-benchmark", "-h", "127.0.0.1", "-p", std::to_string(fleet_.port()),
                       "-t", "set,get,incr,lpush,mset", "-P", "16", "-c", "50", "-n", "4000",
                       "-r", "300", "-q"},
                      120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* test : {"SET:", "GET:", "INCR:", "LPUSH:", "MSET"})
    EXPECT_NE(r.out.find(test), std::string::npos) << test << "\n" << r.out;
  EXPECT_EQ(r.out.find("rror"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("rror"), std::string::npos) << r.err;

  const auto held = keysPerServer();
  std::vector<std::string> keys;
  std::map<std::string, int> holders;
  for (int i = 0; i < fleet_.size(); ++i) {
    EXPECT_FALSE(held[static_cast<size_t>(i)].empty()) << "no key on " << CacheFleet::name(i);
    for (const auto& k : held[static_cast<size_t>(i)]) {
      if (holders.count(k) == 0) keys.push_back(k);
      holders[k] += 1 << i;
    }
  }
  ASSERT_GT(keys.size(), 100u);
  const auto owners = fleet_.ringOwners(keys);
  int wrong = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    const int mask = holders[keys[k]];
    const std::string holder =
        mask == 1 ? "s1" : mask == 2 ? "s2" : mask == 4 ? "s3" : "several servers";
    if (holder != owners[k] && ++wrong <= 10)
      ADD_FAILURE() << keys[k] << " is on " << holder << ", /ring says " << owners[k];
  }
  EXPECT_EQ(wrong, 0);

  // And through lb each string key reads what its server holds.
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::vector<std::unique_ptr<TcpClient>> direct;
  for (int i = 0; i < fleet_.size(); ++i) {
    direct.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(direct.back()->connect(fleet_.server(i).port()));
  }
  int checked = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k].rfind("key:", 0) != 0 || owners[k].size() != 2) continue;
    const auto want = redisCall(*direct[static_cast<size_t>(fleet_.indexOf(owners[k]))],
                                {"GET", keys[k]});
    ASSERT_TRUE(want) << keys[k];
    ASSERT_EQ(redisCall(c, {"GET", keys[k]}), want) << keys[k];
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST_F(CacheRedisTest, MgetOfSixtyKeysOnThreeServersComesBackInKeyOrder) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::vector<std::string> keys;
  for (int i = 0; i < 60; ++i) keys.push_back("user:" + std::to_string(i * 7));
  for (size_t i = 0; i < keys.size(); ++i)
    if (i % 10 != 3) {
      ASSERT_EQ(redisCall(c, {"SET", keys[i], "value-" + keys[i]}), "OK");
    }
  std::set<std::string> owners;
  for (const auto& o : fleet_.ringOwners(keys)) owners.insert(o);
  ASSERT_EQ(owners.size(), 3u) << "the keys should span every server";

  std::string mget = "*61\r\n$4\r\nMGET\r\n";
  for (const auto& k : keys) mget += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  ASSERT_TRUE(c.send(mget));
  auto v = readResp(c);
  ASSERT_TRUE(v) << c.buffer();
  ASSERT_EQ(v->type, '*');
  ASSERT_EQ(v->items.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 10 == 3)
      EXPECT_TRUE(v->items[i].nil) << keys[i];
    else
      EXPECT_EQ(v->items[i].text, "value-" + keys[i]) << i;
  }
}

TEST_F(CacheRedisTest, MultiKeyCountsAndMsetAreMergedAcrossServers) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  EXPECT_EQ(redisCall(c, {"MSET", "user:0", "1", "user:7", "2", "user:14", "3", "user:21", "4", "user:28", "5", "user:35",
                          "6"}),
            "OK");
  std::set<std::string> owners;
  for (const auto& o : fleet_.ringOwners({"user:0", "user:7", "user:14", "user:21", "user:28", "user:35"})) owners.insert(o);
  ASSERT_GT(owners.size(), 1u) << "the keys should span servers";
  EXPECT_EQ(redisCall(c, {"EXISTS", "user:0", "user:7", "nope", "user:14", "user:0"}), "4");
  EXPECT_EQ(redisCall(c, {"TOUCH", "user:21", "user:28", "nope"}), "2");
  EXPECT_EQ(redisCall(c, {"DEL", "user:0", "user:7", "nope"}), "2");
  EXPECT_EQ(redisCall(c, {"UNLINK", "user:14", "user:21"}), "2");
  EXPECT_EQ(redisCall(c, {"EXISTS", "user:0", "user:7", "user:14", "user:21", "user:28", "user:35"}), "2");
  // MSETNX is atomic on one server only: across servers it is refused; keys under one hash
  // tag, or on one server anyway, go through.
  const auto r = redisCall(c, {"MSETNX", "user:0", "1", "user:14", "2"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rfind("-CROSSSLOT", 0), 0u) << *r;
  EXPECT_NE(r->find("MSETNX"), std::string::npos) << *r;
  EXPECT_EQ(redisCall(c, {"MSETNX", "user:14", "1", "user:21", "2"}), "1");
  EXPECT_EQ(redisCall(c, {"PING"}), "PONG");
}

TEST_F(CacheRedisTest, TenThousandPipelinedCommandsComeBackCompleteAndInOrder) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  constexpr int kCommands = 10000;
  std::string batch;
  std::vector<std::string> expected;
  for (int i = 0; i < kCommands; ++i) {
    const std::string key = "p:" + std::to_string(i / 4);
    switch (i % 4) {
      case 0:
        batch += redisEncode({"SET", key, "v" + std::to_string(i)});
        expected.push_back("OK");
        break;
      case 1:
        batch += redisEncode({"GET", key});
        expected.push_back("v" + std::to_string(i - 1));
        break;
      case 2:
        batch += redisEncode({"INCR", "n:" + key});
        expected.push_back("1");
        break;
      default:
        batch += redisEncode({"ECHO", "e" + std::to_string(i)});
        expected.push_back("e" + std::to_string(i));
    }
  }
  ASSERT_TRUE(c.send(batch, 30s));
  for (int i = 0; i < kCommands; ++i) {
    auto v = readResp(c);
    ASSERT_TRUE(v) << "reply " << i << " missing";
    ASSERT_EQ(v->text, expected[static_cast<size_t>(i)]) << "reply " << i;
  }
  EXPECT_EQ(redisCall(c, {"PING"}), "PONG");
}

TEST_F(CacheRedisTest, TwoHundredConcurrentClientsEachSeeOnlyTheirOwnReplies) {
  constexpr int kClients = 200, kPerClient = 20;
  std::vector<std::unique_ptr<TcpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(clients.back()->connect(fleet_.port())) << i;
  }
  // Everyone's pipeline is out before anyone reads: the servers' connections carry all of
  // them interleaved.
  for (int i = 0; i < kClients; ++i) {
    std::string batch;
    for (int j = 0; j < kPerClient; ++j) {
      const std::string key = "c" + std::to_string(i) + ":" + std::to_string(j);
      batch += redisEncode({"SET", key, key + "!"});
      batch += redisEncode({"GET", key});
    }
    ASSERT_TRUE(clients[static_cast<size_t>(i)]->send(batch));
  }
  for (int i = 0; i < kClients; ++i) {
    for (int j = 0; j < kPerClient; ++j) {
      const std::string key = "c" + std::to_string(i) + ":" + std::to_string(j);
      auto set = readResp(*clients[static_cast<size_t>(i)]);
      auto get = readResp(*clients[static_cast<size_t>(i)]);
      ASSERT_TRUE(set && get) << i << " " << j;
      ASSERT_EQ(set->text, "OK");
      ASSERT_EQ(get->text, key + "!");
    }
  }
}

TEST_F(CacheRedisTest, UnsupportedCommandsGetAnErrorNamingThemAndTheConnectionCarriesOn) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  for (auto args : std::vector<std::vector<std::string>>{{"MULTI"},
                                                         {"SUBSCRIBE", "ch"},
                                                         {"BLPOP", "l", "0"},
                                                         {"KEYS", "*"},
                                                         {"SCAN", "0"},
                                                         {"FLUSHALL"},
                                                         {"SELECT", "2"},
                                                         {"NOSUCHCOMMAND", "x"}}) {
    std::string cmd = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) cmd += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    ASSERT_TRUE(c.send(cmd));
    auto v = readResp(c);
    ASSERT_TRUE(v) << args[0];
    EXPECT_EQ(v->type, '-') << args[0];
    EXPECT_NE(v->text.find(args[0]), std::string::npos) << v->text;
    EXPECT_EQ(redisCall(c, {"SET", "still", args[0]}), "OK");
    EXPECT_EQ(redisCall(c, {"GET", "still"}), args[0]);
  }
  // Inline commands, as telnet users type them.
  ASSERT_TRUE(c.send("PING\r\nset inline yes\r\nget inline\r\n"));
  for (const char* want : {"PONG", "OK", "yes"}) {
    auto v = readResp(c);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->text, want);
  }
}

// Input lb cannot resynchronise on is answered with Redis' own protocol error, after the
// replies to what came before it, and the connection closes; lb itself carries on.
void expectProtocolError(uint16_t port, const std::string& input, const std::string& words,
                         const std::string& prefix = "-ERR Protocol error") {
  TcpClient c;
  ASSERT_TRUE(c.connect(port));
  ASSERT_TRUE(c.send(redisEncode({"PING"}) + input));
  auto pong = readResp(c);
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->text, "PONG");
  auto v = readResp(c);
  ASSERT_TRUE(v) << input;
  EXPECT_EQ(v->text.rfind(prefix, 0), 0u) << v->text;
  EXPECT_NE(v->text.find(words), std::string::npos) << v->text;
  EXPECT_TRUE(c.waitClosed()) << input;
}

TEST_F(CacheRedisTest, GarbageOversizedAndTruncatedFramesGetAProtocolError) {
  expectProtocolError(fleet_.port(), "*abc\r\n", "multibulk length");
  expectProtocolError(fleet_.port(), "*1\r\n!3\r\nGET\r\n", "'$'");
  // Over limits.max_request_bytes: lb's own limit, named as such.
  expectProtocolError(fleet_.port(), "*2\r\n$3\r\nGET\r\n$99999999999\r\n",
                      "limits.max_request_bytes", "-ERR lb: request too large");
  // A bulk whose bytes do not end where its length says.
  expectProtocolError(fleet_.port(), "*2\r\n$3\r\nGET\r\n$1\r\nabc\r\n", "");
  // A frame cut off by the client's close: nothing to answer, nothing left behind.
  {
    TcpClient c;
    ASSERT_TRUE(c.connect(fleet_.port()));
    ASSERT_TRUE(c.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc"));
    c.close();
  }
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  EXPECT_EQ(redisCall(c, {"SET", "after", "ok"}), "OK");
}

}  // namespace
}  // namespace lb::test
