#include "tests/support/tls_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lb::test {

TlsRelay::TlsRelay(uint16_t target) : target_(target) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
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

TlsRelay::~TlsRelay() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : pumps_) t.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void TlsRelay::acceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd >= 0) pumps_.emplace_back([this, fd] { pump(fd); });
  }
}

void TlsRelay::pump(int plain) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  const int tls_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(target_);
  SSL* ssl = nullptr;
  // Each client write goes on as its own record at once, as the plain client's would (Nagle
  // would hold the small ones back for the peer's delayed ACK).
  const int one = 1;
  setsockopt(tls_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(plain, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(tls_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, tls_fd);
    SSL_set_tlsext_host_name(ssl, "a.test");
    if (SSL_connect(ssl) != 1) {
      SSL_free(ssl);
      ssl = nullptr;
    } else {
      // From here on a read that finds only a session ticket returns instead of blocking
      // for application data while the client's bytes wait.
      fcntl(tls_fd, F_SETFL, fcntl(tls_fd, F_GETFL) | O_NONBLOCK);
    }
  }
  bool client_open = true;
  char buf[16384];
  // Bounded: a relay connection lives at most 20 s (every case ends in a few).
  for (int rounds = 0; ssl != nullptr && !stop_ && rounds < 2000; ++rounds) {
    pollfd p[2] = {{plain, static_cast<short>(client_open ? POLLIN : 0), 0},
                   {tls_fd, POLLIN, 0}};
    if (SSL_pending(ssl) == 0 && poll(p, 2, 10) <= 0) continue;
    if (client_open && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = recv(plain, buf, sizeof buf, 0);
      if (n > 0) {
        for (int tries = 0; tries < 1000; ++tries) {
          const int w = SSL_write(ssl, buf, static_cast<int>(n));
          if (w > 0 || SSL_get_error(ssl, w) != SSL_ERROR_WANT_WRITE) break;
          pollfd out{tls_fd, POLLOUT, 0};
          poll(&out, 1, 10);
        }
      } else {
        client_open = false;
        SSL_shutdown(ssl);   // the client's half-close, as TLS says it
      }
    }
    if (SSL_pending(ssl) > 0 || (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) {
        if (SSL_get_error(ssl, n) == SSL_ERROR_WANT_READ) continue;   // a ticket, no data
        break;   // lb closed (close_notify, FIN or reset)
      }
      send(plain, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
    }
  }
  shutdown(plain, SHUT_WR);
  // Let the client read the FIN before the close (no reset for unread bytes).
  for (int i = 0; i < 300; ++i) {
    pollfd p{plain, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue;
    if (recv(plain, buf, sizeof buf, 0) <= 0) break;
  }
  if (ssl != nullptr) SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(tls_fd);
  close(plain);
}

}  // namespace lb::test
