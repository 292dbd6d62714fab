// Every field of a memcached command line as lb checks it before forwarding, the way
// memcached 1.6.18 (proto_text.c) reads it, and the canonical line lb forwards
// (memcached_forward.h): what memcached would read differently is refused, never sent.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lb/proxy/memcached/memcached_forward.h"
#include "lb/proxy/memcached/memcached_text.h"

namespace lb::mc {
namespace {

struct Parsed {
  Request r;
  std::vector<std::string_view> tokens;
};

Parsed parse(std::string_view in) {
  Parsed p;
  p.r = parseRequest(in.data(), in.size(), 1 << 20, 1024, p.tokens);
  return p;
}

std::string forwarded(std::string_view in) {
  Parsed p = parse(in);
  EXPECT_EQ(p.r.status, Parse::kCommand) << in;
  std::string out;
  if (p.r.status != Parse::kCommand) return out;
  if (p.r.command <= Command::kGats)
    writeRetrieval(p.r, p.tokens, nullptr, 0, out);
  else
    writeForwarded(p.r, p.tokens, in.data(), out);
  return out;
}

// The error line lb answers for `in`, as memcached would ("" when it is no error).
std::string errorOf(std::string_view in) {
  const Parsed p = parse(in);
  return p.r.status == Parse::kError ? std::string(p.r.error) : std::string();
}

bool badFormat(std::string_view in) {
  return errorOf(in) == "CLIENT_ERROR bad command line format\r\n";
}

TEST(MemcachedFieldsTest, NumbersArePlainDecimalWithinTheirTypes) {
  EXPECT_TRUE(parseU32("4294967295"));
  EXPECT_FALSE(parseU32("4294967296"));
  EXPECT_FALSE(parseU32("-1"));
  EXPECT_FALSE(parseU32("+1"));
  EXPECT_FALSE(parseU32(""));
  EXPECT_TRUE(parseI32("-2147483648"));
  EXPECT_FALSE(parseI32("2147483648"));
  EXPECT_FALSE(parseI32("99999999999"));
  EXPECT_FALSE(parseI32("-"));
  EXPECT_TRUE(parseU64("18446744073709551615"));
  EXPECT_FALSE(parseU64("18446744073709551616"));
  EXPECT_FALSE(parseU64("abc"));
  size_t n = 0;
  EXPECT_TRUE(parseLength("2147483645", &n));
  EXPECT_FALSE(parseLength("2147483646", &n));
  EXPECT_FALSE(parseLength("-1", &n));
}

TEST(MemcachedFieldsTest, AStorageCommandWithABadFieldDropsItsDataBlock) {
  for (std::string_view line : {"set k x 0 2\r\n", "set k -1 0 2\r\n", "set k 0 99999999999 2\r\n",
                                "cas k 0 0 2 abc\r\n", "set k 0 0 2 extra\r\n"}) {
    const std::string in = std::string(line) + "hi\r\nget k\r\n";
    const Parsed p = parse(in);
    ASSERT_EQ(p.r.status, Parse::kError) << line;
    EXPECT_FALSE(p.r.close) << line;
    EXPECT_EQ(p.r.length + p.r.skip, in.find("get k")) << line;
  }
  EXPECT_TRUE(badFormat("set k x 0 2\r\nhi\r\n"));
}

TEST(MemcachedFieldsTest, AStorageCommandWithoutAByteCountCloses) {
  for (std::string_view in : {"set k 0 0 x\r\n", "set k 0 0 -1\r\n", "set k 0 0\r\n"}) {
    const Parsed p = parse(in);
    ASSERT_EQ(p.r.status, Parse::kError) << in;
    EXPECT_TRUE(p.r.close) << in;
  }
}

TEST(MemcachedFieldsTest, NoreplyHoldsForABadLineToo) {
  const Parsed p = parse("set k x 0 1 noreply\r\nz\r\n");
  ASSERT_EQ(p.r.status, Parse::kError);
  EXPECT_TRUE(p.r.noreply);
}

TEST(MemcachedFieldsTest, DeleteTakesAHoldTimeOfZeroAndNoreplyOnly) {
  EXPECT_EQ(forwarded("delete k\r\n"), "delete k\r\n");
  EXPECT_EQ(forwarded("delete k 0\r\n"), "delete k\r\n");
  EXPECT_EQ(forwarded("delete k 0 noreply\r\n"), "delete k\r\n");
  EXPECT_TRUE(parse("delete k noreply\r\n").r.noreply);
  EXPECT_TRUE(badFormat("delete k 5\r\n"));
  EXPECT_TRUE(badFormat("delete k x noreply\r\n"));
}

TEST(MemcachedFieldsTest, IncrDecrTakeAnUnsignedDeltaAndTouchAnExptime) {
  EXPECT_EQ(forwarded("incr k 18446744073709551615 noreply\r\n"),
            "incr k 18446744073709551615\r\n");
  // memcached's own words for a bad number (process_arithmetic_command,
  // process_touch_command): clients match them.
  EXPECT_EQ(errorOf("incr k -1\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  EXPECT_EQ(errorOf("decr k x\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  EXPECT_EQ(errorOf("incr k abc\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  EXPECT_EQ(forwarded("touch k -1\r\n"), "touch k -1\r\n");
  EXPECT_EQ(errorOf("touch k 99999999999\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(errorOf("touch k abc\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_TRUE(badFormat("incr k\tx 1\r\n"));   // a bad key is still a bad line
}

TEST(MemcachedFieldsTest, GatTakesAnExptime) {
  EXPECT_EQ(forwarded("gat  100   a b\r\n"), "gat 100 a b\r\n");
  EXPECT_TRUE(badFormat("gat x a\r\n"));
}

TEST(MemcachedFieldsTest, ALineIsForwardedInItsCanonicalForm) {
  EXPECT_EQ(forwarded("set  k 1  0 2   noreply\nhi\r\n"), "set k 1 0 2\r\nhi\r\n");
  EXPECT_EQ(forwarded("get a  b\n"), "get a b\r\n");
  EXPECT_TRUE(badFormat("get a\tb\r\n"));   // memcached would read one key "a\tb"
}

TEST(MemcachedFieldsTest, MetaFlagsAreReadByTheirFirstCharacter) {
  const Parsed p = parse("mg k qv\r\n");
  ASSERT_EQ(p.r.status, Parse::kCommand);
  EXPECT_TRUE(p.r.quiet);
  EXPECT_EQ(forwarded("mg k qv v\r\n"), "mg k v\r\n");
  // memcached reads "qT0" as flag q alone: the whole token goes.
  EXPECT_EQ(forwarded("ms k 2 qT0 F5\r\nhi\r\n"), "ms k 2 F5\r\nhi\r\n");
  EXPECT_TRUE(parse("mg a2V5 bx v\r\n").r.base64_key);
}

TEST(MemcachedFieldsTest, MetaFlagsAreCheckedAsMemcachedChecksThem) {
  // Refused as memcached refuses them, in its words (_meta_flag_preparse and each meta
  // command's own checks in proto_text.c).
  EXPECT_EQ(errorOf("mg k v v\r\n"), "CLIENT_ERROR duplicate flag\r\n");
  EXPECT_EQ(errorOf("mg k z\r\n"), "CLIENT_ERROR invalid flag\r\n");
  EXPECT_EQ(errorOf("ms k 2 Zbad\r\nhi\r\n"), "CLIENT_ERROR invalid flag\r\n");
  EXPECT_EQ(errorOf("mg k Tx\r\n"), "CLIENT_ERROR bad token in command line format\r\n");
  EXPECT_EQ(errorOf("ma k D-1\r\n"), "CLIENT_ERROR invalid numeric delta value\r\n");
  EXPECT_EQ(errorOf("ma k J-1\r\n"), "CLIENT_ERROR invalid numeric initial value\r\n");
  EXPECT_EQ(errorOf("ma k MX\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\n");
  EXPECT_EQ(errorOf("ms k 1 MI\r\nx\r\n"), "CLIENT_ERROR invalid mode for ms M token\r\n");
  EXPECT_EQ(errorOf("ms k 1 MEE\r\nx\r\n"), "CLIENT_ERROR incorrect length for M token\r\n");
  EXPECT_EQ(errorOf("ms k 1 C-5\r\nx\r\n"), "CLIENT_ERROR bad token in command line format\r\n");
  EXPECT_TRUE(badFormat("ms k 1 F-5\r\nx\r\n"));   // memcached has no word of its own for F
  // A bad token, then an unknown flag: the reading stops at the flag, whose word stands.
  EXPECT_EQ(errorOf("mg k Tx z\r\n"), "CLIENT_ERROR invalid flag\r\n");
  EXPECT_EQ(errorOf("mg k O" + std::string(32, 'o') + "\r\n"),
            "CLIENT_ERROR opaque token too long\r\n");   // opaque over 32
  EXPECT_EQ(parse("mg k O" + std::string(31, 'o') + "\r\n").r.status, Parse::kCommand);
  std::string many = "mg k";
  for (char c : std::string("vkstcfhlOPLuq")) many += std::string(" ") + c;
  EXPECT_EQ(parse(many + " T1 N1 R1 F1\r\n").r.status, Parse::kCommand);   // 19 tokens
  EXPECT_EQ(errorOf(many + " T1 N1 R1 F1 C1\r\n"),   // 20: past memcached's limit
            "CLIENT_ERROR options flags are too long\r\n");
  EXPECT_TRUE(badFormat("me k x\r\n"));
  EXPECT_EQ(forwarded("me k\r\n"), "me k\r\n");
}

TEST(MemcachedFieldsTest, ABadMetaSetDropsItsDataBlock) {
  const std::string in = "ms k 2 Tx\r\nhi\r\nmn\r\n";
  const Parsed p = parse(in);
  ASSERT_EQ(p.r.status, Parse::kError);
  EXPECT_EQ(p.r.length + p.r.skip, in.find("mn"));
}

TEST(MemcachedFieldsTest, OnlyRetrievalsRunPastTwoThousandBytesWithoutANewline) {
  const std::string set = "set " + std::string(kMaxLine, 'k');
  const Parsed a = parse(set);
  ASSERT_EQ(a.r.status, Parse::kError);
  EXPECT_TRUE(a.r.close);
  EXPECT_STREQ(a.r.error, "CLIENT_ERROR line too long\r\n");
  for (const char* get : {"get ", "gets ", "gat ", "gats "})
    EXPECT_EQ(parse(get + std::string(kMaxLine, 'k')).r.status, Parse::kIncomplete) << get;
}

}  // namespace
}  // namespace lb::mc
