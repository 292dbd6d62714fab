// The Redis command table (lb/proxy/redis/redis_commands.h): lookup in any case, key
// positions as Redis 7.0's own command table gives them (src/commands/*.json: first key,
// last key, step; or a numkeys argument), and what lb refuses, each with its reason.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "lb/proxy/redis/redis_commands.h"

namespace lb::redis {
namespace {

const CommandSpec& spec(std::string_view name) {
  const CommandSpec* s = findCommand(name);
  EXPECT_NE(s, nullptr) << name;
  static const CommandSpec none{"", Route::kRefused};
  return s != nullptr ? *s : none;
}

TEST(RedisCommandTableTest, LookupIgnoresCase) {
  EXPECT_EQ(findCommand("GET"), findCommand("get"));
  EXPECT_EQ(findCommand("gEt"), findCommand("get"));
  EXPECT_EQ(findCommand("ZRANGEBYSCORE"), findCommand("zrangebyscore"));
  EXPECT_EQ(spec("MGET").name, "mget");
}

TEST(RedisCommandTableTest, UnknownNamesAreNotFound) {
  EXPECT_EQ(findCommand(""), nullptr);
  EXPECT_EQ(findCommand("gett"), nullptr);
  EXPECT_EQ(findCommand("ge"), nullptr);
  EXPECT_EQ(findCommand("get "), nullptr);
  EXPECT_EQ(findCommand(std::string(200, 'a')), nullptr);
  EXPECT_EQ(findCommand(std::string_view("get\0", 4)), nullptr);
}

TEST(RedisCommandTableTest, EveryCommandIsFoundByItsOwnLowerCaseName) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < commandCount(); ++i) {
    const CommandSpec& c = commandAt(i);
    EXPECT_TRUE(names.insert(c.name).second) << "twice: " << c.name;
    for (char ch : c.name) EXPECT_FALSE(ch >= 'A' && ch <= 'Z') << c.name;
    EXPECT_EQ(findCommand(c.name), &c) << c.name;
  }
  EXPECT_GT(commandCount(), 200u);
}

TEST(RedisCommandTableTest, RefusedCommandsAndOnlyThoseCarryAReason) {
  for (size_t i = 0; i < commandCount(); ++i) {
    const CommandSpec& c = commandAt(i);
    if (c.route == Route::kRefused) {
      ASSERT_NE(c.reason, nullptr) << c.name;
      EXPECT_GT(std::string_view(c.reason).size(), 10u) << c.name;
    } else {
      EXPECT_EQ(c.reason, nullptr) << c.name;
    }
    EXPECT_EQ(c.route == Route::kLocal, c.local != Local::kNone) << c.name;
  }
}

TEST(RedisCommandTableTest, KeyedCommandsNameARealKeyPosition) {
  for (size_t i = 0; i < commandCount(); ++i) {
    const CommandSpec& c = commandAt(i);
    switch (c.route) {
      case Route::kKey:
        EXPECT_GE(c.first, 1) << c.name;
        EXPECT_EQ(c.last, c.first) << c.name;
        break;
      case Route::kSameServer:
        EXPECT_GE(c.first, 1) << c.name;
        EXPECT_TRUE(c.last < 0 || c.last > c.first) << c.name;
        EXPECT_GE(c.step, 1) << c.name;
        break;
      case Route::kNumkeys:
        EXPECT_GE(c.numkeys, 1) << c.name;
        EXPECT_LT(c.first, c.numkeys) << c.name;
        break;
      default:
        break;
    }
  }
}

TEST(RedisCommandTableTest, SingleKeyCommandsTakeTheirKeyWhereRedisDoes) {
  EXPECT_EQ(spec("get").route, Route::kKey);
  EXPECT_EQ(spec("get").first, 1);
  EXPECT_EQ(spec("set").first, 1);
  EXPECT_EQ(spec("hset").first, 1);
  // OBJECT ENCODING key, XINFO STREAM key, XGROUP CREATE key: the key after a subcommand.
  EXPECT_EQ(spec("object").first, 2);
  EXPECT_EQ(spec("xinfo").first, 2);
  EXPECT_EQ(spec("xgroup").first, 2);
}

