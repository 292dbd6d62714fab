// Backend replies as lb's redis side frames and merges them: only what a Redis server writes
// (RESP2, canonical numbers, lines without a CR or LF in them), only what the command can be
// answered with (redis::ReplyKind), and a split command's parts only merged when each is
// what its share of the keys can produce.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/resp.h"
#include "lb/net/buffer_pool.h"
#include "tests/support/redis_merge_util.h"

namespace lb {
namespace {

int64_t scan(const std::string& s) {
  ReplyScan sc;
  return resp::scanValue(s.data(), s.size(), sc);
}

int64_t frame(uint8_t kind, const std::string& s) {
  ReplyScan sc;
  return redisWire().frameReply(kind, s.data(), s.size(), sc);
}

TEST(RedisRepliesTest, ASimpleStringWithALineFeedInsideIsNotAReply) {
  EXPECT_EQ(scan("+OK\n+OK\r\n"), -1);
  EXPECT_EQ(scan("-ERR a\nb\r\n"), -1);
  EXPECT_EQ(scan("+OK\n"), -1);   // refused before its CR comes
  EXPECT_EQ(scan("+OK\rX\r\n"), -1);
  EXPECT_EQ(scan("+OK"), 0);
  EXPECT_EQ(scan("+OK\r\n+OK\r\n"), 5);
}

TEST(RedisRepliesTest, NumbersInRepliesAreCanonical) {
  for (const char* bad : {":abc\r\n", ":01\r\n", ":-0\r\n", ":+1\r\n", ":\r\n", "$01\r\na\r\n",
                          "$-0\r\n", "$-2\r\n", "*01\r\n:1\r\n", "*-2\r\n", "*-0\r\n",
                          ":99999999999999999999\r\n"})
    EXPECT_EQ(scan(bad), -1) << bad;
  for (const char* ok : {":0\r\n", ":-12\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n", "$0\r\n\r\n",
                         ":-9223372036854775808\r\n"})
    EXPECT_EQ(scan(ok), static_cast<int64_t>(strlen(ok))) << ok;
}

TEST(RedisRepliesTest, OnlyResp2TypesAreReplies) {
  for (const char* bad : {"_\r\n", ",1.5\r\n", "#t\r\n", "%1\r\n+a\r\n+b\r\n", "~0\r\n",
                          ">1\r\n+a\r\n", "(1\r\n", "=3\r\ntxt\r\n", "!3\r\nerr\r\n", "OK\r\n"})
    EXPECT_EQ(scan(bad), -1) << bad;
}

TEST(RedisRepliesTest, ABulkMustEndInCrlf) {
  EXPECT_EQ(scan("$3\r\nabcX\r\n"), -1);
  EXPECT_EQ(scan("*2\r\n$1\r\na\r\n:x\r\n"), -1);
}

TEST(RedisRepliesTest, AReplyTheCommandCannotProduceFailsTheFrame) {
  EXPECT_EQ(frame(redis::kArrayReply, ":1\r\n"), -1);
  EXPECT_EQ(frame(redis::kArrayReply, "+OK\r\n"), -1);
  EXPECT_EQ(frame(redis::kArrayReply, "*1\r\n$1\r\na\r\n"), 11);
  EXPECT_EQ(frame(redis::kIntegerReply, "$1\r\n1\r\n"), -1);
  EXPECT_EQ(frame(redis::kIntegerReply, ":3\r\n"), 4);
  EXPECT_EQ(frame(redis::kOkReply, "+QUEUED\r\n"), -1);
  EXPECT_EQ(frame(redis::kOkReply, "+OK\r\n"), 5);
  for (uint8_t kind : {redis::kAnyReply, redis::kArrayReply, redis::kIntegerReply,
                       redis::kOkReply})
    EXPECT_EQ(frame(kind, "-ERR nope\r\n"), 11) << int(kind);
  EXPECT_EQ(frame(redis::kAnyReply, ":1\r\n"), 4);
}

struct Merge {
  std::vector<std::string> replies;
  std::vector<uint16_t> plan;

  std::string run(uint8_t kind) { return mergeRedis(kind, replies, plan); }
};

constexpr const char* kBad = "-ERR lb: a backend answered a split command unexpectedly\r\n";

TEST(RedisRepliesTest, MgetPartsMergeInKeyOrder) {
  Merge m{{"*2\r\n$1\r\na\r\n$-1\r\n", "*1\r\n$1\r\nb\r\n"}, {0, 1, 0}};
  EXPECT_EQ(m.run(redis::kMget), "*3\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n");
}

TEST(RedisRepliesTest, AnMgetPartWithTheWrongCountIsNotMerged) {
  Merge fewer{{"*1\r\n$1\r\na\r\n", "*1\r\n$1\r\nb\r\n"}, {0, 1, 0}};
  EXPECT_EQ(fewer.run(redis::kMget), kBad);
  Merge more{{"*3\r\n$1\r\na\r\n$1\r\nc\r\n$1\r\nd\r\n", "*1\r\n$1\r\nb\r\n"}, {0, 1, 0}};
  EXPECT_EQ(more.run(redis::kMget), kBad);
  Merge nested{{"*2\r\n$1\r\na\r\n*1\r\n$1\r\nx\r\n", "*1\r\n$1\r\nb\r\n"}, {0, 1, 0}};
  EXPECT_EQ(nested.run(redis::kMget), kBad);
  Merge leading{{"*02\r\n$1\r\na\r\n$1\r\nc\r\n", "*1\r\n$1\r\nb\r\n"}, {0, 1, 0}};
  EXPECT_EQ(leading.run(redis::kMget), kBad);
}

TEST(RedisRepliesTest, SumPartsMustBeCountsOfTheirKeys) {
  Merge ok{{":1\r\n", ":2\r\n"}, {0, 1, 1}};
  EXPECT_EQ(ok.run(redis::kSum), ":3\r\n");
  Merge over{{":2\r\n", ":2\r\n"}, {0, 1, 1}};
  EXPECT_EQ(over.run(redis::kSum), kBad);
  Merge negative{{":-1\r\n", ":2\r\n"}, {0, 1, 1}};
  EXPECT_EQ(negative.run(redis::kSum), kBad);
  Merge huge{{":9223372036854775807\r\n", ":1\r\n"}, {0, 1}};
  EXPECT_EQ(huge.run(redis::kSum), kBad);
}

TEST(RedisRepliesTest, MsetPartsMustAllBeOk) {
  Merge ok{{"+OK\r\n", "+OK\r\n"}, {0, 1}};
  EXPECT_EQ(ok.run(redis::kAllOk), "+OK\r\n");
  Merge other{{"+OK\r\n", "+QUEUED\r\n"}, {0, 1}};
  EXPECT_EQ(other.run(redis::kAllOk), kBad);
  Merge error{{"+OK\r\n", "-ERR oom\r\n"}, {0, 1}};
  EXPECT_EQ(error.run(redis::kAllOk), "-ERR oom\r\n");
}

}  // namespace
}  // namespace lb
