// KeyChain: the default (entries are alternatives, the first that yields a key wins; a ttl
// cookie only when none does), Envoy's combination under `combine = true` with its terminal
// semantics, and the ketama invariant (one policy gives that policy's plain hash).
#include "lb/config/config.h"
#include "plugins/keys/key_chain.h"

#include <gtest/gtest.h>

#include "tests/support/key_test_util.h"

namespace lb {
namespace {

using testing::crc;
using testing::Request;
using testing::xxh;

uint64_t rotl1(uint64_t h) { return (h << 1) | (h >> 63); }

HashPolicy policy(std::string kind, std::string name = "", bool terminal = false) {
  HashPolicy p;
  p.kind = std::move(kind);
  p.name = std::move(name);
  p.terminal = terminal;
  return p;
}

KeyChain chainOf(std::vector<HashPolicy> policies, Protocol proto = Protocol::kHttp,
                 KeyChain::Mode mode = KeyChain::Mode::kFirst) {
  auto r = KeyChain::build(policies, protocolName(proto), "", "hash", mode);
  EXPECT_TRUE(r.ok());
  return r.ok() ? std::move(r.value()) : KeyChain{};
}

// `combine = true`: Envoy's combination.
KeyChain combinedOf(std::vector<HashPolicy> policies) {
  return chainOf(std::move(policies), Protocol::kHttp, KeyChain::Mode::kCombine);
}

struct Computed {
  bool ok;
  uint64_t hash;
};
Computed compute(const KeyChain& c, const Request& r, KeyHash kh = KeyHash::kXxh64) {
  KeyContext ctx;
  ctx.request = &r.view;
  Computed out{false, 0};
  out.ok = c.compute(ctx, kh, &out.hash);
  return out;
}

TEST(KeyChainTest, OnePolicyIsPlainCrc32ForKetama) {
  // nginx's `hash $http_x_key consistent` hashes the key text with CRC32 and nothing else.
  auto chain = combinedOf({policy("header", "x-key")});
  Request r("/", {{"X-Key", "user:42"}});
  auto c = compute(chain, r, KeyHash::kCrc32);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.hash, crc("user:42"));
}

TEST(KeyChainTest, OnePolicyIsPlainXxh64) {
  auto chain = chainOf({policy("path")});
  Request r("/a?b");
  EXPECT_EQ(compute(chain, r).hash, xxh("/a"));
}

TEST(KeyChainTest, CombineCombinesInOrderWithRotation) {
  auto chain = combinedOf({policy("header", "x-a"), policy("header", "x-b")});
  Request r("/", {{"X-A", "a"}, {"X-B", "b"}});
  EXPECT_EQ(compute(chain, r).hash, rotl1(xxh("a")) ^ xxh("b"));
}

TEST(KeyChainTest, CombineOrderMatters) {
  auto ab = combinedOf({policy("header", "x-a"), policy("header", "x-b")});
  auto ba = combinedOf({policy("header", "x-b"), policy("header", "x-a")});
  Request r("/", {{"X-A", "a"}, {"X-B", "b"}});
  EXPECT_NE(compute(ab, r).hash, compute(ba, r).hash);
}

TEST(KeyChainTest, CombineIdenticalPoliciesDoNotCancel) {
  // Without the rotation, h ^ h would be 0 for every request.
  auto chain = combinedOf({policy("header", "x-a"), policy("header", "x-a")});
  Request r("/", {{"X-A", "a"}});
  EXPECT_EQ(compute(chain, r).hash, rotl1(xxh("a")) ^ xxh("a"));
  EXPECT_NE(compute(chain, r).hash, 0u);
}

TEST(KeyChainTest, CombineSkipsPoliciesWithoutAKey) {
  auto chain = combinedOf({policy("header", "x-a"), policy("header", "x-b"), policy("path")});
  Request r("/p", {{"X-B", "b"}});
  EXPECT_EQ(compute(chain, r).hash, rotl1(xxh("b")) ^ xxh("/p"));
}

TEST(KeyChainTest, NoKeyAtAll) {
  auto chain = combinedOf({policy("header", "x-a"), policy("query", "q")});
  Request r("/p");
  EXPECT_FALSE(compute(chain, r).ok);
  EXPECT_FALSE(compute(chainOf({}), r).ok);
}

TEST(KeyChainTest, CombineTerminalThatYieldsStops) {
  auto chain = chainOf({policy("header", "x-a", true), policy("header", "x-b")});
  Request r("/", {{"X-A", "a"}, {"X-B", "b"}});
  EXPECT_EQ(compute(chain, r).hash, xxh("a"));
}

TEST(KeyChainTest, CombineTerminalWithoutKeyFallsThrough) {
  auto chain = combinedOf({policy("header", "x-a", true), policy("header", "x-b")});
  Request r("/", {{"X-B", "b"}});
  EXPECT_EQ(compute(chain, r).hash, xxh("b"));
}

TEST(KeyChainTest, CombineTerminalStopsOnAnEarlierHashAsEnvoyDoes) {
  // Envoy: "If true, and there is already a hash computed, ignore rest of the list".
  auto chain = combinedOf({policy("header", "x-a"), policy("header", "x-t", true),
                        policy("header", "x-c")});
  Request r("/", {{"X-A", "a"}, {"X-C", "c"}});
  EXPECT_EQ(compute(chain, r).hash, xxh("a"));
}

TEST(KeyChainTest, CombineTerminalCombinesWhatCameBefore) {
  auto chain = combinedOf({policy("header", "x-a"), policy("header", "x-t", true),
                        policy("header", "x-c")});
  Request r("/", {{"X-A", "a"}, {"X-T", "t"}, {"X-C", "c"}});
  EXPECT_EQ(compute(chain, r).hash, rotl1(xxh("a")) ^ xxh("t"));
}

TEST(KeyChainTest, CookieGenerationFlowsThroughTheChain) {
  HashPolicy cookie = policy("cookie", "lb");
  cookie.ttl = Duration(60000);
  auto chain = chainOf({policy("header", "x-a", true), cookie});
  Request r("/");
  GeneratedCookie out;
  KeyContext ctx;
  ctx.request = &r.view;
  ctx.cookie_out = &out;
  uint64_t h = 0;
  ASSERT_TRUE(chain.compute(ctx, KeyHash::kXxh64, &h));
  ASSERT_TRUE(out.set);
  EXPECT_EQ(h, xxh(std::string(out.value, out.value_len)));
}

HashPolicy cookieWithTtl(std::string name) {
  HashPolicy p = policy("cookie", std::move(name));
  p.ttl = Duration(3600000);
  return p;
}

struct WithCookie {
  bool ok;
  uint64_t hash;
  GeneratedCookie cookie;
};
WithCookie computeWithCookie(const KeyChain& c, const Request& r) {
  WithCookie out{false, 0, {}};
  KeyContext ctx;
  ctx.request = &r.view;
  ctx.cookie_out = &out.cookie;
  out.ok = c.compute(ctx, KeyHash::kXxh64, &out.hash);
  return out;
}

TEST(KeyChainTest, TheFirstEntryThatYieldsIsTheKey) {
  auto chain = chainOf({policy("header", "x-a"), policy("header", "x-b"), policy("path")});
  EXPECT_EQ(compute(chain, Request("/p", {{"X-A", "a"}, {"X-B", "b"}})).hash, xxh("a"));
  EXPECT_EQ(compute(chain, Request("/p", {{"X-B", "b"}})).hash, xxh("b"));
  EXPECT_EQ(compute(chain, Request("/p")).hash, xxh("/p"));
}

TEST(KeyChainTest, TerminalChangesNothingWithoutCombine) {
  auto plain = chainOf({policy("header", "x-a"), policy("header", "x-b")});
  auto terminal = chainOf({policy("header", "x-a"), policy("header", "x-t", true),
                           policy("header", "x-c")});
  Request r("/", {{"X-A", "a"}, {"X-T", "t"}, {"X-C", "c"}});
  EXPECT_EQ(compute(plain, r).hash, xxh("a"));
  EXPECT_EQ(compute(terminal, r).hash, xxh("a"));
}

// The README's example: [header x-cache-key, cookie lb with a ttl].
TEST(KeyChainTest, AHeaderKeyIsNeverMixedWithAGeneratedCookie) {
  auto chain = chainOf({policy("header", "x-cache-key"), cookieWithTtl("lb")});
  Request r("/", {{"X-Cache-Key", "user:42"}});
  for (int client = 0; client < 6; ++client) {   // fresh clients: no cookie yet
    auto c = computeWithCookie(chain, r);
    ASSERT_TRUE(c.ok);
    EXPECT_EQ(c.hash, xxh("user:42"));
    EXPECT_FALSE(c.cookie.set) << "no cookie for a request the header already keys";
  }
}

TEST(KeyChainTest, ACookieIsGeneratedOnlyWhenNoEntryYields) {
  // The cookie entry comes first, yet a header later in the list still wins over generating.
  auto chain = chainOf({cookieWithTtl("lb"), policy("header", "x-cache-key")});
  auto keyed = computeWithCookie(chain, Request("/", {{"X-Cache-Key", "k"}}));
  ASSERT_TRUE(keyed.ok);
  EXPECT_EQ(keyed.hash, xxh("k"));
  EXPECT_FALSE(keyed.cookie.set);
  auto bare = computeWithCookie(chain, Request("/"));
  ASSERT_TRUE(bare.ok);
  ASSERT_TRUE(bare.cookie.set);
  EXPECT_EQ(bare.hash, xxh(std::string(bare.cookie.value, bare.cookie.value_len)));
}

TEST(KeyChainTest, ACookieTheClientCarriesIsAnEntryLikeAnyOther) {
  auto chain = chainOf({policy("header", "x-cache-key"), cookieWithTtl("lb")});
  auto c = computeWithCookie(chain, Request("/", {{"Cookie", "lb=abc"}}));
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.hash, xxh("abc"));
  EXPECT_FALSE(c.cookie.set);
}

