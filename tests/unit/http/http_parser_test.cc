#include "lb/http/parser.h"

#include <gtest/gtest.h>

#include <string>

namespace lb {
namespace {

// Feeds the whole text; returns the result and the bytes consumed.
HttpParser::Result feedAll(HttpParser& p, const std::string& s, size_t from, size_t* consumed) {
  return p.feed(s.data(), s.data() + from, s.size() - from, consumed);
}

TEST(HttpParserTest, PausesRightAfterTheHeadWithHeaderSpansInPlace) {
  std::string s = "GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Key:  v1 \r\n\r\nNEXT";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_EQ(s.substr(c), "NEXT");
  const ParsedHead& h = p.head();
  EXPECT_EQ(h.method.in(s.data()), "GET");
  EXPECT_EQ(h.url.in(s.data()), "/a?b=1");
  ASSERT_EQ(h.header_count, 2u);
  EXPECT_EQ(h.headers[1].name.in(s.data()), "X-Key");
  EXPECT_EQ(h.headers[1].value.in(s.data()), "v1");
}

TEST(HttpParserTest, HeadSplitAcrossReadsKeepsContiguousSpans) {
  std::string s = "GET / HTTP/1.1\r\nHost: example\r\nX-Long-Name: some value\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t pos = 0;
  // One byte at a time: every span must still cover its whole text.
  for (; pos < s.size(); ++pos) {
    size_t c = 0;
    auto r = p.feed(s.data(), s.data() + pos, 1, &c);
    if (r == HttpParser::Result::kHeadComplete) break;
    ASSERT_EQ(r, HttpParser::Result::kNeedMore);
  }
  ASSERT_EQ(pos, s.size() - 1);
  EXPECT_EQ(p.head().headers[1].name.in(s.data()), "X-Long-Name");
  EXPECT_EQ(p.head().headers[1].value.in(s.data()), "some value");
}

TEST(HttpParserTest, BodilessRequestCompletesOnAnEmptyFeedAfterTheHead) {
  std::string s = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_FALSE(p.hasBody());
  p.resumeAfterHead(false);
  size_t c2 = 0;
  EXPECT_EQ(p.feed(s.data(), s.data() + c, 0, &c2), HttpParser::Result::kMessageComplete);
  EXPECT_EQ(c2, 0u);
}

TEST(HttpParserTest, ChunkedBodyPassesThroughWithItsFramingAndStopsAtTheEnd) {
  std::string head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string body = "5\r\nhello\r\n0\r\n\r\n";
  std::string s = head + body + "GET /next HTTP/1.1\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_TRUE(p.chunked());
  EXPECT_TRUE(p.hasBody());
  p.resumeAfterHead(false);
  size_t c2 = 0;
  ASSERT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kMessageComplete);
  EXPECT_EQ(s.substr(c, c2), body);
}

TEST(HttpParserTest, BodySinkGetsTheChunkedBodyWithoutItsFraming) {
  struct Collect : HttpBodySink {
    std::string body;
    void onBody(const char* data, size_t len) noexcept override { body.append(data, len); }
  } sink;
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  HttpParser p(HTTP_REQUEST, &sink);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  p.resumeAfterHead(false);
  size_t c2 = 0;
  EXPECT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kMessageComplete);
  EXPECT_EQ(sink.body, "hello world");
}

// Trailers fed a byte at a time: the sink gets each name and value in pieces that join to
// the fields, with one end per field (an empty value included).
TEST(HttpParserTest, TrailerSinkGetsEachFieldAcrossFeeds) {
  struct Collect : HttpTrailerSink {
    std::string out;
    void onTrailerName(const char* d, size_t n) noexcept override {
      out += "N(" + std::string(d, n) + ")";
    }
    void onTrailerValue(const char* d, size_t n) noexcept override {
      out += "V(" + std::string(d, n) + ")";
    }
    void onTrailerFieldEnd() noexcept override { out += ";"; }
  } sink;
  const std::string s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "2\r\nok\r\n0\r\nGrpc-Status: 0\r\nX-E:\r\n\r\n";
  HttpParser p(HTTP_RESPONSE);
  p.setTrailerSink(&sink);
  size_t i = 0, c = 0;
  HttpParser::Result r = HttpParser::Result::kNeedMore;
  for (; i < s.size() && r == HttpParser::Result::kNeedMore; ++i)
    r = p.feed(s.data(), s.data() + i, 1, &c);
  ASSERT_EQ(r, HttpParser::Result::kHeadComplete);
  p.resumeAfterHead(false);
  for (r = HttpParser::Result::kNeedMore; i < s.size() && r == HttpParser::Result::kNeedMore; ++i)
    r = p.feed(s.data(), s.data() + i, 1, &c);
  ASSERT_EQ(r, HttpParser::Result::kMessageComplete);
  EXPECT_NE(sink.out.find("N(G)N(r)"), std::string::npos) << "one piece a feed: " << sink.out;
  // The pieces of each name and value run together, a '|' at each field's end.
  std::string names, values;
  int ends = 0;
  for (size_t k = 0; k < sink.out.size();) {
    if (sink.out[k] == ';') {
      ++ends;
      names += '|';
      values += '|';
      ++k;
      continue;
    }
    const size_t close = sink.out.find(')', k);
    (sink.out[k] == 'N' ? names : values) += sink.out.substr(k + 2, close - k - 2);
    k = close + 1;
  }
  EXPECT_EQ(names, "Grpc-Status|X-E|");
  EXPECT_EQ(values, "0||");
  EXPECT_EQ(ends, 2);
}

