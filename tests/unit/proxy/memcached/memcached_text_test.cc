// memcached's text protocol as lb's memcached listener parses it: storage commands with their
// data blocks, many-key retrievals, memcached's own errors, the binary magic byte; replies
// framed by the command they answer.
#include "lb/proxy/memcached/memcached_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lb::mc {
namespace {

// A view, not a std::string: the tokens point into the input, so a literal must not become a
// temporary that dies before the test reads them.
Request parse(std::string_view in, std::vector<std::string_view>& tokens) {
  return parseRequest(in.data(), in.size(), 1 << 20, 1024, tokens);
}

TEST(MemcachedTextTest, ASetCarriesItsDataBlock) {
  std::vector<std::string_view> t;
  const std::string in = "set k 5 0 3 noreply\r\nabc\r\nget k\r\n";
  const auto r = parse(in, t);
  ASSERT_EQ(r.status, Parse::kCommand);
  EXPECT_EQ(r.command, Command::kSet);
  EXPECT_EQ(r.length, in.find("get"));
  EXPECT_TRUE(r.noreply);
  EXPECT_EQ(std::string(in.substr(r.data, r.data_length)), "abc\r\n");
  // Without its data block, the command waits for it.
  const auto partial = parse("set k 5 0 3\r\nab", t);
  ASSERT_EQ(partial.status, Parse::kIncomplete);
  EXPECT_EQ(partial.need, std::string("set k 5 0 3\r\nabc\r\n").size());
}

TEST(MemcachedTextTest, AGetNamesEveryKey) {
  std::vector<std::string_view> t;
  const auto r = parse("gets a b c\r\n", t);
  ASSERT_EQ(r.status, Parse::kCommand);
  EXPECT_EQ(r.command, Command::kGets);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[r.first_key], "a");
  EXPECT_EQ(t[3], "c");
}

TEST(MemcachedTextTest, MemcachedsOwnErrors) {
  std::vector<std::string_view> t;
  const auto bad = parse("set k 0 0 2\r\nabcd\r\n", t);
  ASSERT_EQ(bad.status, Parse::kError);
  EXPECT_STREQ(bad.error, "CLIENT_ERROR bad data chunk\r\n");
  EXPECT_EQ(parse("set k 0 0 x\r\n", t).status, Parse::kError);
  EXPECT_FALSE(validKey(std::string(251, 'k')));
  EXPECT_FALSE(validKey("a\x01"));
  EXPECT_TRUE(validKey("user:42"));
  // An unknown command gets memcached's own ERROR, and the stream goes on after its line.
  const auto unknown = parse("frobnicate\r\nget k\r\n", t);
  ASSERT_EQ(unknown.status, Parse::kError);
  EXPECT_STREQ(unknown.error, "ERROR\r\n");
  EXPECT_FALSE(unknown.close);
  EXPECT_EQ(unknown.length, 12u);
}

TEST(MemcachedTextTest, TheBinaryMagicIsRecognised) {
  std::vector<std::string_view> t;
  std::string in(24, '\0');
  in[0] = '\x80';
  EXPECT_EQ(parse(in, t).status, Parse::kBinary);
  char out[64];
  const size_t n = binaryRefusal(reinterpret_cast<const unsigned char*>(in.data()), "no", out);
  ASSERT_EQ(n, 26u);
  EXPECT_EQ(static_cast<unsigned char>(out[0]), 0x81);
  EXPECT_EQ(static_cast<unsigned char>(out[7]), 0x83);   // status: not supported
}

TEST(MemcachedTextTest, ValuesRepliesEndAtEnd) {
  const std::string reply = "VALUE a 0 3\r\nEND\r\nEND\r\n";   // "END\r\n" inside the data
  ReplyScan scan;
  EXPECT_EQ(scanReply(kReplyValues, reply.data(), reply.size(), scan),
            static_cast<int64_t>(reply.size()));
  ReplyScan line;
  EXPECT_EQ(scanReply(kReplyStore, "STORED\r\n", 8, line), 8);
  EXPECT_TRUE(isErrorReply("SERVER_ERROR out of memory\r\n", 28));
  EXPECT_FALSE(isErrorReply("STORED\r\n", 8));
}

}  // namespace
}  // namespace lb::mc
