// What the splice tests share (http_splice_test, http_splice_body_test,
// http_splice_chunked_test): bodies no shifted copy of themselves would match, the kernel's
// count of what lb read through read(2), the raw origins those tests write by hand (origins
// that cut a body short or answer with exact bytes) on a loopback listener of their own, and
// the fixture every test starts from: one lb with one worker in front of one origin, and one
// client connected to it.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/metrics_fleet.h"
#include "tests/support/proxy_harness.h"

namespace lb::test {

// n bytes from a xorshift stream: no period a shifted copy would match.
inline std::string noise(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed | 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x >> 56);
  }
  return s;
}

// A field of /proc/PID/io (rchar: bytes read through read(2) and the like, which splice(2)
// does not count), or -1.
inline long long procIo(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string k;
  long long v;
  while (in >> k >> v)
    if (k == field + ":") return v;
  return -1;
}

// A blocking socket listening on 127.0.0.1 at a port the kernel chose (*port), or -1.
inline int listenLoopback(uint16_t* port, int backlog = 16) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// A hand-written origin: accepts one connection at a time on 127.0.0.1 and hands it to
// `serve`, which returns when it is done with it (or when `stop` is set: the destructor sets
// it and waits); the connection is closed after. A class that owns one declares it last, so
// that it stops before the state `serve` uses is gone.
class LoopbackOrigin {
 public:
  using Serve = std::function<void(int conn, const std::atomic<bool>& stop)>;
  explicit LoopbackOrigin(Serve serve) : serve_(std::move(serve)) {
    fd_ = listenLoopback(&port_);
    thread_ = std::thread([this] { run(); });
  }
  LoopbackOrigin(const LoopbackOrigin&) = delete;
  LoopbackOrigin& operator=(const LoopbackOrigin&) = delete;
  ~LoopbackOrigin() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void run() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      serve_(c, stop_);
      ::close(c);
    }
  }

  Serve serve_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// How the fixture's lb is set up: one worker, an admin server, one http listener keyed by the
// x-key header, one backend "a"; the setters change the rest (SpliceLb().idle("1s").noRetries()).
class SpliceLb {
 public:
  SpliceLb& idle(std::string v) {
    idle_ = std::move(v);
    return *this;
  }
  SpliceLb& accessLog(std::string path) {
    access_log_ = std::move(path);
    return *this;
  }
  SpliceLb& noRetries() {
    retries_ = false;
    return *this;
  }
  std::string config(uint16_t origin_port) const {
    return "[lb]\nworkers = 1\naccess_log = \"" + access_log_ + "\"\n"
           "[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
           "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
           "hash = [ { header = \"x-key\" } ]\n"
           "timeouts = { idle = \"" + idle_ + "\" }\n"
           "[clusters.c]\n" + (retries_ ? "" : "retries = 0\n") +
           "backends = [ { name = \"a\", address = \"127.0.0.1:" +
           std::to_string(origin_port) + "\" } ]\n";
  }

 private:
  std::string idle_ = "60s";   // timeouts.idle
  std::string access_log_;     // "" for none
  bool retries_ = true;
};

class SpliceTest : public ::testing::Test {
 protected:
  // lb in front of the origin at origin_port, and c connected to it.
  ::testing::AssertionResult startLb(uint16_t origin_port, const SpliceLb& o = SpliceLb()) {
    std::string why;
    if (!h.startLb(o.config(origin_port), &why))
      return ::testing::AssertionFailure() << "lb did not start: " << why;
    if (!c.connect(h.port())) return ::testing::AssertionFailure() << "no connection to lb";
    return ::testing::AssertionSuccess();
  }
  // An lb-origin "a" first, then the same in front of it.
  ::testing::AssertionResult startWithOrigin(const SpliceLb& o = SpliceLb()) {
    std::string why;
    if (!h.startOrigin("a", &why))
      return ::testing::AssertionFailure() << "lb-origin did not start: " << why;
    return startLb(h.originPort("a"), o);
  }

  // A sample of lb's /metrics: `name` whose label `label` is `value`, or -1.
  double metric(const std::string& name, const std::string& label, const std::string& value) {
    return metricValue(h.adminPort(), name, {{label, value}}).value_or(-1);
  }

  ProxyHarness h;
  TcpClient c;
};

}  // namespace lb::test
