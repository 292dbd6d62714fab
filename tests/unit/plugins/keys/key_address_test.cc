// source_ip and five_tuple key plugins on crafted socket addresses; expected hashes are XXH64
// of the expected bytes, written out by hand.
#include <gtest/gtest.h>

#include "plugins/keys/key_plugins.h"
#include "tests/support/key_test_util.h"

namespace lb {
namespace {

using testing::run;
using testing::sa;
using testing::xxh;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

TEST(SourceIpKeyTest, IPv4IsItsFourAddressBytes) {
  auto peer = testing::v4("10.1.2.3", 5555);
  KeyContext ctx;
  ctx.peer = sa(peer);
  auto e = run(*testing::plugin("source_ip"), ctx);
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.hash, xxh(bytes({10, 1, 2, 3})));
}

TEST(SourceIpKeyTest, PortDoesNotMatter) {
  auto a = testing::v4("10.1.2.3", 1000), b = testing::v4("10.1.2.3", 2000);
  KeyContext ca, cb;
  ca.peer = sa(a);
  cb.peer = sa(b);
  auto p = testing::plugin("source_ip");
  EXPECT_EQ(run(*p, ca).hash, run(*p, cb).hash);
}

TEST(SourceIpKeyTest, IPv6IsItsSixteenBytes) {
  auto peer = testing::v6("2001:db8::1", 5555);
  KeyContext ctx;
  ctx.peer = sa(peer);
  EXPECT_EQ(run(*testing::plugin("source_ip"), ctx).hash,
            xxh(bytes({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})));
}

TEST(SourceIpKeyTest, V4MappedV6HashesAsV4) {
  auto mapped = testing::v6("::ffff:10.1.2.3", 1), plain = testing::v4("10.1.2.3", 2);
  KeyContext cm, cp;
  cm.peer = sa(mapped);
  cp.peer = sa(plain);
  auto p = testing::plugin("source_ip");
  EXPECT_EQ(run(*p, cm).hash, run(*p, cp).hash);
}

TEST(SourceIpKeyTest, WorksWithoutARequest) {
  // tcp listeners have no request: the plugin must not need one.
  auto peer = testing::v4("127.0.0.1", 1);
  KeyContext ctx;
  ctx.peer = sa(peer);
  ctx.request = nullptr;
  EXPECT_TRUE(run(*testing::plugin("source_ip"), ctx).ok);
}

TEST(SourceIpKeyTest, NoPeerOrNonIpYieldsNoKey) {
  EXPECT_FALSE(run(*testing::plugin("source_ip"), KeyContext{}).ok);
  sockaddr_storage unix_addr{};
  unix_addr.ss_family = AF_UNIX;
  KeyContext ctx;
  ctx.peer = sa(unix_addr);
  EXPECT_FALSE(run(*testing::plugin("source_ip"), ctx).ok);
}

TEST(FiveTupleKeyTest, FixedLayoutForIPv4) {
  auto peer = testing::v4("10.0.0.1", 0x1234), local = testing::v4("10.0.0.2", 11211);
  KeyContext ctx;
  ctx.peer = sa(peer);
  ctx.local = sa(local);
  std::string want = bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1, 0x12, 0x34,
                            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2,
                            11211 >> 8, 11211 & 0xff, 6});
  ASSERT_EQ(want.size(), kFiveTupleBytes);
  auto e = run(*testing::plugin("five_tuple"), ctx);
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.hash, xxh(want));
}

TEST(FiveTupleKeyTest, FixedLayoutForIPv6) {
  auto peer = testing::v6("::1", 80), local = testing::v6("fe80::2", 443);
  uint8_t out[kFiveTupleBytes];
  ASSERT_TRUE(fiveTupleBytes(sa(peer), sa(local), out));
  std::string want = bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80,
                            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0xbb, 6});
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), sizeof(out)), want);
}

TEST(FiveTupleKeyTest, EachConnectionDiffers) {
  auto local = testing::v4("127.0.0.1", 11311);
  auto p1 = testing::v4("127.0.0.1", 40000), p2 = testing::v4("127.0.0.1", 40001);
  KeyContext c1, c2;
  c1.peer = sa(p1);
  c2.peer = sa(p2);
  c1.local = c2.local = sa(local);
  auto p = testing::plugin("five_tuple");
  EXPECT_NE(run(*p, c1).hash, run(*p, c2).hash);
}

TEST(FiveTupleKeyTest, V4MappedMatchesV4) {
  auto m1 = testing::v6("::ffff:1.2.3.4", 5), m2 = testing::v6("::ffff:5.6.7.8", 6);
  auto p1 = testing::v4("1.2.3.4", 5), p2 = testing::v4("5.6.7.8", 6);
  KeyContext cm, cp;
  cm.peer = sa(m1);
  cm.local = sa(m2);
  cp.peer = sa(p1);
  cp.local = sa(p2);
  auto p = testing::plugin("five_tuple");
  EXPECT_EQ(run(*p, cm).hash, run(*p, cp).hash);
}

TEST(FiveTupleKeyTest, MissingLocalYieldsNoKey) {
  auto peer = testing::v4("10.0.0.1", 1);
  KeyContext ctx;
  ctx.peer = sa(peer);
  EXPECT_FALSE(run(*testing::plugin("five_tuple"), ctx).ok);
}

}  // namespace
}  // namespace lb
