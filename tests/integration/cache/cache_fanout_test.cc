// The commands that address every server, and noreply on every path lb answers itself.
//
// With `fanout = true` on the listener, memcached flush_all and Redis FLUSHDB, FLUSHALL,
// DBSIZE, SCRIPT LOAD|EXISTS|FLUSH go to every server and come back as one reply; a server
// that cannot be reached is named in an error. Without it they are refused, naming the
// setting. COMMAND, TIME and LOLWUT are answered by one server. A noreply command gets no
// bytes, lb's refusals and errors included, so that the next reply is the next command's.
#include <gtest/gtest.h>

#include <signal.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

std::string exchange(TcpClient& c, const std::string& send, const std::string& until) {
  if (!c.send(send) || !c.readUntil(until, 10s)) return "(no answer) " + c.buffer();
  return c.take(c.buffer().size());
}

// Each server's own view.
long directDbsize(CacheServer& s) {
  TcpClient c;
  if (!c.connect(s.port())) return -1;
  auto v = redisCall(c, {"DBSIZE"});
  return v ? std::stol(*v) : -1;
}

TEST(MemcachedFanoutTest, FlushAllReachesEveryServerAndAnswersOkOnce) {
  CacheFleet fleet(CacheServer::kMemcached, 3);
  ASSERT_TRUE(fleet.start("fanout = true")) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  std::string sets;
  for (int i = 0; i < 60; ++i) sets += "set f" + std::to_string(i) + " 0 0 1 noreply\r\nx\r\n";
  ASSERT_EQ(exchange(c, sets + "mn\r\n", "MN\r\n"), "MN\r\n");
  for (int s = 0; s < 3; ++s) {   // every server holds some
    TcpClient d;
    ASSERT_TRUE(d.connect(fleet.server(s).port()));
    EXPECT_NE(exchange(d, "stats\r\n", "END\r\n").find("STAT curr_items 0\r\n"), 0u);
  }
  EXPECT_EQ(exchange(c, "flush_all\r\n", "\r\n"), "OK\r\n");
  for (int s = 0; s < 3; ++s) {
    TcpClient d;
    ASSERT_TRUE(d.connect(fleet.server(s).port()));
    std::string gets;
    for (int i = 0; i < 60; ++i) gets += "get f" + std::to_string(i) + "\r\n";
    const std::string all = exchange(d, gets + "mn\r\n", "MN\r\n");
    EXPECT_EQ(all.find("VALUE"), std::string::npos) << fleet.name(s);
  }
  // A delay and noreply: nothing comes back, the next reply is the next command's.
  EXPECT_EQ(exchange(c, "flush_all 0 noreply\r\nflush_all 10\r\nmn\r\n", "MN\r\n"), "OK\r\nMN\r\n");
  EXPECT_EQ(exchange(c, "flush_all abc\r\n", "\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  // verbosity is a server's setting too: every server takes it.
  EXPECT_EQ(exchange(c, "verbosity 1\r\nverbosity 0 noreply\r\nmn\r\n", "MN\r\n"), "OK\r\nMN\r\n");
}

TEST(MemcachedFanoutTest, AServerThatIsDownIsNamedAndTheOthersAreFlushed) {
  CacheFleet fleet(CacheServer::kMemcached, 3);
  ASSERT_TRUE(fleet.start("fanout = true\ntimeouts = { connect = \"300ms\", response = \"1s\" }"))
      << fleet.output();
  fleet.server(1).process().stop();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  EXPECT_EQ(exchange(c, "flush_all\r\n", "\r\n"), "SERVER_ERROR lb: flush_all failed on s2\r\n");
  EXPECT_EQ(exchange(c, "flush_all noreply\r\nmn\r\n", "MN\r\n"), "MN\r\n");
}

TEST(MemcachedNoreplyTest, RefusalsAndErrorsUnderNoreplySendNothing) {
  CacheFleet fleet(CacheServer::kMemcached, 2);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  // Without fanout, flush_all is refused; with noreply the refusal goes unsent, as do the
  // other whole-server commands memcached reads noreply on, and a bad line's error.
  EXPECT_EQ(exchange(c,
                     "flush_all 0 noreply\r\nverbosity 1 noreply\r\ncache_memlimit 50 noreply\r\n"
                     "incr k abc noreply\r\nset k 0 0 1 noreply\r\nv\r\nget k\r\n",
                     "END\r\n"),
            "VALUE k 0 1\r\nv\r\nEND\r\n");
  // Quiet meta mode drops what memcached drops (a miss, a stored HD) and keeps errors.
  EXPECT_EQ(exchange(c, "mg nothere v q\r\nms k 1 q\r\nw\r\nmn\r\n", "MN\r\n"), "MN\r\n");
  EXPECT_EQ(exchange(c, "flush_all\r\n", "\r\n"),
            "CLIENT_ERROR lb: flush_all needs fanout = true on the listener\r\n");
}

// lb's own failure (a server that stopped answering) under noreply: no bytes either.
TEST(MemcachedNoreplyTest, ATimeoutUnderNoreplySendsNothing) {
  CacheFleet fleet(CacheServer::kMemcached, 1);
  ASSERT_TRUE(fleet.start("timeouts = { response = \"300ms\" }")) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_EQ(kill(fleet.server(0).pid(), SIGSTOP), 0);
  ASSERT_TRUE(c.send("set k 0 0 1 noreply\r\nv\r\nmn\r\n"));
  ASSERT_TRUE(c.readUntil("MN\r\n", 10s)) << c.buffer();
  kill(fleet.server(0).pid(), SIGCONT);
  EXPECT_EQ(c.buffer(), "MN\r\n");
}

class RedisFanoutTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fleet_.start("fanout = true")) << fleet_.output(); }
  CacheFleet fleet_{CacheServer::kRedis, 3};
};

