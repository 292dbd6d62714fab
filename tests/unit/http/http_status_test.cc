// The one reason-phrase table (lb/http/status.h) and the closing responses built from it.
#include <gtest/gtest.h>

#include <string>

#include "lb/http/parser.h"
#include "lb/http/status.h"

namespace lb {
namespace {

TEST(HttpStatusTest, NamesTheCodesRfc9110Defines) {
  EXPECT_STREQ(reasonPhrase(200), "OK");
  EXPECT_STREQ(reasonPhrase(413), "Content Too Large");
  EXPECT_STREQ(reasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_STREQ(reasonPhrase(504), "Gateway Timeout");
  EXPECT_STREQ(reasonPhrase(599), "Unknown");
}

TEST(HttpStatusTest, ClosingResponseIsOneWholeMessageThatEndsTheConnection) {
  const std::string r = closingResponse(503, "X-Backend: a\r\n");
  EXPECT_EQ(r, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
               "Content-Length: 20\r\nConnection: close\r\nX-Backend: a\r\n\r\n"
               "service unavailable\n");
  HttpParser p(HTTP_RESPONSE);
  size_t consumed = 0;
  ASSERT_EQ(p.feed(r.data(), r.data(), r.size(), &consumed), HttpParser::Result::kHeadComplete);
  EXPECT_FALSE(p.keepAlive());
  EXPECT_EQ(p.contentLength(), std::string("service unavailable\n").size());
}

}  // namespace
}  // namespace lb
