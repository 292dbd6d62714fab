// Responses a backend should never send, through a real lb from a raw origin that answers with
// exactly the given bytes: a malformed or ambiguous response is a 502 while the client has no
// head yet (it is cut short once it has one), and lb never reuses that upstream connection. And
// the responses llhttp 8.1 alone would get wrong: a 304 that carries its representation's
// Content-Length, a Connection header that names Content-Length.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/proxy_harness.h"
#include "tests/support/recording_origin.h"

namespace lb::test {
namespace {

using namespace std::string_literals;

constexpr int kCut = -1;   // the client gets a head, then the connection ends

struct BadResponse {
  const char* name;
  std::string raw;
  int status;   // what the client reads: 502, or kCut
};

std::ostream& operator<<(std::ostream& os, const BadResponse& b) { return os << b.name; }

const std::vector<BadResponse>& badResponses() {
  static const std::vector<BadResponse> all = {
      {"ContentLengthAndTransferEncoding",
       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 502},
      {"TwoContentLengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
       502},
      {"ObsFold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok", 502},
      {"ObsFoldOfWhitespace", "HTTP/1.1 200 OK\r\nX-A: a\r\n \r\nContent-Length: 2\r\n\r\nok", 502},
      {"BareCr", "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok", 502},
      {"BareLf", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 502},
      {"SpaceBeforeColon", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", 502},
      {"NulInValue", "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\nok"s, 502},
      {"ControlInReason", "HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nok", 502},
      {"StatusOfFourDigits", "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"StatusOfTwoDigits", "HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"Status099", "HTTP/1.1 099 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"Status999", "HTTP/1.1 999 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"TwoSpacesBeforeStatus", "HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"Version20", "HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"Version12", "HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok", 502},
      {"NotHttp", "SSH-2.0-OpenSSH_9.2\r\n", 502},
      {"ChunkedInHttp10", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 502},
      {"ChunkedTwice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
       502},
      {"ChunkedNotLast", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nok", 502},
      {"EmptyTransferEncoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\nok", 502},
      {"NoContentWithALength", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", 502},
      {"ContinueWithALength", "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nhello", 502},
      {"BadChunkAfterTheHead",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n", kCut},
      {"ObsFoldInTrailers",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: a\r\n b\r\n\r\n",
       kCut},
  };
  return all;
}

class HttpResponseStrictTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    origin_ = new RecordingOrigin();
    ASSERT_TRUE(origin_->ok());
    lb_ = new ProxyHarness();
    std::string why;
    ASSERT_TRUE(lb_->startLb("[lb]\nworkers = 1\naccess_log = \"\"\n"
                             "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                             "timeouts = { connect = \"1s\", header = \"1s\", idle = \"2s\" }\n"
                             "[clusters.c]\nretries = 0\nbackends = [ { name = \"rec\", "
                             "address = \"" + origin_->address() + "\" } ]\n",
                             &why))
        << why;
  }
  static void TearDownTestSuite() {
    delete lb_;
    lb_ = nullptr;
    delete origin_;
    origin_ = nullptr;
  }
  void TearDown() override {
    if (origin_ != nullptr) origin_->setResponse(RecordingOrigin::kOk);
  }

  static RecordingOrigin* origin_;
  static ProxyHarness* lb_;
};

RecordingOrigin* HttpResponseStrictTest::origin_ = nullptr;
ProxyHarness* HttpResponseStrictTest::lb_ = nullptr;

class HttpBadResponseTest : public HttpResponseStrictTest,
                            public ::testing::WithParamInterface<BadResponse> {};

TEST_P(HttpBadResponseTest, Is502OrCutAndTheUpstreamConnectionIsClosed) {
  const BadResponse& b = GetParam();
  origin_->setResponse(b.raw);
  TcpClient c;
  ASSERT_TRUE(c.connect(lb_->port()));
  ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto r = readHttpResponse(c, false, 4s);
  if (b.status == kCut) {
    EXPECT_FALSE(r.ok) << "a response cut short must not look complete: " << r.status;
  } else {
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, b.status);
    EXPECT_EQ(r.header("connection").value_or(""), "close");
  }
  EXPECT_TRUE(c.waitClosed(3s));
  // The backend's connection carried a bad message: lb closes it rather than pool it.
  size_t conns = origin_->connections();
  ASSERT_GT(conns, 0u);
  EXPECT_TRUE(origin_->waitPeerClosed(conns - 1, 3s)) << "lb kept the upstream connection";
  // And the next request gets a fresh one that works.
  origin_->setResponse(RecordingOrigin::kOk);
  auto next = httpExchange(lb_->port(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 4s);
  ASSERT_TRUE(next.ok) << next.error;
  EXPECT_EQ(next.status, 200);
  EXPECT_GT(origin_->connections(), conns);
}

INSTANTIATE_TEST_SUITE_P(Responses, HttpBadResponseTest, ::testing::ValuesIn(badResponses()),
                         [](const ::testing::TestParamInfo<BadResponse>& info) {
                           return std::string(info.param.name);
                         });

TEST_F(HttpResponseStrictTest, NotModifiedWithItsRepresentationLengthHasNoBody) {
  // RFC 9110 §8.6: a 304 may carry the Content-Length the 200 would have had; it still ends
  // with its head. llhttp 8.1 alone would wait for those bytes.
  origin_->setResponse("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nETag: \"x\"\r\n\r\n");
  TcpClient c;
  ASSERT_TRUE(c.connect(lb_->port()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"x\"\r\n\r\n"));
    auto r = readHttpResponse(c, false, 3s);
    ASSERT_TRUE(r.ok) << "request " << i << ": " << r.error;
    EXPECT_EQ(r.status, 304);
    EXPECT_EQ(r.header("content-length").value_or(""), "5");
  }
}

TEST_F(HttpResponseStrictTest, AConnectionHeaderCannotRemoveTheResponseLength) {
  origin_->setResponse(
      "HTTP/1.1 200 OK\r\nConnection: content-length, x-private\r\nX-Private: 1\r\n"
      "Content-Length: 2\r\n\r\nok");
  TcpClient c;
  ASSERT_TRUE(c.connect(lb_->port()));
  for (int i = 0; i < 2; ++i) {   // keep-alive: the length must be there for the second too
    ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    auto r = readHttpResponse(c, false, 3s);
    ASSERT_TRUE(r.ok) << "response " << i << ": " << r.error;
    EXPECT_EQ(r.header("content-length").value_or(""), "2");
    EXPECT_FALSE(r.header("x-private"));
    EXPECT_EQ(r.body, "ok");
  }
}

TEST_F(HttpResponseStrictTest, BytesAfterACompleteResponseRetireTheUpstreamConnection) {
  origin_->setResponse(
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nevil!");
  auto r = httpExchange(lb_->port(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 3s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, "ok");
  size_t conns = origin_->connections();
  EXPECT_TRUE(origin_->waitPeerClosed(conns - 1, 3s))
      << "an upstream connection with unasked-for bytes must not be pooled";
}

}  // namespace
}  // namespace lb::test
