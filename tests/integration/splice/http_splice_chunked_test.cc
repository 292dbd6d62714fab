// Chunked bodies spliced chunk by chunk (lb/proxy/http/http_session_splice.cc): lb parses each
// chunk-size line, the CRLF after the data and the last chunk itself, and a SplicePump moves
// only the data bytes a large chunk's size line announced. Real lb (one worker), a raw origin
// that answers with exactly the given bytes (and records what it receives), and lb-origin's
// chunked /bytes. Checked: bodies arrive byte-identical both ways with most bytes never in
// lb's user space (/proc/PID/io rchar); bad framing right after a spliced chunk is refused as
// when it is copied (the client is cut short, or gets a 400, and the bad bytes go nowhere); an
// origin that closes mid-chunk leaves the client a truncated response, closed; the access
// log's byte counts are exact.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/proxy_harness.h"
#include "tests/support/splice_test_util.h"

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string hex(size_t n) {
  char b[32];
  snprintf(b, sizeof b, "%zx", n);
  return b;
}

// Chunked framing of `data` in chunks of `chunk` bytes, with the last chunk.
std::string chunked(const std::string& data, size_t chunk) {
  std::string out;
  for (size_t at = 0; at < data.size(); at += chunk) {
    size_t n = std::min(chunk, data.size() - at);
    out += hex(n) + "\r\n" + data.substr(at, n) + "\r\n";
  }
  return out + "0\r\n\r\n";
}

long long rchar(pid_t pid) { return procIo(pid, "rchar"); }

