// lb/http/message_checks.h: Host syntax (RFC 9110 §7.2, RFC 3986 §3.2.2), the request-target
// forms (RFC 9112 §3.2), Transfer-Encoding lists (RFC 9112 §6.1), reason phrases.
#include "lb/http/message_checks.h"

#include <gtest/gtest.h>

namespace lb {
namespace {

TEST(HttpMessageChecksTest, HostsThatAreAuthorities) {
  for (const char* h : {"", "a", "example.com", "example.com:8080", "EXAMPLE.com:", "10.0.0.1:80",
                        "[::1]", "[::1]:443", "[v1.fe80::a+en1]", "xn--bcher-kva.example",
                        "a%20b", "a_b~c", "a!$&'()*+,;=b"})
    EXPECT_TRUE(isValidHost(h)) << h;
}

TEST(HttpMessageChecksTest, HostsThatAreNot) {
  for (const char* h : {"a b", "a/b", "a?b", "a#b", "user@a", "a:8x", "a:123456", "[::1",
                        "[]", "[::1]x", "::1", "a%2", "a%zz", "a\tb", "a\"b", "a\\b", "a<b"})
    EXPECT_FALSE(isValidHost(h)) << h;
}

TEST(HttpMessageChecksTest, TargetForms) {
  std::string_view authority;
  EXPECT_EQ(classifyTarget("/a?b", false, &authority), TargetForm::kOrigin);
  EXPECT_EQ(classifyTarget("*", false, &authority), TargetForm::kAsterisk);
  EXPECT_EQ(classifyTarget("http://a:80/x?y", false, &authority), TargetForm::kAbsolute);
  EXPECT_EQ(authority, "a:80");
  EXPECT_EQ(classifyTarget("HTTPS://b", false, &authority), TargetForm::kAbsolute);
  EXPECT_EQ(authority, "b");
  EXPECT_EQ(classifyTarget("a:443", true, &authority), TargetForm::kAuthority);
  EXPECT_EQ(classifyTarget("[::1]:443", true, &authority), TargetForm::kAuthority);
  for (const char* t : {"", "a", "a:443", "ftp://a/", "http://", "http:///x", "http://u@a/",
                        "http://a b/"})
    EXPECT_EQ(classifyTarget(t, false, &authority), TargetForm::kInvalid) << t;
  for (const char* t : {"a", "a:", "/a:443", "[::1]", "a b:1"})
    EXPECT_EQ(classifyTarget(t, true, &authority), TargetForm::kInvalid) << "CONNECT " << t;
}

TEST(HttpMessageChecksTest, TransferCodingLists) {
  TransferCodings t;
  ASSERT_TRUE(addTransferCodings("gzip, chunked", &t));
  EXPECT_EQ(t.codings, 2u);
  EXPECT_EQ(t.chunked, 1u);
  EXPECT_TRUE(t.last_is_chunked);
  ASSERT_TRUE(addTransferCodings(" , Chunked ,", &t));   // empty elements are no codings
  EXPECT_EQ(t.codings, 3u);
  EXPECT_EQ(t.chunked, 2u);
  TransferCodings u;
  ASSERT_TRUE(addTransferCodings("chunked", &u));
  ASSERT_TRUE(addTransferCodings("gzip", &u));   // a later line's coding is the final one
  EXPECT_FALSE(u.last_is_chunked);
  TransferCodings e;
  ASSERT_TRUE(addTransferCodings("", &e));
  EXPECT_EQ(e.codings, 0u);
  for (const char* bad : {"chunked;q=1", "\"chunked\"", "chun ked", "chunked\x01"}) {
    TransferCodings v;
    EXPECT_FALSE(addTransferCodings(bad, &v)) << bad;
  }
}

TEST(HttpMessageChecksTest, ReasonPhrases) {
  EXPECT_TRUE(isValidReason(""));
  EXPECT_TRUE(isValidReason("Not Found"));
  EXPECT_TRUE(isValidReason("a\tb \xe9"));
  EXPECT_FALSE(isValidReason("a\x01"));
  EXPECT_FALSE(isValidReason("a\x7f"));
  EXPECT_FALSE(isValidReason(std::string_view("a\0b", 3)));
}

}  // namespace
}  // namespace lb
