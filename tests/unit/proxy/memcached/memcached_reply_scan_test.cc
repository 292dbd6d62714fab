// Backend replies framed by the command they answer: each kind takes the replies memcached
// 1.6.18 can send for it and error lines; anything else is -1 (the server connection fails).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "lb/proxy/memcached/memcached_replies.h"
#include "lb/proxy/memcached/memcached_text.h"

namespace lb::mc {
namespace {

int64_t scan(uint8_t kind, std::string_view s) {
  ReplyScan sc;
  return scanReply(kind, s.data(), s.size(), sc);
}

void expectOnly(uint8_t kind, std::initializer_list<std::string_view> ok) {
  for (std::string_view s : ok) EXPECT_EQ(scan(kind, s), static_cast<int64_t>(s.size())) << s;
  for (std::string_view s : {"ERROR\r\n", "CLIENT_ERROR bad command line format\r\n",
                             "SERVER_ERROR out of memory\r\n"})
    EXPECT_EQ(scan(kind, s), static_cast<int64_t>(s.size())) << s;
  for (std::string_view s : {"BOGUS\r\n", "ERRORS\r\n", "STORED \r\n", "HDX\r\n", "\r\n",
                             "END\n"})
    if (std::find(ok.begin(), ok.end(), s) == ok.end()) {
      EXPECT_EQ(scan(kind, s), -1) << s;
    }
}

TEST(MemcachedReplyScanTest, AGetTakesValueItemsThenEnd) {
  expectOnly(kReplyValues, {"END\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n",
                            "VALUE a 4294967295 1 18446744073709551615\r\nx\r\nEND\r\n"});
  EXPECT_EQ(scan(kReplyValues, "VALUE a 0 1\r\nx\r\nBOGUS\r\n"), -1);
  EXPECT_EQ(scan(kReplyValues, "VALUE a x 1\r\nx\r\nEND\r\n"), -1);
  EXPECT_EQ(scan(kReplyValues, "VALUE a 0 1 2 3\r\nx\r\nEND\r\n"), -1);
  EXPECT_EQ(scan(kReplyValues, "VALUE a 0 1\r\nxyEND\r\n"), -1);
  EXPECT_EQ(scan(kReplyValues, "VALUE a 0 1\r\nx\r\nEN"), 0);
}

TEST(MemcachedReplyScanTest, EachClassicCommandTakesItsOwnReplies) {
  expectOnly(kReplyStore, {"STORED\r\n", "NOT_STORED\r\n", "EXISTS\r\n", "NOT_FOUND\r\n"});
  expectOnly(kReplyDelete, {"DELETED\r\n", "NOT_FOUND\r\n"});
  expectOnly(kReplyArithmetic, {"0\r\n", "18446744073709551615\r\n", "NOT_FOUND\r\n"});
  expectOnly(kReplyTouch, {"TOUCHED\r\n", "NOT_FOUND\r\n"});
  EXPECT_EQ(scan(kReplyStore, "END\r\n"), -1);
  EXPECT_EQ(scan(kReplyArithmetic, "-1\r\n"), -1);
}

TEST(MemcachedReplyScanTest, MetaCommandsTakeTheirTwoLetterCodes) {
  expectOnly(kReplyMeta, {"HD\r\n", "HD k1 O2\r\n", "NS\r\n", "EX\r\n", "NF\r\n"});
  expectOnly(kReplyMetaValue, {"HD\r\n", "EN\r\n", "EN kx O123\r\n", "NF\r\n", "VA 2 t-1\r\nhi\r\n",
                               "VA 0\r\n\r\n"});
  expectOnly(kReplyMetaDebug, {"EN\r\n", "ME k exp=-1 la=1 cas=2 fetch=no cls=1 size=63\r\n"});
  EXPECT_EQ(scan(kReplyMeta, "VA 2\r\nhi\r\n"), -1);   // ms and md never send a value
  EXPECT_EQ(scan(kReplyMetaValue, "VA x\r\nhi\r\n"), -1);
  EXPECT_EQ(scan(kReplyMetaValue, "VA 2\r\nhi"), 0);
}

TEST(MemcachedReplyScanTest, ALineRunningPastTheLimitIsNoReply) {
  const std::string long_line(kMaxLine, 'H');
  EXPECT_EQ(scan(kReplyMeta, long_line), -1);
  EXPECT_EQ(scan(kReplyMeta, long_line.substr(0, 100)), 0);
}

TEST(MemcachedReplyScanTest, QuietModeDropsExactlyWhatMemcachedSkips) {
  EXPECT_TRUE(dropReply(kQuietGet, "EN\r\n", 4));
  EXPECT_TRUE(dropReply(kQuietGet, "EN k1 O123\r\n", 12));
  EXPECT_FALSE(dropReply(kQuietGet, "HD\r\n", 4));
  EXPECT_TRUE(dropReply(kQuietStore, "HD O1\r\n", 7));
  EXPECT_FALSE(dropReply(kQuietStore, "NS\r\n", 4));
  EXPECT_TRUE(dropReply(kQuietMath, "VA 1\r\n2\r\n", 9));
  EXPECT_FALSE(dropReply(kQuietMath, "NF\r\n", 4));
  EXPECT_FALSE(dropReply(kQuietGet, "CLIENT_ERROR x\r\n", 16));
  EXPECT_TRUE(dropReply(kNoreply, "CLIENT_ERROR x\r\n", 16));
}

}  // namespace
}  // namespace lb::mc
