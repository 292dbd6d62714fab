// A TCP relay between lb and a real etcd that can hold back watch requests: every connection
// to gate.port() is relayed byte for byte to etcd, except that while hold(true) is set a
// connection whose request is `POST /v3/watch` waits before anything reaches etcd. With it a
// test puts lb exactly between its Range (answered) and its watch (not yet created), which is
// the one moment a compaction can overtake lb's next revision: etcd then answers the watch
// with compact_revision. cutAll() closes every relayed connection, as a network break would.
// One thread per connection, each polling with a 20 ms timeout so that the destructor stops
// them all quickly. The test thread calls the methods; only the counters are shared.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lb::test {

class WatchGate {
 public:
  explicit WatchGate(uint16_t etcd_port) : etcd_port_(etcd_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listen_fd_, 64) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~WatchGate() {
    stop_ = true;
    release();
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> conns;
    {
      std::lock_guard<std::mutex> l(mu_);   // a waiting relay needs mu_ to see stop_
      conns.swap(conns_);
    }
    for (auto& t : conns) t.join();
    ::close(listen_fd_);
  }
  WatchGate(const WatchGate&) = delete;
  WatchGate& operator=(const WatchGate&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // While held, a new watch request waits (its connection open, nothing sent to etcd).
  void hold() { held_flag_ = true; }
  void release() {
    {
      std::lock_guard<std::mutex> l(mu_);
      held_flag_ = false;
    }
    cv_.notify_all();
  }
  // Watch requests waiting at the gate now.
  int heldWatches() const { return held_; }
  // Watch requests relayed to etcd so far.
  int relayedWatches() const { return relayed_watches_; }
  // Closes every connection relayed so far (those waiting at the gate too).
  void cutAll() { ++cut_; }

 private:
  void acceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> l(mu_);
      conns_.emplace_back([this, fd] { relay(fd); });
    }
  }

  // Reads the client's request head, waits at the gate if it is a held watch, then pumps
  // bytes both ways until either side closes, the test cuts, or the gate stops.
  void relay(int client) {
    const int generation = cut_;
    std::string head;
    char buf[16384];
    while (head.find("\r\n\r\n") == std::string::npos && !stop_ && cut_ == generation) {
      pollfd p{client, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      ssize_t n = read(client, buf, sizeof buf);
      if (n <= 0) {
        ::close(client);
        return;
      }
      head.append(buf, static_cast<size_t>(n));
    }
    const bool watch = head.rfind("POST /v3/watch", 0) == 0;
    if (watch) {
      std::unique_lock<std::mutex> l(mu_);
      ++held_;
      while (held_flag_ && !stop_ && cut_ == generation) cv_.wait_for(l, std::chrono::milliseconds(20));
      --held_;
    }
    int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(etcd_port_);
    if (stop_ || cut_ != generation ||
        connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        !writeAll(server, head.data(), head.size())) {
      ::close(server);
      ::close(client);
      return;
    }
    if (watch) ++relayed_watches_;
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (!stop_ && cut_ == generation) {
      if (poll(p, 2, 20) <= 0) continue;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(p[i].fd, buf, sizeof buf);
        done = n <= 0 || !writeAll(p[1 - i].fd, buf, static_cast<size_t>(n));
      }
      if (done) break;
    }
    ::close(server);
    ::close(client);
  }

  static bool writeAll(int fd, const char* data, size_t n) {
    while (n > 0) {
      ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  uint16_t etcd_port_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> cut_{0};
  std::atomic<int> held_{0};
  std::atomic<int> relayed_watches_{0};
  std::atomic<bool> held_flag_{false};   // a waiter rereads it every 20 ms
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread acceptor_;
  std::vector<std::thread> conns_;
};

}  // namespace lb::test
