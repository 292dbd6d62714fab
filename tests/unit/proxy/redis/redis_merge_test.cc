// redis::mergeReplies (lb/proxy/redis/redis_replies.h) beyond redis_replies_test.cc: errors
// in a part, the edges of MGET, DEL and EXISTS sums, MSET. Byte-exact: what a client of one
// Redis 7.0 would have read for the same command.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lb/proxy/redis/redis_replies.h"
#include "tests/support/redis_merge_util.h"

namespace lb {
namespace {

constexpr const char* kBad = "-ERR lb: a backend answered a split command unexpectedly\r\n";

std::string merge(uint8_t kind, const std::vector<std::string>& replies,
                  const std::vector<uint16_t>& plan) {
  return mergeRedis(kind, replies, plan);
}

TEST(RedisMergeTest, AnErrorInAnyPartIsTheWholeReply) {
  EXPECT_EQ(merge(redis::kMget, {"*1\r\n$1\r\na\r\n", "-WRONGTYPE Operation against a key\r\n"},
                  {0, 1}),
            "-WRONGTYPE Operation against a key\r\n");
  EXPECT_EQ(merge(redis::kSum, {"-ERR busy\r\n", ":1\r\n"}, {0, 1}), "-ERR busy\r\n");
  EXPECT_EQ(merge(redis::kAllOk, {"-OOM command not allowed\r\n", "+OK\r\n"}, {0, 1}),
            "-OOM command not allowed\r\n");
}

TEST(RedisMergeTest, TheFirstErrorInFragmentOrderWins) {
  EXPECT_EQ(merge(redis::kMget, {"*1\r\n$-1\r\n", "-ERR first\r\n", "-ERR second\r\n"}, {0, 1, 2}),
            "-ERR first\r\n");
}

// The error is passed even when another part could not have been merged.
TEST(RedisMergeTest, AnErrorBeatsAMalformedPart) {
  EXPECT_EQ(merge(redis::kSum, {":99\r\n", "-ERR x\r\n"}, {0, 1}), "-ERR x\r\n");
}

TEST(RedisMergeTest, MgetOfMissesIsAnArrayOfNils) {
  EXPECT_EQ(merge(redis::kMget, {"*1\r\n$-1\r\n", "*2\r\n$-1\r\n$-1\r\n"}, {1, 0, 1}),
            "*3\r\n$-1\r\n$-1\r\n$-1\r\n");
}

TEST(RedisMergeTest, MgetValuesAreCopiedWholeEmptyAndBinaryOnes) {
  // A value holding CRLF and a '*' is counted by its length, not scanned.
  EXPECT_EQ(merge(redis::kMget, {"*2\r\n$0\r\n\r\n$6\r\n*1\r\n:x\r\n", "*1\r\n$2\r\nzz\r\n"},
                  {0, 1, 0}),
            "*3\r\n$0\r\n\r\n$2\r\nzz\r\n$6\r\n*1\r\n:x\r\n");
}

TEST(RedisMergeTest, MgetOfOneFragmentIsItsReply) {
  EXPECT_EQ(merge(redis::kMget, {"*2\r\n$1\r\na\r\n$1\r\nb\r\n"}, {0, 0}),
            "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
}

TEST(RedisMergeTest, MgetRefusesWhatMgetCannotAnswer) {
  // An integer element, a nil array, bytes after the last value.
  EXPECT_EQ(merge(redis::kMget, {"*1\r\n:1\r\n", "*1\r\n$-1\r\n"}, {0, 1}), kBad);
  EXPECT_EQ(merge(redis::kMget, {"*-1\r\n", "*1\r\n$-1\r\n"}, {0, 1}), kBad);
  EXPECT_EQ(merge(redis::kMget, {"*1\r\n$-1\r\n:5\r\n", "*1\r\n$-1\r\n"}, {0, 1}), kBad);
}

TEST(RedisMergeTest, DelAndExistsSumTheirCounts) {
  EXPECT_EQ(merge(redis::kSum, {":0\r\n", ":0\r\n"}, {0, 1}), ":0\r\n");
  EXPECT_EQ(merge(redis::kSum, {":2\r\n", ":1\r\n", ":0\r\n"}, {0, 0, 1, 2}), ":3\r\n");
  // EXISTS a a counts a twice: two keys of one fragment, up to 2.
  EXPECT_EQ(merge(redis::kSum, {":2\r\n", ":1\r\n"}, {0, 0, 1}), ":3\r\n");
}

TEST(RedisMergeTest, ASumPartThatIsNotAnIntegerIsRefused) {
  EXPECT_EQ(merge(redis::kSum, {"+OK\r\n", ":1\r\n"}, {0, 1}), kBad);
  EXPECT_EQ(merge(redis::kSum, {"$1\r\n1\r\n", ":1\r\n"}, {0, 1}), kBad);
  EXPECT_EQ(merge(redis::kSum, {":01\r\n", ":1\r\n"}, {0, 1}), kBad);
}

TEST(RedisMergeTest, MsetNeedsExactlyOkFromEveryPart) {
  EXPECT_EQ(merge(redis::kAllOk, {"+OK\r\n", "+OK\r\n", "+OK\r\n"}, {0, 1, 2}), "+OK\r\n");
  EXPECT_EQ(merge(redis::kAllOk, {"+OK\r\n", ":1\r\n"}, {0, 1}), kBad);
  EXPECT_EQ(merge(redis::kAllOk, {"+OKAY\r\n", "+OK\r\n"}, {0, 1}), kBad);
}

TEST(RedisMergeTest, APlanNamingNoFragmentIsRefused) {
  EXPECT_EQ(merge(redis::kSum, {":1\r\n", ":1\r\n"}, {0, 2}), kBad);
}

TEST(RedisMergeTest, AMissingStoredPartIsAnLbError) {
  const std::string ok = ":1\r\n";
  FragmentReply parts[2] = {{ok.data(), 4}, {nullptr, 0}};
  const uint16_t plan[2] = {0, 1};
  redis::MergeInput in;
  in.kind = redis::kSum;
  in.parts = parts;
  in.fragment_count = 2;
  in.plan = plan;
  in.keys = 2;
  CacheScratch scratch;
  BufferPool pool;
  ByteChain out(pool);
  redis::mergeReplies(in, scratch, out);
  uv_buf_t b[4];
  ASSERT_EQ(out.buffers(b, 4), 1);
  EXPECT_EQ(std::string(b[0].base, b[0].len), "-ERR lb: out of memory\r\n");
}

// Handover (lb/proxy/cache/handover_reads.h): the keys whose element is a nil are found in
// the client's order, and a value read through stands in the place of its key's nil.
TEST(RedisMergeTest, MgetMissesAreFoundAndAReadThroughFillsTheirPlace) {
  const std::vector<std::string> parts = {"*2\r\n$-1\r\n$1\r\nc\r\n", "*2\r\n$1\r\nb\r\n$-1\r\n"};
  const std::vector<uint16_t> plan = {0, 1, 0, 1};   // a b c d
  EXPECT_EQ(missedRedis(parts, plan), (std::vector<uint32_t>{0, 3}));
  HandoverKeyRead a, d;
  a.position = 0;
  a.reply = "$2\r\naa\r\n";
  a.reply_len = static_cast<uint32_t>(strlen(a.reply));
  d.position = 3;   // read, but missed there too: its nil stays
  EXPECT_EQ(merge(redis::kMget, parts, plan),
            "*4\r\n$-1\r\n$1\r\nb\r\n$1\r\nc\r\n$-1\r\n");
  EXPECT_EQ(mergeRedis(redis::kMget, parts, plan, {a, d}),
            "*4\r\n$2\r\naa\r\n$1\r\nb\r\n$1\r\nc\r\n$-1\r\n");
  // A part that is an error, or not what MGET answers, names no miss: the merge answers it.
  EXPECT_TRUE(missedRedis({"-ERR x\r\n", parts[1]}, plan).empty());
  EXPECT_TRUE(missedRedis({"*1\r\n$-1\r\n", parts[1]}, plan).empty());
}

}  // namespace
}  // namespace lb
