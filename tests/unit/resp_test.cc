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

}  // namespace
}  // namespace lb::resp
