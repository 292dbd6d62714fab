// cookie key plugin: parsing Cookie headers, and generating a cookie when a ttl is set.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "plugins/keys/key_plugins.h"
#include "tests/support/key_test_util.h"

namespace lb {
namespace {

using namespace std::chrono_literals;
using testing::Request;
using testing::run;
using testing::xxh;

KeyContext ctxFor(const Request& r, GeneratedCookie* out = nullptr) {
  KeyContext ctx;
  ctx.request = &r.view;
  ctx.cookie_out = out;
  return ctx;
}

TEST(CookieKeyTest, HashesTheNamedCookie) {
  Request r("/", {{"Cookie", "a=1; lb=backend-7; c=3"}});
  auto e = run(*testing::plugin("cookie", "lb"), ctxFor(r));
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.hash, xxh("backend-7"));
}

TEST(CookieKeyTest, FindsItInAnyCookieHeader) {
  Request r("/", {{"Cookie", "a=1"}, {"X-Other", "lb=no"}, {"cookie", "b=2; lb=v"}});
  EXPECT_EQ(run(*testing::plugin("cookie", "lb"), ctxFor(r)).hash, xxh("v"));
}

TEST(CookieKeyTest, FirstOccurrenceWins) {
  Request r("/", {{"Cookie", "lb=one; lb=two"}, {"Cookie", "lb=three"}});
  EXPECT_EQ(run(*testing::plugin("cookie", "lb"), ctxFor(r)).hash, xxh("one"));
}

TEST(CookieKeyTest, NamesAreCaseSensitiveAndWhole) {
  EXPECT_EQ(findCookie("LB=x; lbx=y; xlb=z", "lb"), std::nullopt);
}

TEST(CookieKeyTest, ParsingEdgeCases) {
  EXPECT_EQ(findCookie("lb=v", "lb"), "v");
  EXPECT_EQ(findCookie("a=1;lb=v", "lb"), "v");            // no space after ';'
  EXPECT_EQ(findCookie("a=1;  lb = v ;", "lb"), "v");      // stray whitespace
  EXPECT_EQ(findCookie("lb=\"quoted\"", "lb"), "quoted");  // RFC 6265 quoted value
  EXPECT_EQ(findCookie("lb=a=b", "lb"), "a=b");            // first '=' splits
  EXPECT_EQ(findCookie("lb; a=1", "lb"), std::nullopt);    // no '=': not a cookie named lb
  EXPECT_EQ(findCookie("", "lb"), std::nullopt);
  EXPECT_EQ(findCookie("lb=", "lb"), "");
}

TEST(CookieKeyTest, AbsentWithoutTtlYieldsNoKey) {
  Request r("/", {{"Cookie", "a=1"}});
  GeneratedCookie out;
  EXPECT_FALSE(run(*testing::plugin("cookie", "lb"), ctxFor(r, &out)).ok);
  EXPECT_FALSE(out.set);
}

TEST(CookieKeyTest, EmptyValueCountsAsAbsent) {
  Request r("/", {{"Cookie", "lb="}});
  EXPECT_FALSE(run(*testing::plugin("cookie", "lb"), ctxFor(r)).ok);
}

TEST(CookieKeyTest, WithTtlGeneratesOneAndHashesIt) {
  Request r("/", {{"Cookie", "a=1"}});
  GeneratedCookie out;
  auto p = testing::plugin("cookie", "lb", 3600s);   // out.name points into it
  auto e = run(*p, ctxFor(r, &out));
  ASSERT_TRUE(e.ok);
  ASSERT_TRUE(out.set);
  EXPECT_EQ(out.name, "lb");
  EXPECT_EQ(out.ttl, Duration(3600s));
  ASSERT_EQ(out.value_len, 32);
  std::string value(out.value, out.value_len);
  EXPECT_EQ(value.find_first_not_of("0123456789abcdef"), std::string::npos) << value;
  EXPECT_EQ(e.hash, xxh(value));
}

TEST(CookieKeyTest, GeneratedValueRoutesTheNextRequestTheSameWay) {
  auto p = testing::plugin("cookie", "lb", 60s);
  Request first("/");
  GeneratedCookie out;
  auto e1 = run(*p, ctxFor(first, &out));
  ASSERT_TRUE(out.set);
  Request second("/", {{"Cookie", "lb=" + std::string(out.value, out.value_len)}});
  GeneratedCookie out2;
  auto e2 = run(*p, ctxFor(second, &out2));
  EXPECT_EQ(e1.hash, e2.hash);
  EXPECT_FALSE(out2.set);   // the client has it: nothing to send
}

TEST(CookieKeyTest, GeneratedValuesAreUnique) {
  auto p = testing::plugin("cookie", "lb", 60s);
  Request r("/");
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    GeneratedCookie out;
    ASSERT_TRUE(run(*p, ctxFor(r, &out)).ok);
    seen.insert(std::string(out.value, out.value_len));
  }
  EXPECT_EQ(seen.size(), 10000u);
}

TEST(CookieKeyTest, ThreadsDrawDifferentValues) {
  // Each thread seeds its own generator; two threads must not replay one sequence.
  char a[32], b[32];
  std::thread([&] { generateCookieValue(a); }).join();
  std::thread([&] { generateCookieValue(b); }).join();
  EXPECT_NE(std::string(a, 32), std::string(b, 32));
}

TEST(CookieKeyTest, NoGenerationWithoutAPlaceToSetIt) {
  Request r("/");
  EXPECT_FALSE(run(*testing::plugin("cookie", "lb", 60s), ctxFor(r, nullptr)).ok);
}

TEST(CookieKeyTest, SecondGeneratingPolicyDoesNotOverwriteTheFirst) {
  Request r("/");
  GeneratedCookie out;
  auto first = testing::plugin("cookie", "first", 60s);    // out.name points into it
  auto second = testing::plugin("cookie", "second", 60s);
  ASSERT_TRUE(run(*first, ctxFor(r, &out)).ok);
  std::string value(out.value, out.value_len);
  EXPECT_FALSE(run(*second, ctxFor(r, &out)).ok);
  EXPECT_EQ(out.name, "first");
  EXPECT_EQ(std::string(out.value, out.value_len), value);
}

}  // namespace
}  // namespace lb