// Records every byte received; once `until` has been received (counted from the
// connection's first byte) it sends `response` and then closes (close_after) or goes on
// recording until the peer closes.
class RawOrigin {
 public:
  RawOrigin(std::string response, std::string until, bool close_after)
      : response_(std::move(response)), until_(std::move(until)), close_after_(close_after) {}
  uint16_t port() const { return server_.port(); }
  std::string received() {
    std::lock_guard<std::mutex> g(mu_);
    return received_;
  }
  // Until the peer has closed a connection (everything it sent before is in received()).
  bool waitPeerClosed(std::chrono::milliseconds timeout) {
    for (auto end = Clock::now() + timeout; Clock::now() < end;) {
      if (closed_ > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  void serve(int c, const std::atomic<bool>& stop) {
    std::string conn;
    size_t searched = 0;
    char buf[65536];
    while (!stop) {
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 100) <= 0) continue;
      ssize_t k = ::recv(c, buf, sizeof buf, 0);
      if (k <= 0) {
        ++closed_;
        return;
      }
      conn.append(buf, static_cast<size_t>(k));
      {
        std::lock_guard<std::mutex> g(mu_);
        received_.append(buf, static_cast<size_t>(k));
      }
      // Each `until` seen answers once (a keep-alive connection's next request too).
      const size_t found = conn.find(until_, searched);
      if (found == std::string::npos) continue;
      searched = found + until_.size();
      for (size_t at = 0; at < response_.size();) {
        ssize_t w = ::send(c, response_.data() + at, response_.size() - at, MSG_NOSIGNAL);
        if (w <= 0) break;
        at += static_cast<size_t>(w);
      }
      if (close_after_) return;
    }
  }

  std::string response_, until_;
  bool close_after_;
  std::mutex mu_;
  std::string received_;
  std::atomic<int> closed_{0};
  LoopbackOrigin server_{[this](int c, const std::atomic<bool>& stop) { serve(c, stop); }};
};

class HttpSpliceChunkedTest : public SpliceTest {};

const char kChunkedHead[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

// Everything the client reads until lb closes (or 10 s pass).
std::string readToClose(TcpClient& c) {
  EXPECT_TRUE(c.waitClosed(10s)) << "lb kept the client waiting";
  return c.buffer();
}

TEST_F(HttpSpliceChunkedTest, ADownloadInLargeChunksIsSplicedAndArrivesIdentical) {
  const std::string data = noise(8 << 20, 11);
  const std::string wire = chunked(data, 1 << 20);
  const std::string log = "/tmp/lb-splice-chunked-" + std::to_string(getpid()) + ".log";
  unlink(log.c_str());
  RawOrigin origin(kChunkedHead + wire, "\r\n\r\n", false);
  ASSERT_TRUE(startLb(origin.port(), SpliceLb().accessLog(log).noRetries()));
  const long long r0 = rchar(h.lb().pid());
  ASSERT_TRUE(c.send(httpRequest("GET", "/big", "x-key: k\r\n")));
  // The response as it came, read raw up to the last chunk (5 bytes noise holds by chance
  // with odds of about 2^-40 per position).
  ASSERT_TRUE(c.readUntil("\r\n0\r\n\r\n", 30s)) << c.buffer().size() << " bytes";
  const std::string raw = c.take(c.buffer().size());
  const size_t at = raw.find("\r\n\r\n");
  ASSERT_NE(at, std::string::npos);
  EXPECT_TRUE(raw.substr(at + 4) == wire) << "the body differs (" << raw.size() - at - 4
                                          << " bytes of " << wire.size() << ")";
  // Each 1 MiB chunk brings at most one 16 KiB read (its size line and first bytes) through
  // lb's user space; copied, the 8 MiB would all be read.
  const long long copied = rchar(h.lb().pid()) - r0;
  EXPECT_LT(copied, 1ll << 20) << "lb read " << copied << " bytes through user space";
  // The access log counts every byte the client got: the head lb wrote and the chunked body
  // as it came, framing included.
  std::string line;
  for (auto end = Clock::now() + 5s; Clock::now() < end && line.empty();) {
    std::ifstream in(log);
    std::getline(in, line);
    if (line.empty()) std::this_thread::sleep_for(20ms);
  }
  unlink(log.c_str());
  auto f = line.find(" bytes_out=");
  ASSERT_NE(f, std::string::npos) << line;
  EXPECT_EQ(std::stoull(line.substr(f + 11)), raw.size()) << line;
  // The connection carries on: the chunked message's end was parsed.
  ASSERT_TRUE(c.send(httpRequest("GET", "/big", "x-key: k\r\n")));
  auto again = readHttpResponse(c, false, 30s);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_TRUE(again.body == data);
}

TEST_F(HttpSpliceChunkedTest, LbOriginsChunkedBytesArriveIdentical) {
  ASSERT_TRUE(startWithOrigin(SpliceLb().noRetries()));
  const size_t n = 16 << 20;
  const long long r0 = rchar(h.lb().pid());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.send(httpRequest("GET", "/bytes?n=" + std::to_string(n) + "&chunked=1",
                                   "x-key: k\r\n")));
    auto r = readHttpResponse(c, false, 30s);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.chunked);
    ASSERT_EQ(r.body.size(), n);
    static const char kHex[] = "0123456789abcdef";
    bool same = true;
    for (size_t k = 0; k < n && same; ++k) same = r.body[k] == kHex[k % 16];
    EXPECT_TRUE(same) << "the body differs from /bytes' pattern";
  }
  // 64 KiB chunks: at most 16 KiB of each is read with its size line (about 8 MiB), the rest
  // spliced; copied, all 32 MiB would be read.
  const long long copied = rchar(h.lb().pid()) - r0;
  EXPECT_LT(copied, 12ll << 20) << "lb read " << copied << " of 32 MiB through user space";
}