TEST(RedisCommandTableTest, MultiKeyCommandsThatMustShareAServer) {
  const CommandSpec& rename = spec("rename");
  EXPECT_EQ(rename.route, Route::kSameServer);
  EXPECT_EQ(rename.first, 1);
  EXPECT_EQ(rename.last, 2);
  // BITOP op destkey key...: keys from 2 to the end.
  const CommandSpec& bitop = spec("bitop");
  EXPECT_EQ(bitop.route, Route::kSameServer);
  EXPECT_EQ(bitop.first, 2);
  EXPECT_EQ(bitop.last, -1);
  EXPECT_EQ(spec("sinter").first, 1);
  EXPECT_EQ(spec("sinter").last, -1);
  EXPECT_EQ(spec("pfcount").route, Route::kSameServer);
}

TEST(RedisCommandTableTest, NumkeysCommandsCountTheirKeysFromTheirNumkeysArgument) {
  // EVAL script numkeys key...: numkeys at 2, no key before it.
  EXPECT_EQ(spec("eval").route, Route::kNumkeys);
  EXPECT_EQ(spec("eval").numkeys, 2);
  EXPECT_EQ(spec("eval").first, 0);
  EXPECT_EQ(spec("fcall").numkeys, 2);
  // ZUNIONSTORE destination numkeys key...: numkeys at 2 and a key at 1.
  EXPECT_EQ(spec("zunionstore").numkeys, 2);
  EXPECT_EQ(spec("zunionstore").first, 1);
  // LMPOP numkeys key...; ZINTERCARD numkeys key...
  EXPECT_EQ(spec("lmpop").numkeys, 1);
  EXPECT_EQ(spec("lmpop").first, 0);
  EXPECT_EQ(spec("zintercard").numkeys, 1);
}

TEST(RedisCommandTableTest, SplitCommandsAndTheirSteps) {
  EXPECT_EQ(spec("mget").route, Route::kMget);
  EXPECT_EQ(spec("mget").first, 1);
  EXPECT_EQ(spec("mget").last, -1);
  EXPECT_EQ(spec("mget").step, 1);
  for (const char* count : {"del", "unlink", "exists", "touch"}) {
    EXPECT_EQ(spec(count).route, Route::kCount) << count;
    EXPECT_EQ(spec(count).step, 1) << count;
  }
  // MSET key value key value...: every other argument.
  EXPECT_EQ(spec("mset").route, Route::kMset);
  EXPECT_EQ(spec("mset").step, 2);
  EXPECT_EQ(spec("msetnx").route, Route::kMsetnx);
  EXPECT_EQ(spec("msetnx").step, 2);
}

TEST(RedisCommandTableTest, LbAnswersConnectionCommandsItself) {
  EXPECT_EQ(spec("ping").local, Local::kPing);
  EXPECT_EQ(spec("echo").local, Local::kEcho);
  EXPECT_EQ(spec("quit").local, Local::kQuit);
  EXPECT_EQ(spec("select").local, Local::kSelect);
  EXPECT_EQ(spec("auth").local, Local::kAuth);
  EXPECT_EQ(spec("config").local, Local::kConfig);
}

// The commands that address every server go to every server (with the listener's fanout),
// and server metadata that is the same everywhere to any one server.
TEST(RedisCommandTableTest, WholeServerCommandsGoToEveryServerAndMetadataToAnyOne) {
  for (const char* name : {"flushdb", "flushall", "dbsize", "script"})
    EXPECT_EQ(spec(name).route, Route::kEveryServer) << name;
  for (const char* name : {"command", "time", "lolwut"}) {
    EXPECT_EQ(spec(name).route, Route::kAnyServer) << name;
    EXPECT_TRUE(spec(name).read_only) << name;
  }
}

TEST(RedisCommandTableTest, WhatCannotGoThroughASharingProxyIsRefused) {
  for (const char* name : {"multi", "exec", "watch", "subscribe", "publish", "blpop", "brpop",
                           "bzpopmin", "xread", "wait", "keys", "scan", "swapdb", "randomkey",
                           "info", "client", "monitor", "cluster", "function"})
    EXPECT_EQ(spec(name).route, Route::kRefused) << name;
  EXPECT_STREQ(spec("hello").reason, "lb speaks RESP2 only");
  EXPECT_NE(std::string_view(spec("blpop").reason).find("blocking"), std::string_view::npos);
  EXPECT_NE(std::string_view(spec("multi").reason).find("transaction"), std::string_view::npos);
}

}  // namespace
}  // namespace lb::redis
