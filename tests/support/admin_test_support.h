// Test helpers for the admin server: a libuv loop on its own thread (the "main thread" the
// admin code expects; tests/support/loop_thread.h), and a blocking HTTP/1.1 client on a real
// loopback socket with a bounded receive timeout, so a server that never answers fails the
// test instead of hanging.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/support/loop_thread.h"

namespace lb::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;   // names lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// One client connection to 127.0.0.1:port. Every read waits at most 5 s.
class HttpClient {
 public:
  explicit HttpClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
      throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  ~HttpClient() { ::close(fd_); }
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<size_t>(n);
    }
  }

  // Reads one response (Content-Length framed). nullopt when the peer closed first or the
  // read timed out.
  std::optional<HttpReply> read() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    HttpReply r;
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    size_t eol = head.find("\r\n");
    std::string status_line = head.substr(0, eol);
    if (status_line.size() < 12) return std::nullopt;
    r.status = std::stoi(status_line.substr(9, 3));
    while (eol != std::string::npos) {
      size_t next = head.find("\r\n", eol + 2);
      std::string line = head.substr(eol + 2, next == std::string::npos ? next : next - eol - 2);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
        size_t v = line.find_first_not_of(' ', colon + 1);
        r.headers[name] = v == std::string::npos ? "" : line.substr(v);
      }
      eol = next;
    }
    size_t len = std::stoul(r.header("content-length").empty() ? "0"
                                                               : r.header("content-length"));
    if (!head_only_) {
      while (buf_.size() < len)
        if (!fill()) return std::nullopt;
      r.body = buf_.substr(0, len);
      buf_.erase(0, len);
    }
    return r;
  }

  // True when the server closed the connection (EOF) within the read timeout, with nothing
  // more to read.
  bool closedByPeer() {
    char c;
    ssize_t n = recv(fd_, &c, 1, 0);
    return n == 0;
  }

  void expectNoBody() { head_only_ = true; }   // for HEAD: Content-Length without a body

 private:
  bool fill() {
    char tmp[65536];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  std::string buf_;
  bool head_only_ = false;
};

// GET path with Connection: close; nullopt when no full response arrived.
inline std::optional<HttpReply> httpGet(int port, const std::string& path) {
  HttpClient c(port);
  c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  return c.read();
}

}  // namespace lb::testing