TEST_F(HttpSpliceChunkedTest, AnUploadInLargeChunksIsSplicedAndReachesTheOriginIdentical) {
  const std::string data = noise(8 << 20, 5);
  const std::string wire = chunked(data, 1 << 20);
  RawOrigin origin("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "\r\n0\r\n\r\n", false);
  ASSERT_TRUE(startLb(origin.port(), SpliceLb().noRetries()));
  const long long r0 = rchar(h.lb().pid());
  const std::string head =
      "POST /up HTTP/1.1\r\nHost: t\r\nx-key: k\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(c.send(head + wire, 20s));
  auto r = readHttpResponse(c, false, 30s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200);
  const std::string got = origin.received();
  const size_t body_at = got.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_TRUE(got.substr(body_at + 4) == wire)
      << "the origin received " << got.size() - body_at - 4 << " body bytes, not the "
      << wire.size() << " sent";
  const long long copied = rchar(h.lb().pid()) - r0;
  EXPECT_LT(copied, 1ll << 20) << "lb read " << copied << " bytes through user space";
}

// After a spliced chunk the framing is what it would be copied: a missing CRLF after the data,
// or a bad size line, ends the response there, and the bad bytes never reach the client.
class HttpSpliceChunkedBadFramingTest : public SpliceTest,
                                        public ::testing::WithParamInterface<const char*> {};

TEST_P(HttpSpliceChunkedBadFramingTest, AfterASplicedChunkCutsTheResponseThere) {
  const std::string data = noise(1 << 20, 3);
  const std::string good = hex(data.size()) + "\r\n" + data;
  RawOrigin origin(kChunkedHead + good + GetParam(), "\r\n\r\n", false);
  ASSERT_TRUE(startLb(origin.port(), SpliceLb().noRetries()));
  ASSERT_TRUE(c.send(httpRequest("GET", "/", "x-key: k\r\n")));
  const std::string raw = readToClose(c);
  const size_t at = raw.find("\r\n\r\n");
  ASSERT_NE(at, std::string::npos) << "no head reached the client";
  const std::string body = raw.substr(at + 4);
  // All of the good chunk (its trailing CRLF at most), none of what follows it.
  EXPECT_EQ(body.substr(0, good.size()) == good, true) << body.size() << " body bytes";
  EXPECT_LE(body.size(), good.size() + 2);
  if (body.size() > good.size()) {
    EXPECT_EQ(body.substr(good.size()), "\r\n");
  }
}

INSTANTIATE_TEST_SUITE_P(Chunked, HttpSpliceChunkedBadFramingTest,
                         ::testing::Values("XX0\r\n\r\n", "\r\nzz\r\nyy\r\n0\r\n\r\n"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "NoCrlfAfterTheData"
                                                               : "ABadSizeLine");
                         });

TEST_F(HttpSpliceChunkedTest, BadFramingAfterASplicedUploadChunkIsA400AndNeverForwarded) {
  const std::string data = noise(1 << 20, 9);
  RawOrigin origin("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "never", false);
  ASSERT_TRUE(startLb(origin.port(), SpliceLb().noRetries()));
  const std::string head =
      "POST /up HTTP/1.1\r\nHost: t\r\nx-key: k\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(c.send(head + hex(data.size()) + "\r\n" + data + "XX0\r\n\r\n", 20s));
  auto r = readHttpResponse(c, false, 10s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 400) << h.lb().output();
  EXPECT_TRUE(c.waitClosed(5s));
  EXPECT_TRUE(origin.waitPeerClosed(5s)) << "lb kept the backend connection of a bad upload";
  const std::string got = origin.received();
  const size_t at = got.find("\r\n\r\n");
  ASSERT_NE(at, std::string::npos) << got.size() << " bytes reached the origin";
  // The head, the size line and the chunk's data (spliced); never the bytes after it.
  EXPECT_TRUE(got.substr(at + 4) == hex(data.size()) + "\r\n" + data)
      << got.size() - at - 4 << " body bytes reached the origin";
}

TEST_F(HttpSpliceChunkedTest, AnOriginThatClosesMidChunkLeavesATruncatedResponseClosed) {
  const std::string data = noise(512 << 10, 13);
  // Announces 1 MiB, sends half of it, closes.
  RawOrigin origin(kChunkedHead + hex(1 << 20) + "\r\n" + data, "\r\n\r\n", true);
  ASSERT_TRUE(startLb(origin.port(), SpliceLb().noRetries()));
  ASSERT_TRUE(c.send(httpRequest("GET", "/", "x-key: k\r\n")));
  const auto t0 = Clock::now();
  const std::string raw = readToClose(c);
  EXPECT_LT(Clock::now() - t0, 5s);
  const size_t at = raw.find("\r\n\r\n");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(raw.substr(at + 4), hex(1 << 20) + "\r\n" + data) << "the client got other bytes";
}

}  // namespace
}  // namespace lb::test
