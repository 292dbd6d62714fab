// A backend that accepts and never answers, owned by the test: a listening socket on
// 127.0.0.1 and one thread that accepts, reads whatever lb sends, and says (under a lock,
// with a condition variable) when the first bytes of a TLS handshake record (lb's
// ClientHello: 0x16 0x03) arrived on a connection, and when lb closed one. A test that needs
// lb to be mid-handshake with its backend waits for the first; nothing depends on a frozen
// process or on how fast a tool such as ss sees a socket queue.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace lb::test {

class SilentBackend {
 public:
  SilentBackend() {
    // A port from freePort(), as the fixture's are, not one the kernel picks for a bind to
    // port 0: that could be a port the fixture was handed and lb has not bound yet (an lb
    // whose admin port this acceptor held would run on without its admin, every scrape
    // hanging here). freePort() never hands out a port it or another test process handed
    // out lately.
    for (int attempt = 0; attempt < 8 && listen_ < 0; ++attempt) listen_ = listenOn(freePort());
    if (listen_ < 0 || ::pipe2(wake_, O_CLOEXEC) != 0) return;
    thread_ = std::thread([this] { run(); });
  }
  ~SilentBackend() {
    if (thread_.joinable()) {
      const char x = 'x';
      (void)!::write(wake_[1], &x, 1);
      thread_.join();
    }
    for (int fd : {listen_, wake_[0], wake_[1]})
      if (fd >= 0) ::close(fd);
  }
  SilentBackend(const SilentBackend&) = delete;
  SilentBackend& operator=(const SilentBackend&) = delete;

  bool ok() const { return thread_.joinable(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Waits until at least n connections have sent a TLS handshake record's first bytes;
  // false at the deadline.
  bool waitHellos(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return hellos_ >= n; });
  }
  // Waits until lb has closed at least n connections (EOF or reset); false at the deadline.
  bool waitClosed(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_ >= n; });
  }
  int accepted() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepted_;
  }

 private:
  struct Peer {
    int fd;
    std::string head;   // the first bytes, until the record header is whole
    bool hello = false;
  };

  // A blocking socket listening on 127.0.0.1:port (port_ set), or -1.
  int listenOn(uint16_t port) {
    if (port == 0) return -1;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) {
      ::close(fd);
      return -1;
    }
    port_ = port;
    return fd;
  }

  void run() {
    std::vector<Peer> peers;
    for (;;) {
      std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listen_, POLLIN, 0}};
      for (const Peer& p : peers) fds.push_back({p.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;   // EINTR
      if (fds[0].revents != 0) break;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          peers.push_back({fd, {}});
          std::lock_guard<std::mutex> lock(mu_);
          ++accepted_;
        }
      }
      // Backwards, so that erasing one leaves the indexes of those still to look at.
      for (size_t i = fds.size(); i-- > 2;) {
        if (fds[i].revents == 0) continue;
        Peer& p = peers[i - 2];
        char buf[4096];
        const ssize_t n = ::read(p.fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
          if (p.hello || p.head.size() >= 2) continue;   // read and dropped: no answer ever
          p.head.append(buf, std::min(static_cast<size_t>(n), 2 - p.head.size()));
          if (p.head.size() < 2) continue;
          p.hello = p.head[0] == '\x16' && p.head[1] == '\x03';
          if (p.hello) {
            std::lock_guard<std::mutex> lock(mu_);
            ++hellos_;
            cv_.notify_all();
          }
          continue;
        }
        ::close(p.fd);
        peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(i - 2));
        std::lock_guard<std::mutex> lock(mu_);
        ++closed_;
        cv_.notify_all();
      }
    }
    for (const Peer& p : peers) ::close(p.fd);
  }

  int listen_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  int accepted_ = 0, hellos_ = 0, closed_ = 0;
};

}  // namespace lb::test
