// lb's RESP request parse against what Redis 7.0 reads (networking.c processMultibulkBuffer
// and processInlineBuffer, util.c string2ll, sds.c sdssplitargs): lengths only in their
// canonical form, Redis' limits for a client that has not authenticated, inline words split
// exactly as sdssplitargs splits them, and inline commands forwarded only re-encoded as arrays.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/proxy/redis/resp.h"
#include "lb/net/buffer_pool.h"

namespace lb::resp {
namespace {

struct Parsed {
  Request r;
  std::vector<std::string> args;
};

Parsed parse(const std::string& in, bool authenticated = true) {
  std::vector<std::string_view> args;
  std::string text;
  Parsed p;
  p.r = parseRequest(in.data(), in.size(), 1 << 20, 1 << 16, args, text, authenticated);
  for (auto a : args) p.args.emplace_back(a);
  return p;
}

std::vector<std::string> words(const std::string& line) {
  const auto p = parse(line + "\r\n");
  EXPECT_EQ(p.r.status, Parse::kCommand) << line;
  return p.args;
}

std::string forwarded(const std::string& in) {
  std::vector<std::string_view> args;
  std::string text;
  const Request r = parseRequest(in.data(), in.size(), 1 << 20, 1024, args, text);
  EXPECT_EQ(r.status, Parse::kCommand);
  BufferPool pool;
  ByteChain out(pool);
  appendCommand(out, {in.data(), r.length}, r.inline_form, args);
  uv_buf_t bufs[8];
  const int nb = out.buffers(bufs, 8);
  std::string s;
  for (int i = 0; i < nb; ++i) s.append(bufs[i].base, bufs[i].len);
  return s;
}

TEST(RespStrictTest, IntegersAreReadAsString2llReadsThem) {
  int64_t v = 0;
  for (const char* ok : {"0", "1", "-1", "10", "9223372036854775807", "-9223372036854775808"})
    EXPECT_TRUE(parseInteger(ok, &v)) << ok;
  for (const char* bad : {"", "-", "+1", "01", "00", "-0", "-01", " 1", "1 ", "1a",
                          "9223372036854775808", "-9223372036854775809", "000000000000000000001"})
    EXPECT_FALSE(parseInteger(bad, &v)) << bad;
}

TEST(RespStrictTest, ABulkLengthWithALeadingZeroIsRedisInvalidBulkLength) {
  for (const char* in : {"*2\r\n$3\r\nGET\r\n$02\r\nk1\r\n", "*1\r\n$-0\r\n", "*1\r\n$+4\r\nPING\r\n",
                         "*1\r\n$04\r\nPING\r\n"}) {
    const auto p = parse(in);
    ASSERT_EQ(p.r.status, Parse::kError) << in;
    EXPECT_STREQ(p.r.error, "Protocol error: invalid bulk length") << in;
  }
}

TEST(RespStrictTest, AMultibulkCountWithALeadingZeroIsRedisInvalidMultibulkLength) {
  for (const char* in : {"*02\r\n$3\r\nGET\r\n$2\r\nk1\r\n", "*-0\r\n", "*+1\r\n", "*00\r\n",
                         "*2147483648\r\n"}) {
    const auto p = parse(in);
    ASSERT_EQ(p.r.status, Parse::kError) << in;
    EXPECT_STREQ(p.r.error, "Protocol error: invalid multibulk length") << in;
  }
}

TEST(RespStrictTest, ANegativeOrZeroMultibulkCountIsAnEmptyCommand) {
  for (const char* in : {"*0\r\n", "*-1\r\n", "*-5\r\n"}) {
    const auto p = parse(in);
    EXPECT_EQ(p.r.status, Parse::kEmpty) << in;
    EXPECT_EQ(p.r.length, strlen(in)) << in;
  }
}

TEST(RespStrictTest, ExpectedDollarNamesTheByteFound) {
  const auto p = parse("*1\r\n!3\r\nGET\r\n");
  ASSERT_EQ(p.r.status, Parse::kError);
  EXPECT_STREQ(p.r.error, "Protocol error: expected '$'");
  EXPECT_EQ(p.r.got, '!');
}

TEST(RespStrictTest, AnUnauthenticatedClientGetsRedisUnauthenticatedLimits) {
  std::string eleven = "*11\r\n";
  const auto many = parse(eleven, false);
  ASSERT_EQ(many.r.status, Parse::kError);
  EXPECT_STREQ(many.r.error, "Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(parse(eleven, true).r.status, Parse::kIncomplete);

  const std::string big = "*2\r\n$3\r\nSET\r\n$16385\r\n";
  const auto bulk = parse(big, false);
  ASSERT_EQ(bulk.r.status, Parse::kError);
  EXPECT_STREQ(bulk.r.error, "Protocol error: unauthenticated bulk length");
  EXPECT_EQ(parse(big, true).r.status, Parse::kIncomplete);

  std::string ten = "*10\r\n";
  for (int i = 0; i < 10; ++i) ten += "$16384\r\n" + std::string(16384, 'x') + "\r\n";
  EXPECT_EQ(parse(ten, false).r.status, Parse::kCommand);
}

TEST(RespStrictTest, AnInlineLineWithANulByteIsRefused) {
  for (const std::string& in : {std::string("GET nul:0\0x\r\n", 13), std::string("GET a\0", 6)}) {
    const auto p = parse(in);
    ASSERT_EQ(p.r.status, Parse::kError);
    EXPECT_NE(std::string(p.r.error).find("NUL"), std::string::npos);
  }
  // The inline way to say a NUL is a \x00 escape in double quotes.
  EXPECT_EQ(words("GET \"nul:0\\x00x\""), (std::vector<std::string>{"GET", std::string("nul:0\0x", 7)}));
}

TEST(RespStrictTest, InlineWordsSplitAsSdssplitargsSplitsThem) {
  EXPECT_EQ(words("a\vb"), (std::vector<std::string>{"a\vb"}));   // \v ends no unquoted word
  EXPECT_EQ(words("a\fb c"), (std::vector<std::string>{"a\fb", "c"}));
  EXPECT_EQ(words("\v\fa \t b"), (std::vector<std::string>{"a", "b"}));   // blanks: isspace
  EXPECT_EQ(words("\"a\"\vb"), (std::vector<std::string>{"a", "b"}));   // after a quote: isspace
  EXPECT_EQ(words("ab\"c d\""), (std::vector<std::string>{"abc d"}));
  EXPECT_EQ(words("\"\\x41\\x4a\\x4\" '\\'x\\n'"),
            (std::vector<std::string>{"AJx4", "'x\\n"}));
  EXPECT_EQ(words("\"\\n\\r\\t\\b\\a\\q\""), (std::vector<std::string>{"\n\r\t\b\aq"}));
  EXPECT_EQ(words("''"), (std::vector<std::string>{""}));
  EXPECT_EQ(parse("\"a\"b\r\n").r.status, Parse::kError);
  EXPECT_EQ(parse("'a'b\r\n").r.status, Parse::kError);
  EXPECT_EQ(parse("\"a\\\"\r\n").r.status, Parse::kError);
  EXPECT_EQ(parse(" \t\r\n").r.status, Parse::kEmpty);
}

TEST(RespStrictTest, AnInlineCommandIsForwardedAsAnArray) {
  EXPECT_EQ(forwarded("set k \"a b\\x00\"\r\n"),
            std::string("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$4\r\na b\0\r\n", 30));
  EXPECT_EQ(forwarded("GET k\n"), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
}

TEST(RespStrictTest, AnArrayCommandIsForwardedAsItCame) {
  const std::string in = "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n";
  EXPECT_EQ(forwarded(in + "*1\r\n$4\r\nPING\r\n"), in);
}

TEST(RespStrictTest, AProgressCarriesALargeCommandAcrossReads) {
  std::string in = "*10001\r\n$4\r\nMGET\r\n";
  for (int i = 0; i < 10000; ++i) in += "$40\r\n" + std::string(40, static_cast<char>('a' + i % 26)) + "\r\n";
  std::vector<std::string_view> args;
  std::string text;
  RequestProgress progress;
  size_t pieces = 0;
  Request r;
  for (size_t n = 1000; n < in.size(); n += 1000, ++pieces) {
    r = parseRequest(in.data(), n, 1 << 20, 1 << 16, args, text, true, &progress);
    ASSERT_EQ(r.status, Parse::kIncomplete) << n;
    EXPECT_GT(progress.pos + 60, n) << "the scan kept up with the bytes";
  }
  r = parseRequest(in.data(), in.size(), 1 << 20, 1 << 16, args, text, true, &progress);
  ASSERT_EQ(r.status, Parse::kCommand);
  EXPECT_EQ(r.length, in.size());
  ASSERT_EQ(args.size(), 10001u);
  EXPECT_EQ(args[10000], std::string(40, static_cast<char>('a' + 9999 % 26)));
  EXPECT_EQ(progress.pos, 0u);
  EXPECT_GT(pieces, 400u);
}

TEST(RespStrictTest, AProgressStillSeesAnErrorAfterIt) {
  const std::string in = "*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$01\r\nb\r\n";
  std::vector<std::string_view> args;
  std::string text;
  RequestProgress progress;
  EXPECT_EQ(parseRequest(in.data(), 20, 1024, 16, args, text, true, &progress).status,
            Parse::kIncomplete);
  const Request r = parseRequest(in.data(), in.size(), 1024, 16, args, text, true, &progress);
  ASSERT_EQ(r.status, Parse::kError);
  EXPECT_STREQ(r.error, "Protocol error: invalid bulk length");
  EXPECT_EQ(progress.pos, 0u);
}

}  // namespace
}  // namespace lb::resp
