// build/lb-origin against real clients: curl for what a stock client does, raw sockets for
// exact bytes (pipelining, 100-continue, upgrade, malformed input, resets). Each test starts
// its own origin on an ephemeral loopback port.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <thread>

#include "tests/support/http_client.h"
#include "tests/support/origin.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = "0123456789abcdef"[i % 16];
  return s;
}

class OriginTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  // Every scenario ends with a clean SIGTERM exit: under SAN=1 that also runs LeakSanitizer
  // over the origin, so a connection object leaked by any scenario fails its test.
  void TearDown() override { stopOrigin(); }

  void stopOrigin() {
    if (origin_ && origin_->running()) {
      EXPECT_EQ(origin_->stop(SIGTERM, 10s), 0) << origin_->output();
    }
  }

  void start(std::vector<std::string> extra) {
    stopOrigin();
    std::vector<std::string> argv = {builtBinary("lb-origin"), "--listen", "127.0.0.1:0",
                                     "--name", "a"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    origin_ = std::make_unique<Process>(argv);
    auto port = origin_->waitForListeningPort();
    ASSERT_TRUE(port) << origin_->output();
    port_ = *port;
  }

  std::string url(std::string_view path) const { return localUrl(port_, path); }

  std::unique_ptr<Process> origin_;
  uint16_t port_ = 0;
};

TEST_F(OriginTest, PrintsTheBoundPortForPortZero) {
  EXPECT_NE(port_, 0);
  EXPECT_NE(origin_->output().find("lb-origin a listening on 127.0.0.1:" + std::to_string(port_)),
            std::string::npos);
}

TEST_F(OriginTest, AnswersWithItsNameInXBackend) {
  auto r = runCommand({"curl", "-sS", "-D", "-", url("/anything")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("HTTP/1.1 200 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("X-Backend: a\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\r\n\r\na\n"), std::string::npos) << r.out;
}

TEST_F(OriginTest, CurlReusesOneConnectionForTwoUrls) {
  auto r = runCommand({"curl", "-sS", url("/first"), url("/stats")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"connections_accepted\":1,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"requests_served\":2}"), std::string::npos) << r.out;
}

TEST_F(OriginTest, EchoesAOneMebibyteBodyWithCurl) {
  std::string body = pattern(1 << 20);
  auto r = runCommand({"curl", "-sS", "-D", "/dev/stderr", "--data-binary", "@-", url("/echo")},
                      10s, body);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), body.size());
  EXPECT_TRUE(r.out == body);
  EXPECT_NE(r.err.find("X-Body-Bytes: 1048576\r\n"), std::string::npos) << r.err;
}

TEST_F(OriginTest, EchoesAChunkedBodyChunked) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("POST /e HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.body, "hello world");
  EXPECT_TRUE(r.keep_alive);
}

TEST_F(OriginTest, BytesStreamsSixtyFourMebibytesWithContentLength) {
  auto r = runCommand({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                       url("/bytes?n=67108864")},
                      60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "200 67108864");
}

TEST_F(OriginTest, BytesContentIsThePattern) {
  auto r = httpExchange(port_, httpRequest("GET", "/bytes?n=200000"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_FALSE(r.chunked);
  EXPECT_EQ(r.header("content-length"), "200000");
  EXPECT_TRUE(r.body == pattern(200000));
}

TEST_F(OriginTest, BytesChunkedAnswersChunked) {
  auto r = httpExchange(port_, httpRequest("GET", "/bytes?n=150000&chunked=1"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_TRUE(r.chunked);
  EXPECT_FALSE(r.header("content-length"));
  EXPECT_TRUE(r.body == pattern(150000));
}

TEST_F(OriginTest, StatusParameterSetsTheStatus) {
  auto r = runCommand({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                       url("/x?status=503")});
  EXPECT_EQ(r.out, "503");
}

TEST_F(OriginTest, StatusHeaderWorksLikeTheParameter) {
  auto r = httpExchange(port_, httpRequest("GET", "/x", "X-Origin-Status: 404\r\n"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 404);
}

TEST_F(OriginTest, NoContentHasNoBodyAndKeepsTheConnection) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("GET", "/?status=204") + httpRequest("GET", "/next")));
  auto r1 = readHttpResponse(c);
  ASSERT_TRUE(r1) << r1.error;
  EXPECT_EQ(r1.status, 204);
  EXPECT_FALSE(r1.header("content-length"));
  auto r2 = readHttpResponse(c);
  ASSERT_TRUE(r2) << r2.error;
  EXPECT_EQ(r2.status, 200);
  EXPECT_EQ(r2.body, "a\n");
}

TEST_F(OriginTest, HeadGetsTheLengthButNoBody) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("HEAD", "/bytes?n=1000") + httpRequest("GET", "/after")));
  auto r1 = readHttpResponse(c, /*head_request=*/true);
  ASSERT_TRUE(r1) << r1.error;
  EXPECT_EQ(r1.header("content-length"), "1000");
  auto r2 = readHttpResponse(c);
  ASSERT_TRUE(r2) << r2.error;
  EXPECT_EQ(r2.body, "a\n");   // no stray body bytes before the second response
}

