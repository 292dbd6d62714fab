// Raw-socket clients for integration tests, for what curl cannot do: exact bytes on the wire,
// pipelining, half-written requests, malformed input, upgrades, watching a connection close.
// Blocking sockets on 127.0.0.1 with a deadline on every read. Test-thread only.
//
//   lb::test::TcpClient c;
//   ASSERT_TRUE(c.connect(port));
//   ASSERT_TRUE(c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
//   auto r = lb::test::readHttpResponse(c);
//   ASSERT_TRUE(r) << r.error;
//   EXPECT_EQ(r.status, 200);
//   EXPECT_EQ(r.header("x-backend"), "a");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace lb::test {

class TcpClient {
 public:
  TcpClient() = default;
  ~TcpClient();   // closes the socket
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // Connects to 127.0.0.1:port. False on failure (refused, timeout).
  bool connect(uint16_t port, Millis timeout = 5s);
  // Writes all of data; false on error (peer closed or reset, timeout).
  bool send(std::string_view data, Millis timeout = 5s);
  // shutdown(SHUT_WR): the peer reads EOF, we can still read.
  void shutdownWrite();
  // Closes now. With reset = true, sends RST instead of FIN (SO_LINGER 0).
  void close(bool reset = false);

  // Appends whatever arrives to buffer() until it holds at least n bytes; false at the
  // deadline or at EOF/error first (buffer() keeps what did arrive).
  bool readAtLeast(size_t n, Millis timeout = 5s);
  // Until buffer() contains needle; false at the deadline, EOF or error.
  bool readUntil(std::string_view needle, Millis timeout = 5s);
  // Reads until the peer closes (EOF or reset). True if it closed before the deadline;
  // everything read meanwhile is in buffer().
  bool waitClosed(Millis timeout = 5s);
  // True when the peer closed with RST (ECONNRESET seen) rather than FIN.
  bool sawReset() const { return reset_; }
  // True once EOF or an error was seen.
  bool closedByPeer() const { return eof_; }

  // Bytes received and not yet consumed.
  std::string& buffer() { return buf_; }
  // Removes the first n bytes of buffer() and returns them.
  std::string take(size_t n);
  int fd() const { return fd_; }

 private:
  // One read with the remaining time; false at the deadline, EOF or error.
  bool readOnce(Millis timeout);

  int fd_ = -1;
  bool eof_ = false;
  bool reset_ = false;
  std::string buf_;
};

struct HttpResponse {
  bool ok = false;                 // a complete response was parsed
  std::string error;               // why not, when !ok
  int status = 0;
  int http_major = 1, http_minor = 1;
  std::vector<std::pair<std::string, std::string>> headers;   // in order, as received
  std::string body;                // de-chunked
  bool chunked = false;            // came with Transfer-Encoding: chunked
  bool keep_alive = false;         // llhttp's verdict: the connection may carry another
  bool upgrade = false;            // 101 with Upgrade: bytes after the head are raw

  explicit operator bool() const { return ok; }
  // First header with this name (case-insensitive), or nullopt.
  std::optional<std::string> header(std::string_view name) const;
  // How many headers carry this name (case-insensitive).
  size_t headerCount(std::string_view name) const;
};

// Reads exactly one HTTP/1.x response from c (parsed with llhttp, so Content-Length, chunked
// and read-until-close framing all work). Bytes after the response stay in c.buffer() for
// the next call (pipelining) or for raw reading after a 101. `head_request`: the request was
// HEAD, so the response has no body whatever its headers say. Interim 1xx responses (100
// Continue) are returned as responses of their own: call again for the final one.
HttpResponse readHttpResponse(TcpClient& c, bool head_request = false, Millis timeout = 5s);

// Connects, sends `request` verbatim, reads one response; the connection is then closed.
HttpResponse httpExchange(uint16_t port, std::string_view request, Millis timeout = 5s);

// A simple request with Host and, if body is non-empty, Content-Length:
//   "METHOD target HTTP/1.1\r\nHost: 127.0.0.1\r\n<extra_headers>\r\n<body>"
// extra_headers are complete lines, each ending in "\r\n".
std::string httpRequest(std::string_view method, std::string_view target,
                        std::string_view extra_headers = {}, std::string_view body = {});

}  // namespace lb::test
