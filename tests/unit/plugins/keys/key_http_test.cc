// header, query and path key plugins on crafted requests; expected hashes are XXH64/CRC32 of
// the expected key bytes.
#include <gtest/gtest.h>

#include "plugins/keys/key_plugins.h"
#include "tests/support/key_test_util.h"

namespace lb {
namespace {

using testing::crc;
using testing::Request;
using testing::run;
using testing::xxh;

KeyContext ctxFor(const Request& r) {
  KeyContext ctx;
  ctx.request = &r.view;
  return ctx;
}

TEST(KeyRegistryTest, ListsEveryPluginWithItsLayer) {
  struct { const char* name; bool l7; } want[] = {
      {"header", true}, {"cookie", true}, {"source_ip", false},
      {"five_tuple", false}, {"query", true}, {"path", true}};
  for (const auto& w : want) {
    const KeyPluginInfo* info = findKeyPlugin(w.name);
    ASSERT_NE(info, nullptr) << w.name;
    EXPECT_EQ(info->l7, w.l7) << w.name;
  }
  EXPECT_EQ(allKeyPlugins().size(), 6u);
  EXPECT_EQ(findKeyPlugin("uri"), nullptr);
}

TEST(HeaderKeyTest, HashesTheNamedHeadersValue) {
  Request r("/", {{"Host", "x"}, {"X-Cache-Key", "user:42"}});
  auto p = testing::plugin("header", "x-cache-key");
  auto e = run(*p, ctxFor(r));
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.hash, xxh("user:42"));
}

TEST(HeaderKeyTest, NameIsCaseInsensitiveBothWays) {
  Request r("/", {{"x-CACHE-key", "k"}});
  EXPECT_EQ(run(*testing::plugin("header", "X-Cache-Key"), ctxFor(r)).hash, xxh("k"));
}

TEST(HeaderKeyTest, FirstOccurrenceWins) {
  Request r("/", {{"X-Key", "first"}, {"x-key", "second"}});
  EXPECT_EQ(run(*testing::plugin("header", "x-key"), ctxFor(r)).hash, xxh("first"));
}

TEST(HeaderKeyTest, AbsentHeaderYieldsNoKey) {
  Request r("/", {{"X-Other", "v"}, {"X-Key-Longer", "v"}});
  EXPECT_FALSE(run(*testing::plugin("header", "x-key"), ctxFor(r)).ok);
}

TEST(HeaderKeyTest, SurroundingWhitespaceIsNotPartOfTheKey) {
  Request r("/", {{"X-Key", " \tv 1\t "}});
  EXPECT_EQ(run(*testing::plugin("header", "x-key"), ctxFor(r)).hash, xxh("v 1"));
}

TEST(HeaderKeyTest, PresentButEmptyIsTheEmptyKey) {
  Request r("/", {{"X-Key", ""}});
  auto e = run(*testing::plugin("header", "x-key"), ctxFor(r));
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.hash, xxh(""));
}

TEST(HeaderKeyTest, UsesTheSelectorsKeyHash) {
  Request r("/", {{"X-Key", "abc"}});
  EXPECT_EQ(run(*testing::plugin("header", "x-key"), ctxFor(r), KeyHash::kCrc32).hash,
            crc("abc"));
}

TEST(HeaderKeyTest, NoRequestOnTcpYieldsNoKey) {
  EXPECT_FALSE(run(*testing::plugin("header", "x-key"), KeyContext{}).ok);
}

TEST(QueryKeyTest, HashesTheNamedParameter) {
  Request r("/obj?a=1&user=alice&b=2");
  EXPECT_EQ(run(*testing::plugin("query", "user"), ctxFor(r)).hash, xxh("alice"));
}

TEST(QueryKeyTest, ParameterAtTheEnd) {
  Request r("/obj?a=1&user=bob");
  EXPECT_EQ(run(*testing::plugin("query", "user"), ctxFor(r)).hash, xxh("bob"));
}

TEST(QueryKeyTest, ParameterFirst) {
  EXPECT_EQ(findQueryParam("/?user=c&x=1", "user"), "c");
}

TEST(QueryKeyTest, EmptyValueIsTheEmptyKey) {
  Request r("/obj?user=&a=1");
  auto e = run(*testing::plugin("query", "user"), ctxFor(r));
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.hash, xxh(""));
  EXPECT_EQ(findQueryParam("/obj?user", "user"), "");
}

TEST(QueryKeyTest, RepeatedParameterFirstWins) {
  EXPECT_EQ(findQueryParam("/?user=a&user=b", "user"), "a");
}

TEST(QueryKeyTest, FragmentEndsTheQuery) {
  EXPECT_EQ(findQueryParam("/?user=a#frag", "user"), "a");
  EXPECT_EQ(findQueryParam("/?x=1#user=a", "user"), std::nullopt);
}

TEST(QueryKeyTest, NameMustMatchWholly) {
  EXPECT_EQ(findQueryParam("/?username=a&xuser=b&user_=c", "user"), std::nullopt);
}

TEST(QueryKeyTest, NoQueryOrAbsentParameterYieldsNoKey) {
  Request none("/obj");
  Request other("/obj?a=1&&b");
  EXPECT_FALSE(run(*testing::plugin("query", "user"), ctxFor(none)).ok);
  EXPECT_FALSE(run(*testing::plugin("query", "user"), ctxFor(other)).ok);
  EXPECT_EQ(findQueryParam("/obj?", "user"), std::nullopt);
}

TEST(QueryKeyTest, ValueKeepsLaterEqualsAndIsNotPercentDecoded) {
  EXPECT_EQ(findQueryParam("/?k=x=y", "k"), "x=y");
  EXPECT_EQ(findQueryParam("/?k=a%20b", "k"), "a%20b");
  EXPECT_EQ(findQueryParam("/?k%3D=1", "k="), std::nullopt);
}

TEST(PathKeyTest, HashesThePathWithoutQuery) {
  Request r("/images/cat.jpg?v=2&utm=x");
  EXPECT_EQ(run(*testing::plugin("path"), ctxFor(r)).hash, xxh("/images/cat.jpg"));
}

TEST(PathKeyTest, VariantsOfOneUrlShareTheKey) {
  Request a("/o?v=1"), b("/o?v=2"), c("/o");
  auto p = testing::plugin("path");
  EXPECT_EQ(run(*p, ctxFor(a)).hash, run(*p, ctxFor(b)).hash);
  EXPECT_EQ(run(*p, ctxFor(a)).hash, run(*p, ctxFor(c)).hash);
}

TEST(PathKeyTest, TargetForms) {
  EXPECT_EQ(targetPath("/a/b#frag"), "/a/b");
  EXPECT_EQ(targetPath("http://host:80/a/b?x=1"), "/a/b");
  EXPECT_EQ(targetPath("http://host"), "/");
  EXPECT_EQ(targetPath("http://host?x=1"), "/");
  EXPECT_EQ(targetPath("/redirect/http://x/y"), "/redirect/http://x/y");
  EXPECT_EQ(targetPath("*"), "*");
  EXPECT_EQ(targetPath("/%41"), "/%41");
}

TEST(PathKeyTest, EmptyTargetOrNoRequestYieldsNoKey) {
  Request r("");
  EXPECT_FALSE(run(*testing::plugin("path"), ctxFor(r)).ok);
  EXPECT_FALSE(run(*testing::plugin("path"), KeyContext{}).ok);
}

}  // namespace
}  // namespace lb