TEST_F(OriginTest, PipelinedRequestsAreAnsweredInOrderEvenWhenTheFirstIsDelayed) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("GET", "/one?delay_ms=100") +
                     httpRequest("POST", "/two", "", "body-two") +
                     httpRequest("GET", "/bytes?n=70000") + httpRequest("GET", "/four")));
  auto r1 = readHttpResponse(c), r2 = readHttpResponse(c), r3 = readHttpResponse(c),
       r4 = readHttpResponse(c);
  ASSERT_TRUE(r1 && r2 && r3 && r4) << r1.error << r2.error << r3.error << r4.error;
  EXPECT_EQ(r1.header("x-request-number"), "1");
  EXPECT_EQ(r1.body, "a\n");
  EXPECT_EQ(r2.header("x-request-number"), "2");
  EXPECT_EQ(r2.body, "body-two");
  EXPECT_EQ(r3.body.size(), 70000u);
  EXPECT_EQ(r4.header("x-request-number"), "4");
  EXPECT_EQ(r4.header("x-connection-id"), r1.header("x-connection-id"));
}

TEST_F(OriginTest, AThousandPipelinedRequestsComeBackInOrder) {
  std::string batch;
  for (int i = 1; i <= 1000; ++i) batch += httpRequest("GET", "/n?i=" + std::to_string(i));
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(batch));
  for (int i = 1; i <= 1000; ++i) {
    auto r = readHttpResponse(c);
    ASSERT_TRUE(r) << i << ": " << r.error;
    ASSERT_EQ(r.header("x-request-number"), std::to_string(i));
  }
}

TEST_F(OriginTest, ClientAbortMidStreamLeavesTheOriginServing) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=67108864")));
  ASSERT_TRUE(c.readAtLeast(100000));
  c.close(/*reset=*/true);
  // Still serving; the aborted connection is freed (TearDown's clean exit checks for leaks).
  auto r = httpExchange(port_, httpRequest("GET", "/"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.body, "a\n");
}

TEST_F(OriginTest, ClosedConnectionsAreNoLongerActive) {
  {
    TcpClient c;
    ASSERT_TRUE(c.connect(port_));
    ASSERT_TRUE(c.send(httpRequest("GET", "/")));
    ASSERT_TRUE(readHttpResponse(c));
  }
  // The origin frees the connection once it sees the close: wait for it, bounded.
  std::string body;
  for (int i = 0; i < 500; ++i) {
    body = httpExchange(port_, httpRequest("GET", "/stats")).body;
    if (body.find("\"connections_active\":1,") != std::string::npos) break;   // only /stats'
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_NE(body.find("\"connections_active\":1,"), std::string::npos) << body;
}

TEST_F(OriginTest, CloseParameterResetsWithoutAnswering) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("GET", "/?close=1")));
  EXPECT_TRUE(c.waitClosed());
  EXPECT_TRUE(c.sawReset());
  EXPECT_EQ(c.buffer(), "");
}

TEST_F(OriginTest, CloseAfterHeadersTruncatesTheResponse) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("GET", "/?close_after_headers=1")));
  EXPECT_TRUE(c.waitClosed());
  EXPECT_EQ(c.buffer().rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << c.buffer();
  auto r = readHttpResponse(c);
  EXPECT_FALSE(r.ok);   // Content-Length promised a body that never came
}

TEST_F(OriginTest, ExpectContinueGetsOneHundredBeforeTheBody) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  auto interim = readHttpResponse(c);
  ASSERT_TRUE(interim) << interim.error;
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.send("data"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "data");
}

TEST_F(OriginTest, CurlExpectContinueWorks) {
  // curl sends Expect: 100-continue for bodies over 1 MiB and waits for the 100.
  std::string body = pattern((1 << 20) + 1);
  auto r = runCommand({"curl", "-sS", "-w", "\n%{http_code}", "--expect100-timeout", "30",
                       "-H", "Expect: 100-continue", "--data-binary", "@-", url("/up")},
                      10s, body);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, body + "\n200");
}

