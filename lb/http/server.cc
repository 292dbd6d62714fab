#include "lb/http/server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lb/core/address.h"
#include "lb/core/log.h"
#include "lb/core/sys_error.h"

namespace lb {

namespace {

// A bound, listening, non-blocking socket, made with plain syscalls so that a failure leaves
// no uv handle to close; -1 with *error set when it fails. *address receives the bound
// address (the real port for port 0).
int listenSocket(sockaddr_storage* address, bool reuse_port, int backlog, std::string* error) {
  const std::string wanted = formatAddress(reinterpret_cast<const sockaddr*>(address));
  int fd = socket(address->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  socklen_t len = address->ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) ||
      bind(fd, reinterpret_cast<const sockaddr*>(address), len) != 0 ||
      listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(address), &len) != 0) {
    *error = "cannot listen on " + wanted + ": " + strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

HttpServer::HttpServer(uv_loop_t* loop, HttpServerOptions options, HandlerFactory factory,
                       std::function<void()> on_closed)
    : loop_(loop), options_(std::move(options)), factory_(std::move(factory)),
      on_closed_(std::move(on_closed)) {
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
}

HttpServer* HttpServer::start(uv_loop_t* loop, const sockaddr_storage& address,
                              HttpServerOptions options, HandlerFactory factory,
                              std::function<void()> on_closed, std::string* error) {
  sockaddr_storage bound = address;
  int fd = options.fd;
  socklen_t len = sizeof bound;
  if (fd >= 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    *error = "cannot use the inherited socket for " + formatAddress(
        reinterpret_cast<const sockaddr*>(&address)) + ": " + strerror(errno);
    ::close(fd);
    return nullptr;
  }
  if (fd < 0) fd = listenSocket(&bound, options.reuse_port, options.backlog, error);
  if (fd < 0) return nullptr;
  auto* s = new HttpServer(loop, std::move(options), std::move(factory), std::move(on_closed));
  s->bound_ = bound;
  int rc = uv_tcp_open(&s->listener_, fd);
  if (rc != 0) ::close(fd);   // the handle took nothing
  if (rc == 0)
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(&s->listener_), s->options_.backlog,
                   onConnection);
  if (rc != 0) {
    *error = "cannot listen on " + s->address() + ": " + sysErrorText(rc);
    s->on_closed_ = nullptr;   // the caller never saw this server
    s->stop();
    return nullptr;
  }
  return s;
}

int HttpServer::port() const {
  const auto* a = reinterpret_cast<const sockaddr*>(&bound_);
  return ntohs(a->sa_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(a)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(a)->sin_port);
}

std::string HttpServer::address() const {
  return formatAddress(reinterpret_cast<const sockaddr*>(&bound_));
}

int HttpServer::dupListeningSocket() const {
  uv_os_fd_t fd = -1;
  if (stopping_ || uv_is_closing(reinterpret_cast<const uv_handle_t*>(&listener_)) ||
      uv_fileno(reinterpret_cast<const uv_handle_t*>(&listener_), &fd) != 0)
    return -1;
  return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

void HttpServer::onConnection(uv_stream_t* listener, int status) {
  auto* self = static_cast<HttpServer*>(listener->data);
  if (status < 0) {   // EMFILE and friends: the next accept may do better
    LB_WARN("http server %s: accept failed: %s", self->address().c_str(), sysErrorText(status));
    return;
  }
  if (!self->stopping_) self->accept();
}

void HttpServer::accept() {
  auto* c = new HttpServerConn(loop_, options_, this);
  connections_.insert(c);
  if (!c->accept(reinterpret_cast<uv_stream_t*>(&listener_))) return;   // closing itself
  if (options_.max_connections != 0 && connections_.size() > options_.max_connections) {
    LB_DEBUG("http server %s: connection limit %zu reached, closing", address().c_str(),
             options_.max_connections);
    c->close();
    return;
  }
  std::unique_ptr<HttpHandler> handler;
  try {
    handler = factory_(*c);
  } catch (const std::exception& e) {
    LB_WARN("http server %s: %s", address().c_str(), e.what());
  }
  if (handler == nullptr) {
    c->close();
    return;
  }
  c->start(std::move(handler));
}

void HttpServer::stopAccepting() {
  if (stopping_ || uv_is_closing(reinterpret_cast<uv_handle_t*>(&listener_))) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), onListenerClosed);
}

void HttpServer::stop() {
  if (stopping_) return;
  stopping_ = true;
  if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&listener_)))
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), onListenerClosed);
  // close() only schedules the close callbacks, so iterating while they erase is safe.
  for (HttpServerConn* c : connections_) c->close();
  maybeFree();   // stopAccepting() may have closed the listener already
}

void HttpServer::onListenerClosed(uv_handle_t* h) {
  auto* self = static_cast<HttpServer*>(h->data);
  self->listener_closed_ = true;
  self->maybeFree();
}

void HttpServer::connectionClosed(HttpServerConn* c) noexcept {
  connections_.erase(c);
  maybeFree();
}

void HttpServer::maybeFree() {
  if (!stopping_ || !listener_closed_ || !connections_.empty()) return;
  auto done = std::move(on_closed_);
  delete this;
  if (done) done();
}

}  // namespace lb
