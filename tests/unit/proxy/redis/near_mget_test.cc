// The pure parts of MGET with the near cache (lb/proxy/redis/redis_replies.h;
// redis_near_mget.cc): which MGET elements may fill it, finding a fill's element in its
// fragment's reply, and the merge of the servers' fragments with the near cache's own (the
// last fragment, an array of the cached keys' GET replies in the client's order).
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "lb/proxy/redis/redis_replies.h"
#include "tests/support/redis_merge_util.h"

namespace lb {
namespace {

TEST(NearMgetElementTest, OnlyABulkStringFills) {
  EXPECT_TRUE(redis::mgetElementFills("$1\r\na\r\n"));
  EXPECT_TRUE(redis::mgetElementFills("$0\r\n\r\n"));
  EXPECT_TRUE(redis::mgetElementFills("$3\r\n-1x\r\n"));
  // A nil: no key, or a key that is not a string (GET says WRONGTYPE there).
  EXPECT_FALSE(redis::mgetElementFills("$-1\r\n"));
  EXPECT_FALSE(redis::mgetElementFills(":1\r\n"));
  EXPECT_FALSE(redis::mgetElementFills("-ERR x\r\n"));
  EXPECT_FALSE(redis::mgetElementFills(""));
}

TEST(NearMgetCursorTest, FindsElementsForwardWhateverTheirBytes) {
  const std::string r = "*4\r\n$3\r\n*1\n\r\n$-1\r\n$0\r\n\r\n$5\r\nab\r\nc\r\n";
  redis::ArrayCursor c;
  ASSERT_TRUE(c.open(r.data(), r.size()));
  std::string_view e;
  ASSERT_TRUE(c.seek(0, &e));
  EXPECT_EQ(e, "$3\r\n*1\n\r\n");
  ASSERT_TRUE(c.seek(2, &e));
  EXPECT_EQ(e, "$0\r\n\r\n");
  ASSERT_TRUE(c.seek(3, &e));
  EXPECT_EQ(e, "$5\r\nab\r\nc\r\n");
  EXPECT_FALSE(c.seek(4, &e)) << "past the array's count";
  EXPECT_FALSE(c.seek(1, &e)) << "backwards";
}

TEST(NearMgetCursorTest, RefusesWhatIsNotAWholeArray) {
  redis::ArrayCursor c;
  std::string_view e;
  const std::string err = "-ERR x\r\n";
  EXPECT_FALSE(c.open(err.data(), err.size()));
  EXPECT_FALSE(c.seek(0, &e));
  const std::string cut = "*2\r\n$1\r\na\r\n$4\r\nab";
  ASSERT_TRUE(c.open(cut.data(), cut.size()));
  ASSERT_TRUE(c.seek(0, &e));
  EXPECT_FALSE(c.seek(1, &e)) << "a truncated element";
  const std::string nil = "*-1\r\n";
  EXPECT_FALSE(c.open(nil.data(), nil.size()));
}

// Keys a b c d e: b and e cached (the local fragment, 2), a and d on fragment 0, c on 1.
TEST(NearMgetMergeTest, TheNearCachesFragmentMergesInKeyOrder) {
  EXPECT_EQ(mergeRedis(redis::kMget,
                       {"*2\r\n$1\r\na\r\n$-1\r\n", "*1\r\n$1\r\nc\r\n", "*2\r\n$2\r\nbb\r\n$-1\r\n"},
                       {0, 2, 1, 0, 2}),
            "*5\r\n$1\r\na\r\n$2\r\nbb\r\n$1\r\nc\r\n$-1\r\n$-1\r\n");
  // The servers' error still wins, the local fragment being last.
  EXPECT_EQ(mergeRedis(redis::kMget, {"-ERR busy\r\n", "*1\r\n$1\r\nx\r\n"}, {0, 1}),
            "-ERR busy\r\n");
}

}  // namespace
}  // namespace lb