TEST_F(OriginTest, WebSocketUpgradeEchoesRawBytesBothWays) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\n\r\nearly"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 101);
  EXPECT_EQ(r.header("upgrade"), "websocket");
  ASSERT_TRUE(c.readAtLeast(5));
  EXPECT_EQ(c.take(5), "early");   // bytes sent with the upgrade request are echoed too
  ASSERT_TRUE(c.send("ping\r\n\r\nGET / HTTP/1.1\r\n"));
  ASSERT_TRUE(c.readUntil("HTTP/1.1\r\n"));
  EXPECT_EQ(c.buffer(), "ping\r\n\r\nGET / HTTP/1.1\r\n");   // raw, no longer parsed as HTTP
}

TEST_F(OriginTest, MalformedRequestGets400AndClose) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("GARBAGE\r\n\r\nmore garbage"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.waitClosed());
  // The unread "more garbage" must not turn the close into an RST (lingering close).
  EXPECT_FALSE(c.sawReset());
}

TEST_F(OriginTest, OversizedHeadGets431) {
  std::string big(70000, 'x');
  auto r = httpExchange(port_, httpRequest("GET", "/", "X-Big: " + big + "\r\n"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.status, 431);
}

TEST_F(OriginTest, Http10ClosesUnlessKeepAlive) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send("GET / HTTP/1.0\r\n\r\n"));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_FALSE(r.keep_alive);
  EXPECT_TRUE(c.waitClosed());

  TcpClient k;
  ASSERT_TRUE(k.connect(port_));
  ASSERT_TRUE(k.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto r1 = readHttpResponse(k);
  ASSERT_TRUE(r1) << r1.error;
  EXPECT_EQ(r1.header("connection"), "keep-alive");
  ASSERT_TRUE(k.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto r2 = readHttpResponse(k);
  ASSERT_TRUE(r2) << r2.error;
  EXPECT_EQ(r2.header("x-request-number"), "2");
}

TEST_F(OriginTest, ConnectionCloseRequestClosesAfterTheAnswer) {
  TcpClient c;
  ASSERT_TRUE(c.connect(port_));
  ASSERT_TRUE(c.send(httpRequest("GET", "/", "Connection: close\r\n")));
  auto r = readHttpResponse(c);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.waitClosed());
  EXPECT_FALSE(c.sawReset());
}

TEST_F(OriginTest, EchoesProxyHeadersAndTheWholeHead) {
  auto r = httpExchange(port_, httpRequest("GET", "/headers?q=1",
                                           "X-Forwarded-For: 10.0.0.1\r\nX-Custom: yes\r\n"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.header("x-echo-x-forwarded-for"), "10.0.0.1");
  EXPECT_EQ(r.header("x-echo-host"), "127.0.0.1");
  EXPECT_EQ(r.body, "GET /headers?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "X-Forwarded-For: 10.0.0.1\r\nX-Custom: yes\r\n");
}

TEST_F(OriginTest, SigtermExitsZero) {
  ASSERT_TRUE(httpExchange(port_, httpRequest("GET", "/")));
  TcpClient idle;   // an open keep-alive connection must not hold the exit up
  ASSERT_TRUE(idle.connect(port_));
  EXPECT_EQ(origin_->stop(SIGTERM), 0);
}

TEST_F(OriginTest, SigintExitsZero) { EXPECT_EQ(origin_->stop(SIGINT), 0); }

TEST_F(OriginTest, SeveralWorkersShareOnePortAndTheStats) {
  start({"--workers", "3"});
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(httpExchange(port_, httpRequest("GET", "/")));
  auto r = httpExchange(port_, httpRequest("GET", "/stats"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_NE(r.body.find("\"connections_accepted\":7,"), std::string::npos) << r.body;
  EXPECT_EQ(origin_->stop(SIGTERM), 0);
}

TEST(OriginProcessTest, ReportsItsAddressAndStats) {
  OriginProcess o("b");
  ASSERT_TRUE(o.ok()) << o.output();
  EXPECT_EQ(o.address(), "127.0.0.1:" + std::to_string(o.port()));
  ASSERT_TRUE(httpExchange(o.port(), httpRequest("GET", "/")));
  auto s = o.stats();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->connections_accepted, 2u);
  EXPECT_EQ(s->requests_served, 2u);
  EXPECT_EQ(o.stop(), 0);
}

TEST(OriginCliTest, RefusesABadListenAddress) {
  auto r = runCommand({builtBinary("lb-origin"), "--listen", "nonsense", "--name", "a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad --listen"), std::string::npos) << r.err;
}

TEST(OriginCliTest, RefusesAPortInUse) {
  Process first({builtBinary("lb-origin"), "--listen", "127.0.0.1:0", "--name", "a"});
  auto port = first.waitForListeningPort();
  ASSERT_TRUE(port) << first.output();
  auto r = runCommand({builtBinary("lb-origin"), "--listen",
                       "127.0.0.1:" + std::to_string(*port), "--name", "b"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot listen"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lb::test
