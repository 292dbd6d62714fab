// KeyContext::text_out: each key plugin tells which bytes it hashed (for /hotkeys), pointing
// into the request where the key is request bytes, formatted into KeyText::scratch where it is
// an address; a plugin that yields no key leaves it alone.
#include <gtest/gtest.h>

#include "plugins/keys/key_chain.h"
#include "plugins/keys/key_plugins.h"
#include "tests/support/key_test_util.h"

namespace lb {
namespace {

using testing::run;
using testing::sa;

std::string textOf(const KeyPlugin& p, KeyContext ctx, bool* ok = nullptr) {
  KeyText text;
  ctx.text_out = &text;
  auto e = run(p, ctx);
  if (ok != nullptr) *ok = e.ok;
  return std::string(text.bytes);
}

TEST(KeyTextTest, RequestKeysPointIntoTheRequest) {
  testing::Request req("/img/a.png?v=2&k=abc",
                       {{"X-Key", "user:1"}, {"Cookie", "sid=s3cr; other=1"}});
  KeyContext ctx;
  ctx.request = &req.view;
  KeyText text;
  ctx.text_out = &text;
  ASSERT_TRUE(run(*testing::plugin("header", "x-key"), ctx).ok);
  EXPECT_EQ(text.bytes, "user:1");
  // A view, not a copy: it points at the header's own bytes.
  EXPECT_EQ(text.bytes.data(), req.headers[0].value.data());
  EXPECT_EQ(textOf(*testing::plugin("cookie", "sid"), ctx), "s3cr");
  EXPECT_EQ(textOf(*testing::plugin("path"), ctx), "/img/a.png");
  EXPECT_EQ(textOf(*testing::plugin("query", "k"), ctx), "abc");
}

TEST(KeyTextTest, NoKeyLeavesTheTextAlone) {
  testing::Request req("/");
  KeyContext ctx;
  ctx.request = &req.view;
  bool ok = true;
  EXPECT_EQ(textOf(*testing::plugin("header", "x-key"), ctx, &ok), "");
  EXPECT_FALSE(ok);
}

TEST(KeyTextTest, AGeneratedCookieShowsItsValue) {
  testing::Request req("/");
  GeneratedCookie cookie;
  KeyContext ctx;
  ctx.request = &req.view;
  ctx.cookie_out = &cookie;
  std::string text = textOf(*testing::plugin("cookie", "sid", Duration{60000}), ctx);
  ASSERT_TRUE(cookie.set);
  EXPECT_EQ(text, std::string(cookie.value, cookie.value_len));
}

TEST(KeyTextTest, AddressesAreFormattedIntoTheScratch) {
  auto peer = testing::v4("10.1.2.3", 5555);
  auto local = testing::v4("10.0.0.1", 80);
  KeyContext ctx;
  ctx.peer = sa(peer);
  ctx.local = sa(local);
  EXPECT_EQ(textOf(*testing::plugin("source_ip"), ctx), "10.1.2.3");
  EXPECT_EQ(textOf(*testing::plugin("five_tuple"), ctx), "10.1.2.3:5555->10.0.0.1:80");
  auto peer6 = testing::v6("2001:db8::1", 443);
  auto local6 = testing::v6("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 65535);
  ctx.peer = sa(peer6);
  ctx.local = sa(local6);
  EXPECT_EQ(textOf(*testing::plugin("source_ip"), ctx), "2001:db8::1");
  EXPECT_EQ(textOf(*testing::plugin("five_tuple"), ctx),
            "[2001:db8::1]:443->[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
  auto mapped = testing::v6("::ffff:10.1.2.3", 1);
  ctx.peer = sa(mapped);
  EXPECT_EQ(textOf(*testing::plugin("source_ip"), ctx), "10.1.2.3");   // as it hashes
}

TEST(KeyTextTest, AChainShowsTheKeyThatWonOrACombinationsFirstPart) {
  testing::Request req("/p", {{"X-Key", "user:1"}});
  std::vector<HashPolicy> policies(2);
  policies[0].kind = "header";
  policies[0].name = "x-missing";
  policies[1].kind = "path";
  auto first = KeyChain::build(policies, "http");
  ASSERT_TRUE(first.ok());
  KeyContext ctx;
  ctx.request = &req.view;
  KeyText text;
  ctx.text_out = &text;
  uint64_t h;
  ASSERT_TRUE(first.value().compute(ctx, KeyHash::kXxh64, &h));
  EXPECT_EQ(text.bytes, "/p");
  policies[0].name = "x-key";
  auto combined = KeyChain::build(policies, "http", "", "hash", KeyChain::Mode::kCombine);
  ASSERT_TRUE(combined.ok());
  ASSERT_TRUE(combined.value().compute(ctx, KeyHash::kXxh64, &h));
  EXPECT_EQ(text.bytes, "user:1");
}

}  // namespace
}  // namespace lb
