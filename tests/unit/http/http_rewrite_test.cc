#include "lb/http/rewrite.h"

#include <gtest/gtest.h>

#include <string>

namespace lb {
namespace {

// Parses a head from s (request or response) and keeps s alive for the spans.
struct Parsed {
  explicit Parsed(std::string text, llhttp_type_t type) : s(std::move(text)), p(type) {
    size_t c = 0;
    ok = p.feed(s.data(), s.data(), s.size(), &c) == HttpParser::Result::kHeadComplete;
  }
  std::string s;
  HttpParser p;
  bool ok = false;
};

std::string upstream(const Parsed& r, bool upgrade = false) {
  char out[4096];
  UpstreamRequestOptions opt{"10.1.2.3", upgrade};
  size_t n = writeUpstreamRequest(r.p.head(), r.s.data(), opt, out, sizeof out);
  return std::string(out, n);
}

TEST(HttpRewriteTest, RequestKeepsLineAndHostDropsHopByHopAndAddsForwardedHeaders) {
  Parsed r("GET /x?y HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Drop\r\nKeep-Alive: 5\r\n"
           "X-Drop: 1\r\nTE: trailers\r\nProxy-Connection: x\r\nX-Keep: 2\r\n\r\n",
           HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(upstream(r),
            "GET /x?y HTTP/1.1\r\nHost: h\r\nX-Keep: 2\r\nX-Forwarded-For: 10.1.2.3\r\n"
            "X-Forwarded-Proto: http\r\n\r\n");
}

TEST(HttpRewriteTest, XForwardedForIsAppendedToEveryEarlierHop) {
  Parsed r("GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 1.1.1.1\r\n"
           "X-Forwarded-Proto: https\r\nX-Forwarded-For: 2.2.2.2\r\n\r\n",
           HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(upstream(r),
            "GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 1.1.1.1, 2.2.2.2, 10.1.2.3\r\n"
            "X-Forwarded-Proto: http\r\n\r\n");
}

TEST(HttpRewriteTest, FramingHeadersPassUnchanged) {
  Parsed r("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_NE(upstream(r).find("\r\nTransfer-Encoding: chunked\r\n"), std::string::npos);
}

TEST(HttpRewriteTest, Http10RequestAsksTheBackendForKeepAlive) {
  Parsed r("GET / HTTP/1.0\r\n\r\n", HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(upstream(r),
            "GET / HTTP/1.0\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Proto: http\r\n"
            "Connection: keep-alive\r\n\r\n");
}

TEST(HttpRewriteTest, UpgradeKeepsUpgradeAndConnectionUpgrade) {
  Parsed r("GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
           HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(upstream(r, true),
            "GET /ws HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.1.2.3\r\n"
            "X-Forwarded-Proto: http\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n");
  // Without an upgrade, Upgrade is hop-by-hop like the rest.
  EXPECT_EQ(upstream(r, false).find("Upgrade"), std::string::npos);
}

TEST(HttpRewriteTest, HeadThatDoesNotFitWritesNothing) {
  Parsed r("GET / HTTP/1.1\r\nHost: h\r\n\r\n", HTTP_REQUEST);
  char out[16];
  EXPECT_EQ(writeUpstreamRequest(r.p.head(), r.s.data(), {"1.2.3.4", false}, out, sizeof out),
            0u);
}

std::string downstream(const Parsed& r, const DownstreamResponseOptions& opt) {
  char out[4096];
  size_t n = writeDownstreamResponse(r.p.head(), r.s.data(), opt, out, sizeof out);
  return std::string(out, n);
}

TEST(HttpRewriteTest, ResponseDropsHopByHopAndStatesLbsConnectionDecision) {
  Parsed r("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\nKeep-Alive: 1\r\n"
           "X-Backend: a\r\n\r\n",
           HTTP_RESPONSE);
  ASSERT_TRUE(r.ok);
  DownstreamResponseOptions keep;
  EXPECT_EQ(downstream(r, keep), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Backend: a\r\n\r\n");
  DownstreamResponseOptions close;
  close.keep_alive = false;
  EXPECT_EQ(downstream(r, close),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Backend: a\r\nConnection: close\r\n\r\n");
  DownstreamResponseOptions http10;
  http10.client_http10 = true;
  EXPECT_EQ(downstream(r, http10),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Backend: a\r\n"
            "Connection: keep-alive\r\n\r\n");
}

TEST(HttpRewriteTest, GeneratedCookieIsSetWithTtlPathAndHttpOnly) {
  Parsed r("HTTP/1.1 204 No Content\r\n\r\n", HTTP_RESPONSE);
  ASSERT_TRUE(r.ok);
  GeneratedCookie c;
  c.name = "lb";
  c.ttl = Duration(3600 * 1000);
  memcpy(c.value, "abc123", 6);
  c.value_len = 6;
  c.set = true;
  DownstreamResponseOptions opt;
  opt.cookie = &c;
  EXPECT_EQ(downstream(r, opt),
            "HTTP/1.1 204 No Content\r\nSet-Cookie: lb=abc123; Max-Age=3600; Path=/; HttpOnly\r\n"
            "\r\n");
}

TEST(HttpRewriteTest, ErrorResponsesDeclareTheirExactBodyLength) {
  for (int status : {400, 408, 413, 431, 502, 503, 504, 500}) {
    std::string_view e = errorResponse(status);
    Parsed r(std::string(e), HTTP_RESPONSE);
    ASSERT_TRUE(r.ok) << status;
    EXPECT_EQ(r.p.head().status, status);
    size_t body = e.size() - e.find("\r\n\r\n") - 4;
    EXPECT_EQ(r.p.contentLength(), body) << status;
    EXPECT_FALSE(r.p.keepAlive()) << status;
  }
}

TEST(HttpRewriteTest, UriTooLongAndVersionNotSupportedHaveTheirOwnResponses) {
  for (int status : {414, 505}) {
    std::string_view e = errorResponse(status);
    Parsed r(std::string(e), HTTP_RESPONSE);
    ASSERT_TRUE(r.ok) << status;
    EXPECT_EQ(r.p.head().status, status);
    EXPECT_FALSE(r.p.keepAlive()) << status;
  }
}

TEST(HttpRewriteTest, ConnectionCannotDropTheRequestFramingOrHost) {
  // Dropping Content-Length as "Connection: content-length" asks would turn the body into the
  // next request on the backend's connection.
  Parsed r("POST / HTTP/1.1\r\nHost: h\r\nConnection: content-length, host, x-drop\r\n"
           "X-Drop: 1\r\nContent-Length: 5\r\n\r\n",
           HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(upstream(r),
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-Forwarded-For: 10.1.2.3\r\n"
            "X-Forwarded-Proto: http\r\n\r\n");
  Parsed t("POST / HTTP/1.1\r\nHost: h\r\nConnection: Transfer-Encoding\r\n"
           "Transfer-Encoding: chunked\r\n\r\n",
           HTTP_REQUEST);
  ASSERT_TRUE(t.ok);
  EXPECT_NE(upstream(t).find("\r\nTransfer-Encoding: chunked\r\n"), std::string::npos);
}

// Found by the http fuzz target: past 16 Connection tokens the rest were not read, so a header
// named after them (X-Foo here) went on to the backend although the client marked it
// hop-by-hop. A head lb cannot rewrite faithfully is refused instead.
TEST(HttpRewriteTest, MoreConnectionTokensThanLbTracksRefusesTheHead) {
  std::string many;
  for (int i = 0; i < ConnectionTokens::kMax; ++i)
    many += "Connection: t" + std::to_string(i) + "\r\n";
  Parsed r("GET / HTTP/1.1\r\nHost: h\r\n" + many + "Connection: x-foo\r\nX-Foo: 1\r\n\r\n",
           HTTP_REQUEST);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(upstream(r), "");
  Parsed at_max("GET / HTTP/1.1\r\nHost: h\r\n" + many + "X-Foo: 1\r\n\r\n", HTTP_REQUEST);
  ASSERT_TRUE(at_max.ok);
  EXPECT_NE(upstream(at_max).find("\r\nX-Foo: 1\r\n"), std::string::npos);
  Parsed resp("HTTP/1.1 200 OK\r\n" + many + "Connection: x-foo\r\nX-Foo: 1\r\n"
              "Content-Length: 0\r\n\r\n",
              HTTP_RESPONSE);
  ASSERT_TRUE(resp.ok);
  char out[4096];
  DownstreamResponseOptions opt;
  EXPECT_EQ(writeDownstreamResponse(resp.p.head(), resp.s.data(), opt, out, sizeof out), 0u);
}

TEST(HttpRewriteTest, ConnectionCannotDropTheResponseFraming) {
  Parsed r("HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\n",
           HTTP_RESPONSE);
  ASSERT_TRUE(r.ok);
  char out[1024];
  DownstreamResponseOptions opt;
  size_t n = writeDownstreamResponse(r.p.head(), r.s.data(), opt, out, sizeof out);
  EXPECT_EQ(std::string(out, n), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
}

TEST(HttpRewriteTest, HopByHopNamesAreCaseInsensitive) {
  EXPECT_TRUE(isHopByHop("CONNECTION"));
  EXPECT_TRUE(isHopByHop("te"));
  EXPECT_TRUE(isHopByHop("Proxy-Connection"));
  EXPECT_FALSE(isHopByHop("Transfer-Encoding"));
  EXPECT_FALSE(isHopByHop("Host"));
}

}  // namespace
}  // namespace lb