TEST_F(RedisFanoutTest, DbsizeIsTheSumAndFlushdbEmptiesEveryServer) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  // twemproxy's fnv1a_64 is coarse on short keys: enough varied keys to reach every server.
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(redisCall(c, {"SET", "dbsize:user:" + std::to_string(i * 7919), "x"}), "OK");
  long sum = 0;
  for (int s = 0; s < 3; ++s) {
    const long n = directDbsize(fleet_.server(s));
    EXPECT_GT(n, 0) << fleet_.name(s);
    sum += n;
  }
  EXPECT_EQ(sum, 300);
  EXPECT_EQ(redisCall(c, {"DBSIZE"}), "300");
  EXPECT_EQ(redisCall(c, {"FLUSHDB", "ASYNC"}), "OK");
  EXPECT_EQ(redisCall(c, {"DBSIZE"}), "0");
  ASSERT_EQ(redisCall(c, {"SET", "again", "x"}), "OK");
  EXPECT_EQ(redisCall(c, {"FLUSHALL"}), "OK");
  for (int s = 0; s < 3; ++s) EXPECT_EQ(directDbsize(fleet_.server(s)), 0);
  EXPECT_EQ(redisCall(c, {"FLUSHDB", "SOMETIMES"}), "-ERR syntax error");
}

TEST_F(RedisFanoutTest, ScriptLoadThenEvalshaOnKeysOfEveryServer) {
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  const auto sha = redisCall(c, {"SCRIPT", "LOAD", "return redis.call('SET', KEYS[1], ARGV[1])"});
  ASSERT_TRUE(sha);
  ASSERT_EQ(sha->size(), 40u) << *sha;
  std::vector<std::string> keys;
  for (int i = 0; i < 60; ++i) keys.push_back("evalsha:user:" + std::to_string(i * 7919));
  std::vector<std::string> owners = fleet_.ringOwners(keys);
  for (const auto& k : keys) EXPECT_EQ(redisCall(c, {"EVALSHA", *sha, "1", k, "v" + k}), "OK") << k;
  for (int s = 0; s < 3; ++s) EXPECT_NE(std::find(owners.begin(), owners.end(), fleet_.name(s)),
                                        owners.end());
  ASSERT_TRUE(c.send(redisEncode({"SCRIPT", "EXISTS", *sha, std::string(40, '0')})));
  auto v = readResp(c);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->items.size(), 2u);
  EXPECT_EQ(v->items[0].text, "1");
  EXPECT_EQ(v->items[1].text, "0");
  // Loaded on one server only: it does not exist everywhere.
  TcpClient d;
  ASSERT_TRUE(d.connect(fleet_.server(0).port()));
  const auto one = redisCall(d, {"SCRIPT", "LOAD", "return 7"});
  ASSERT_TRUE(one);
  ASSERT_TRUE(c.send(redisEncode({"SCRIPT", "EXISTS", *one})));
  v = readResp(c);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->items.size(), 1u);
  EXPECT_EQ(v->items[0].text, "0");
  EXPECT_EQ(redisCall(c, {"SCRIPT", "FLUSH"}), "OK");
  ASSERT_TRUE(c.send(redisEncode({"SCRIPT", "EXISTS", *sha})));
  v = readResp(c);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->items[0].text, "0");
}

TEST_F(RedisFanoutTest, ServerMetadataComesFromAServerNotAnEmptyAnswer) {
  TcpClient c, d;
  ASSERT_TRUE(c.connect(fleet_.port()));
  ASSERT_TRUE(d.connect(fleet_.server(0).port()));
  const auto count = redisCall(c, {"COMMAND", "COUNT"});
  ASSERT_TRUE(count);
  EXPECT_EQ(count, redisCall(d, {"COMMAND", "COUNT"}));
  EXPECT_GT(std::stol(*count), 100);
  ASSERT_TRUE(c.send(redisEncode({"TIME"})));
  auto t = readResp(c);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->items.size(), 2u);
}

TEST_F(RedisFanoutTest, AServerThatIsDownIsNamedInTheError) {
  fleet_.server(2).process().stop();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  for (auto args : std::vector<std::vector<std::string>>{{"FLUSHDB"}, {"DBSIZE"}, {"SCRIPT", "LOAD", "return 1"}}) {
    std::string cmd = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) cmd += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    ASSERT_TRUE(c.send(cmd));
    auto v = readResp(c);
    ASSERT_TRUE(v) << args[0];
    EXPECT_EQ(v->type, '-') << args[0];
    EXPECT_NE(v->text.find("failed on s3"), std::string::npos) << v->text;
  }
  EXPECT_EQ(redisCall(c, {"PING"}), "PONG");
}

TEST(RedisNoFanoutTest, WholeServerCommandsAreRefusedNamingTheSetting) {
  CacheFleet fleet(CacheServer::kRedis, 2);
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  EXPECT_EQ(redisCall(c, {"FLUSHDB"}), "-ERR lb: FLUSHDB needs fanout = true on the listener");
  EXPECT_EQ(redisCall(c, {"DBSIZE"}), "-ERR lb: DBSIZE needs fanout = true on the listener");
  EXPECT_EQ(redisCall(c, {"SCRIPT", "LOAD", "return 1"}),
            "-ERR lb: SCRIPT LOAD needs fanout = true on the listener");
}

}  // namespace
}  // namespace lb::test
