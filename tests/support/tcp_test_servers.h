// Blocking-socket peers for the TCP session tests: a backend server whose per-connection
// behaviour is a function run on its own thread, and a client with a deadline on every read.
// 127.0.0.1 only, ports chosen by the kernel.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lb::test {

inline int listenLoopback(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// A loopback port with nothing listening: connecting to it is refused.
inline uint16_t closedPort() {
  uint16_t port = 0;
  int fd = listenLoopback(&port);
  close(fd);
  return port;
}

// A loopback port where a connect is neither accepted nor refused: a listener with a backlog
// of 0 whose one queue slot a connection already holds, so the kernel drops every further SYN
// (Linux drops SYNs to a listener whose accept queue is full) and a connect waits until its
// own timeout.
class SilentPort {
 public:
  SilentPort() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listen_fd_, 0) != 0)
      return;
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    filler_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ::connect(filler_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  ~SilentPort() {
    if (filler_fd_ >= 0) close(filler_fd_);
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  SilentPort(const SilentPort&) = delete;
  SilentPort& operator=(const SilentPort&) = delete;
  uint16_t port() const { return port_; }

  // True when a connect to the port is still pending after `wait` (the kernel drops SYNs).
  bool swallowsConnects(std::chrono::milliseconds wait) const {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    pollfd p{fd, POLLOUT, 0};
    bool pending = poll(&p, 1, static_cast<int>(wait.count())) == 0;
    close(fd);
    return pending;
  }

 private:
  int listen_fd_ = -1;
  int filler_fd_ = -1;
  uint16_t port_ = 0;
};

class BlockingServer {
 public:
  using Handler = std::function<void(int fd)>;

  explicit BlockingServer(Handler h) : handler_(std::move(h)) {
    fd_ = listenLoopback(&port_);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~BlockingServer() {
    stopping_ = true;
    shutdown(fd_, SHUT_RDWR);   // wakes accept()
    acceptor_.join();
    close(fd_);
    std::lock_guard<std::mutex> g(mu_);
    for (int c : conns_) shutdown(c, SHUT_RDWR);   // wakes handlers blocked in read()
    for (auto& t : threads_) t.join();
    for (int c : conns_) close(c);
  }
  uint16_t port() const { return port_; }

  // A handler that answers every read with reply(what the read brought), without parsing
  // it: a scripted backend (a fake Redis or memcached sending what a real one never would).
  static Handler answering(std::function<std::string(const std::string&)> reply) {
    return [reply = std::move(reply)](int fd) {
      char buf[65536];
      for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) return;
        if (!writeAll(fd, reply(std::string(buf, static_cast<size_t>(n))))) return;
      }
    };
  }
  static Handler answering(std::string reply) {
    return answering([reply = std::move(reply)](const std::string&) { return reply; });
  }

  static void echo(int fd) {
    char buf[16384];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return;
      if (!writeAll(fd, std::string(buf, static_cast<size_t>(n)))) return;
    }
  }
  static std::string readToEof(int fd) {
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  static bool writeAll(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  void acceptLoop() {
    for (;;) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (stopping_) return;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::lock_guard<std::mutex> g(mu_);
      conns_.push_back(c);
      threads_.emplace_back([this, c] {
        handler_(c);
        shutdown(c, SHUT_WR);   // the reply is complete: FIN
      });
    }
  }

  Handler handler_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> threads_;
};

class Client {
 public:
  ~Client() { close(); }
  bool connect(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  bool send(const std::string& s) { return BlockingServer::writeAll(fd_, s); }
  void shutdownWrite() { shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Exactly n bytes, or what arrived before EOF or the deadline.
  std::string readExactly(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out.size() < n && readSome(&out, deadline) > 0) {
    }
    return out;
  }
  // Everything until EOF (or the deadline).
  std::string readToEof(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (readSome(&out, deadline) > 0) {
    }
    return out;
  }
  // True when the peer closed (EOF or reset) before the deadline.
  bool waitClosed(std::chrono::milliseconds timeout) {
    std::string sink;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int r = readSome(&sink, deadline);
      if (r == 0) return true;
      if (r < 0) return r == -1;
      sink.clear();
    }
  }
  // Sends zeros without blocking until the send buffer stays full for `stall` or `limit`
  // bytes went out; returns how many were sent.
  size_t sendUntilBlocked(size_t limit, std::chrono::milliseconds stall) {
    std::string chunk(65536, '\0');
    size_t sent = 0;
    while (sent < limit) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(stall.count() / 10 + 1)) <= 0) {
        // Blocked once; make sure it stays blocked (lb really stopped reading).
        if (poll(&p, 1, static_cast<int>(stall.count())) <= 0) break;
      }
      ssize_t n = ::send(fd_, chunk.data(), std::min(chunk.size(), limit - sent),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN) break;
    }
    return sent;
  }

 private:
  // >0 bytes read, 0 EOF, -1 reset/error, -2 deadline.
  int readSome(std::string* out, std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -2;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return -2;
    char buf[65536];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n < 0) return -1;
    out->append(buf, static_cast<size_t>(n));
    return static_cast<int>(n);
  }
  int fd_ = -1;
};

}  // namespace lb::test
