// A loopback relay that puts TLS under a plain test client: it accepts plain connections on
// its own port and, for each, opens a TLS connection to 127.0.0.1:target (openssl as the
// client), passing bytes both ways. A half-close from the client becomes a close_notify; lb
// closing its TLS connection becomes a FIN to the client. So tests written for a plain port
// (the HTTP hostile suite) run unchanged against a TLS listener.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace lb::test {

class TlsRelay {
 public:
  explicit TlsRelay(uint16_t target);
  ~TlsRelay();   // stops accepting and joins every connection's thread
  TlsRelay(const TlsRelay&) = delete;
  TlsRelay& operator=(const TlsRelay&) = delete;

  bool ok() const { return port_ != 0; }
  uint16_t port() const { return port_; }

 private:
  void acceptLoop();
  void pump(int plain);

  uint16_t target_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> pumps_;
};

}  // namespace lb::test