TEST(KeyChainTest, NothingYieldsAndNoWhereToSetACookieIsNoKey) {
  auto chain = chainOf({policy("header", "x-cache-key"), cookieWithTtl("lb")});
  EXPECT_FALSE(compute(chain, Request("/")).ok);   // compute() passes no cookie_out
}

TEST(KeyChainTest, CombineMixesAGeneratedCookieIntoTheHeaderAsEnvoyDoes) {
  // What `combine = true` keeps: Envoy walks every policy, and a ttl cookie it reaches
  // without one is generated and mixed in.
  auto chain = combinedOf({policy("header", "x-cache-key"), cookieWithTtl("lb")});
  auto c = computeWithCookie(chain, Request("/", {{"X-Cache-Key", "k"}}));
  ASSERT_TRUE(c.ok);
  ASSERT_TRUE(c.cookie.set);
  EXPECT_EQ(c.hash, rotl1(xxh("k")) ^ xxh(std::string(c.cookie.value, c.cookie.value_len)));
}

TEST(KeyChainTest, AddressPoliciesWorkOnTcp) {
  auto chain = chainOf({policy("source_ip")}, Protocol::kTcp);
  EXPECT_FALSE(chain.needsRequest());
  auto peer = testing::v4("10.0.0.9", 1);
  KeyContext ctx;
  ctx.peer = testing::sa(peer);
  uint64_t h = 0;
  ASSERT_TRUE(chain.compute(ctx, KeyHash::kXxh64, &h));
  EXPECT_EQ(h, xxh(std::string("\x0a\x00\x00\x09", 4)));
}

TEST(KeyChainTest, RejectsL7PoliciesOnTcpAndUnknownKinds) {
  std::vector<HashPolicy> ps = {policy("header", "x"), policy("source_ip"), policy("uri")};
  ps[0].pos = {7, 3};
  auto r = KeyChain::build(ps, "tcp", "lb.toml", "listeners.mc.hash");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 2u);
  EXPECT_EQ(r.errors()[0].format(),
            "lb.toml:7:3: listeners.mc.hash[0]: 'header' needs an HTTP request; this listener "
            "is tcp");
  EXPECT_EQ(r.errors()[1].path, "listeners.mc.hash[2]");
}

TEST(KeyChainTest, NeedsRequestWhenAnyPolicyIsL7) {
  EXPECT_TRUE(chainOf({policy("source_ip"), policy("path")}).needsRequest());
}

}  // namespace
}  // namespace lb