TEST(HttpParserTest, BodySinkNeverGetsAnEmptyPiece) {
  struct Count : HttpBodySink {
    int empty = 0;
    void onBody(const char*, size_t len) noexcept override { empty += len == 0; }
  } sink;
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello";
  HttpParser p(HTTP_REQUEST, &sink);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  p.resumeAfterHead(false);
  size_t c2 = 0;
  ASSERT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kNeedMore);
  // No new bytes, mid-body: llhttp still closes its body span.
  ASSERT_EQ(p.feed(s.data(), s.data() + s.size(), 0, &c2), HttpParser::Result::kNeedMore);
  EXPECT_EQ(sink.empty, 0);
}

TEST(HttpParserTest, ContentLengthWithTransferEncodingIsRejected) {
  std::string s =
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  EXPECT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kError);
  EXPECT_EQ(p.error(), HttpParser::Error::kMalformed);
}

TEST(HttpParserTest, ConflictingDuplicateContentLengthIsRejected) {
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  EXPECT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kError);
}

TEST(HttpParserTest, TransferEncodingNotEndingInChunkedIsRejectedInARequest) {
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  auto r = feedAll(p, s, 0, &c);
  if (r == HttpParser::Result::kHeadComplete) {
    p.resumeAfterHead(false);
    r = feedAll(p, s, c, &c);
  }
  EXPECT_EQ(r, HttpParser::Result::kError);
}

TEST(HttpParserTest, HugeContentLengthIsBodyTooLarge) {
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  EXPECT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kError);
  EXPECT_EQ(p.error(), HttpParser::Error::kBodyTooLarge);
}

TEST(HttpParserTest, ContentLengthOfOneTebibyteIsBodyTooLarge) {
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1099511627776\r\n\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  EXPECT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kError);
  EXPECT_EQ(p.error(), HttpParser::Error::kBodyTooLarge);
}

TEST(HttpParserTest, OversizedChunkIsBodyTooLarge) {
  std::string s = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "10000000000\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  p.resumeAfterHead(false);
  size_t c2 = 0;
  EXPECT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kError);
  EXPECT_EQ(p.error(), HttpParser::Error::kBodyTooLarge);
}

TEST(HttpParserTest, TooManyHeadersIsItsOwnError) {
  std::string s = "GET / HTTP/1.1\r\n";
  for (int i = 0; i <= ParsedHead::kMaxHeaders; ++i) s += "X-" + std::to_string(i) + ": v\r\n";
  s += "\r\n";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  EXPECT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kError);
  EXPECT_EQ(p.error(), HttpParser::Error::kTooManyHeaders);
}

TEST(HttpParserTest, ResponseToHeadSkipsTheBodyItsHeadersAnnounce) {
  std::string s = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
  HttpParser p(HTTP_RESPONSE);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  p.resumeAfterHead(true);
  EXPECT_TRUE(p.keepAliveNow());
  size_t c2 = 0;
  EXPECT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kMessageComplete);
  EXPECT_EQ(c2, 0u);
}

TEST(HttpParserTest, InterimResponseIsFollowedByTheFinalOne) {
  std::string s = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  HttpParser p(HTTP_RESPONSE);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_EQ(p.head().status, 100);
  p.resumeAfterHead(false);
  size_t c2 = 0;
  ASSERT_EQ(p.feed(s.data(), s.data() + c, 0, &c2), HttpParser::Result::kMessageComplete);
  p.nextMessage();
  size_t c3 = 0;
  ASSERT_EQ(feedAll(p, s, c, &c3), HttpParser::Result::kHeadComplete);
  EXPECT_EQ(p.head().status, 200);
}

TEST(HttpParserTest, ResponseWithoutLengthRunsUntilEof) {
  std::string s = "HTTP/1.1 200 OK\r\n\r\nabc";
  HttpParser p(HTTP_RESPONSE);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  p.resumeAfterHead(false);
  EXPECT_TRUE(p.needsEof());
  EXPECT_FALSE(p.keepAliveNow());
  size_t c2 = 0;
  EXPECT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kNeedMore);
  EXPECT_EQ(c2, 3u);
  EXPECT_TRUE(p.finishAtEof());
}

TEST(HttpParserTest, Http10RequestIsNotKeepAliveUnlessAsked) {
  std::string a = "GET / HTTP/1.0\r\n\r\n";
  std::string b = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  HttpParser p(HTTP_REQUEST), q(HTTP_REQUEST);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, a, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_FALSE(p.keepAlive());
  ASSERT_EQ(feedAll(q, b, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_TRUE(q.keepAlive());
}

TEST(HttpParserTest, UpgradeRequestIsFlagged) {
  std::string s = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nraw";
  HttpParser p(HTTP_REQUEST);
  size_t c = 0;
  ASSERT_EQ(feedAll(p, s, 0, &c), HttpParser::Result::kHeadComplete);
  EXPECT_TRUE(p.upgrade());
  p.resumeAfterHead(false);
  size_t c2 = 0;
  EXPECT_EQ(feedAll(p, s, c, &c2), HttpParser::Result::kMessageComplete);
  EXPECT_EQ(c2, 0u);
}

TEST(HttpParserTest, IdempotentMethodsFollowRfc9110) {
  EXPECT_TRUE(isIdempotentMethod(HTTP_GET));
  EXPECT_TRUE(isIdempotentMethod(HTTP_HEAD));
  EXPECT_TRUE(isIdempotentMethod(HTTP_DELETE));
  EXPECT_FALSE(isIdempotentMethod(HTTP_POST));
  EXPECT_FALSE(isIdempotentMethod(HTTP_PATCH));
}

}  // namespace
}  // namespace lb
