// RESP2 parsing as lb's redis listener does it: commands split only where Redis would split
// them, partial input asking for exactly what it lacks, and the framing errors Redis itself
// reports; backend replies framed across reads without being decoded.
#include "lb/proxy/redis/resp.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lb::resp {
namespace {

struct Parsed {
  Request r;
  std::vector<std::string> args;
};

Parsed parse(const std::string& in, size_t max_bulk = 1 << 20, size_t max_args = 1024) {
  std::vector<std::string_view> args;
  std::string text;
  Parsed p;
  p.r = parseRequest(in.data(), in.size(), max_bulk, max_args, args, text);
  for (auto a : args) p.args.emplace_back(a);
  return p;
}

TEST(RespTest, AnArrayOfBulkStringsIsOneCommand) {
  const std::string in = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*1\r\n$4\r\nPING\r\n";
  const auto p = parse(in);
  ASSERT_EQ(p.r.status, Parse::kCommand);
  EXPECT_EQ(p.r.length, in.find("*1"));
  EXPECT_EQ(p.args, (std::vector<std::string>{"SET", "k", "hello"}));
  EXPECT_FALSE(p.r.inline_form);
}

TEST(RespTest, EveryPrefixOfACommandIsIncomplete) {
  const std::string in = "*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\n";
  for (size_t n = 1; n < in.size(); ++n) {
    const auto p = parse(in.substr(0, n));
    ASSERT_EQ(p.r.status, Parse::kIncomplete) << n;
    EXPECT_GT(p.r.need, n) << n;
    EXPECT_LE(p.r.need, in.size()) << n;
  }
  EXPECT_EQ(parse(in).r.status, Parse::kCommand);
}

TEST(RespTest, InlineCommandsSplitOnSpacesAndQuotes) {
  const auto p = parse("set greeting \"hello world\"\r\n");
  ASSERT_EQ(p.r.status, Parse::kCommand);
  EXPECT_TRUE(p.r.inline_form);
  EXPECT_EQ(p.args, (std::vector<std::string>{"set", "greeting", "hello world"}));
  EXPECT_EQ(parse("set k \"open\r\n").r.status, Parse::kError);
}

TEST(RespTest, FramingErrorsUseRedisWording) {
  EXPECT_STREQ(parse("*abc\r\n").r.error, "Protocol error: invalid multibulk length");
  EXPECT_STREQ(parse("*1\r\n!3\r\nGET\r\n").r.error, "Protocol error: expected '$'");
  EXPECT_STREQ(parse("*1\r\n$x\r\n").r.error, "Protocol error: invalid bulk length");
  EXPECT_EQ(parse("*2\r\n$3\r\nGET\r\n$1\r\nabc\r\n").r.status, Parse::kError);
}

TEST(RespTest, LimitsAreTooLargeErrors) {
  const auto big = parse("*2\r\n$3\r\nGET\r\n$2000\r\n", 1024);
  ASSERT_EQ(big.r.status, Parse::kError);
  EXPECT_TRUE(big.r.too_large);
  const auto many = parse("*2000\r\n", 1 << 20, 1024);
  ASSERT_EQ(many.r.status, Parse::kError);
  EXPECT_TRUE(many.r.too_large);
}

TEST(RespTest, RepliesAreFramedAcrossReadsWithoutDecoding) {
  const std::string reply = "*3\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n+OK\r\n";
  ReplyScan scan;
  for (size_t n = 1; n < reply.size(); ++n) ASSERT_EQ(scanValue(reply.data(), n, scan), 0) << n;
  EXPECT_EQ(scanValue(reply.data(), reply.size(), scan), static_cast<int64_t>(reply.size()));
  ReplyScan fresh;
  EXPECT_EQ(scanValue("?what\r\n", 7, fresh), -1);
}

// matchGet is the redis session's shortcut past parseRequest: whatever it takes, parseRequest
// must read as the same GET of the same length; every canonical GET it must take. Checked
// over a few GETs, every prefix of them, and every one-byte change of them.
TEST(RespTest, MatchGetTakesOnlyWhatParseRequestReadsAsTheSameGet) {
  using namespace std::string_literals;
  const std::vector<std::string> gets = {
      "*2\r\n$3\r\nGET\r\n$5\r\nhot:1\r\n", "*2\r\n$3\r\nget\r\n$0\r\n\r\n",
      "*2\r\n$3\r\ngEt\r\n$11\r\nk\r\n\0\r\nxyz12\r\n"s, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"};
  auto check = [](const std::string& in, size_t max_bulk) {
    std::string_view key;
    const size_t len = matchGet(in.data(), in.size(), max_bulk, &key);
    const auto p = parse(in, max_bulk);
    if (len == 0) return false;
    EXPECT_EQ(p.r.status, Parse::kCommand) << in;
    EXPECT_EQ(p.r.length, len) << in;
    EXPECT_FALSE(p.r.inline_form) << in;
    EXPECT_EQ(p.args.size(), 2u) << in;
    if (p.args.size() == 2) {
      EXPECT_TRUE(equalsLower(p.args[0], "get")) << in;
      EXPECT_EQ(p.args[1], key) << in;
    }
    return true;
  };
  for (std::string g : gets) {
    EXPECT_TRUE(check(g, 1 << 20)) << g;
    EXPECT_TRUE(check(g + "*1\r\n$4\r\nPING\r\n", 1 << 20)) << "a pipelined GET";
    for (size_t n = 0; n < g.size(); ++n) EXPECT_FALSE(check(g.substr(0, n), 1 << 20));
    for (size_t i = 0; i < g.size(); ++i)
      for (int c = 0; c < 256; ++c) {
        std::string m = g;
        m[i] = static_cast<char>(c);
        check(m, 1 << 20);
        check(m, 4);   // a key past max_bulk is parseRequest's too-large error
      }
  }
  // Not the shortcut's: a longer GET (arity), a length with a leading zero or a sign.
  for (const std::string in : {"*3\r\n$3\r\nGET\r\n$1\r\nk\r\n$1\r\nk\r\n",
                               "*2\r\n$3\r\nGET\r\n$01\r\nk\r\n",
                               "*2\r\n$3\r\nGET\r\n$+1\r\nk\r\n", "GET k\r\n"}) {
    std::string_view key;
    EXPECT_EQ(matchGet(in.data(), in.size(), 1 << 20, &key), 0u) << in;
  }
}

}  // namespace
}  // namespace lb::resp
