#include "lb/admin/admin_http.h"

#include <llhttp.h>

#include <cstdlib>
#include <cstring>
#include <exception>

#include "lb/core/log.h"

namespace lb {

namespace {

const char* reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

}  // namespace

// One admin client. Loop thread only; frees itself after both handles closed.
class AdminConnection {
 public:
  explicit AdminConnection(AdminHttpServer* server);
  AdminConnection(const AdminConnection&) = delete;
  AdminConnection& operator=(const AdminConnection&) = delete;

  // Takes the pending connection off the server's listener and starts reading. False (and
  // the connection is closing) when accept fails.
  bool start();
  void close();   // idempotent

 private:
  static void onAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
    auto* self = static_cast<AdminConnection*>(h->data);
    buf->base = self->server_->read_buffer_;
    buf->len = sizeof(self->server_->read_buffer_);
  }
  static void onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    static_cast<AdminConnection*>(s->data)->handleRead(n, buf);
  }
  static void onWrite(uv_write_t* req, int status) {
    static_cast<AdminConnection*>(req->data)->handleWrite(status);
  }
  static void onTimeout(uv_timer_t* t) { static_cast<AdminConnection*>(t->data)->close(); }
  static void onClosed(uv_handle_t* h) {
    auto* self = static_cast<AdminConnection*>(h->data);
    if (--self->pending_closes_ == 0) {
      self->server_->forget(self);
      delete self;
    }
  }

  // llhttp callbacks; settings shared by every connection.
  static int onMessageBegin(llhttp_t* p);
  static int onUrl(llhttp_t* p, const char* at, size_t len);
  static int onHeaderBytes(llhttp_t* p, const char*, size_t len);
  static int onMessageComplete(llhttp_t*) { return HPE_PAUSED; }
  static const llhttp_settings_t* settings();

  void handleRead(ssize_t n, const uv_buf_t* buf);
  void handleWrite(int status);
  // Parses `len` bytes; on a complete request keeps the rest in pending_ and answers.
  void feed(const char* data, size_t len);
  void respond(bool parse_error);
  void send(const AdminResponse& r, bool keep_alive, bool head);
  void armTimer();

  AdminHttpServer* server_;
  uv_tcp_t tcp_;            // tcp_.data = this
  uv_timer_t timer_;        // timer_.data = this
  uv_write_t write_;        // write_.data = this
  llhttp_t parser_;
  std::string url_;
  size_t request_bytes_ = 0;
  bool too_large_ = false;
  std::string pending_;     // bytes after the request being answered (pipelining)
  std::string out_head_, out_body_;
  bool writing_ = false;
  bool close_after_write_ = false;
  bool closing_ = false;
  int pending_closes_ = 0;
};

AdminConnection::AdminConnection(AdminHttpServer* server) : server_(server) {
  uv_tcp_init(server->loop_, &tcp_);
  uv_timer_init(server->loop_, &timer_);
  tcp_.data = this;
  timer_.data = this;
  write_.data = this;
  pending_closes_ = 2;
  llhttp_init(&parser_, HTTP_REQUEST, settings());
  parser_.data = this;
}

const llhttp_settings_t* AdminConnection::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t v;
    llhttp_settings_init(&v);
    v.on_message_begin = onMessageBegin;
    v.on_url = onUrl;
    v.on_header_field = onHeaderBytes;
    v.on_header_value = onHeaderBytes;
    v.on_body = onHeaderBytes;
    v.on_message_complete = onMessageComplete;
    return v;
  }();
  return &s;
}

int AdminConnection::onMessageBegin(llhttp_t* p) {
  auto* self = static_cast<AdminConnection*>(p->data);
  self->url_.clear();
  self->request_bytes_ = 0;
  return HPE_OK;
}

int AdminConnection::onUrl(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<AdminConnection*>(p->data);
  if (onHeaderBytes(p, at, len) != HPE_OK) return HPE_USER;
  self->url_.append(at, len);
  return HPE_OK;
}

int AdminConnection::onHeaderBytes(llhttp_t* p, const char*, size_t len) {
  auto* self = static_cast<AdminConnection*>(p->data);
  self->request_bytes_ += len;
  if (self->request_bytes_ > self->server_->limits_.max_request_bytes) {
    self->too_large_ = true;
    return HPE_USER;
  }
  return HPE_OK;
}

bool AdminConnection::start() {
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&server_->listener_),
                reinterpret_cast<uv_stream_t*>(&tcp_)) != 0) {
    close();
    return false;
  }
  if (server_->connections_.size() > server_->limits_.max_connections) {
    LB_DEBUG("admin: connection limit %zu reached, closing", server_->limits_.max_connections);
    close();
    return false;
  }
  armTimer();
  uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), onAlloc, onRead);
  return true;
}

void AdminConnection::armTimer() {
  uv_timer_start(&timer_, onTimeout, server_->limits_.idle_timeout_ms, 0);
}

void AdminConnection::close() {
  if (closing_) return;
  closing_ = true;
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), onClosed);   // cancels a pending write
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
}

void AdminConnection::handleRead(ssize_t n, const uv_buf_t* buf) {
  if (closing_) return;
  if (n < 0) {   // EOF or error: nothing is being written (reading stops while writing)
    close();
    return;
  }
  if (n > 0) feed(buf->base, static_cast<size_t>(n));
}

void AdminConnection::feed(const char* data, size_t len) {
  llhttp_errno_t err = llhttp_execute(&parser_, data, len);
  if (err == HPE_OK) return;   // need more bytes
  if (err == HPE_PAUSED) {
    const char* stop = llhttp_get_error_pos(&parser_);
    size_t used = stop != nullptr ? static_cast<size_t>(stop - data) : len;
    pending_.assign(data + used, len - used);
    respond(false);
    return;
  }
  LB_DEBUG("admin: bad request: %s", llhttp_errno_name(err));
  respond(true);
}

void AdminConnection::respond(bool parse_error) {
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
  if (parse_error) {
    AdminResponse r;
    r.status = too_large_ ? 431 : 400;
    r.body = too_large_ ? "request too large\n" : "bad request\n";
    send(r, false, false);
    return;
  }
  const auto method = static_cast<llhttp_method_t>(llhttp_get_method(&parser_));
  const bool keep_alive = llhttp_should_keep_alive(&parser_) != 0;
  const bool head = method == HTTP_HEAD;
  AdminResponse r;
  if (method != HTTP_GET && !head) {
    r.status = 405;
    r.body = "method not allowed\n";
    r.extra_headers = "Allow: GET, HEAD\r\n";
  } else {
    AdminRequest req;
    req.method = head ? "HEAD" : "GET";
    size_t q = url_.find('?');
    req.path = url_.substr(0, q);
    if (q != std::string::npos) req.query = url_.substr(q + 1);
    try {
      r = server_->handler_(req);
    } catch (const std::exception& e) {
      LB_WARN("admin: %s %s failed: %s", req.method.c_str(), req.path.c_str(), e.what());
      r = AdminResponse{500, "text/plain; charset=utf-8", "internal error\n", ""};
    }
  }
  send(r, keep_alive, head);
}

void AdminConnection::send(const AdminResponse& r, bool keep_alive, bool head) {
  out_head_ = "HTTP/1.1 " + std::to_string(r.status) + " " + reasonPhrase(r.status) +
              "\r\nContent-Type: " + r.content_type +
              "\r\nContent-Length: " + std::to_string(r.body.size()) +
              "\r\nCache-Control: no-store\r\nConnection: " + (keep_alive ? "keep-alive" : "close") +
              "\r\n" + r.extra_headers + "\r\n";
  out_body_ = head ? std::string() : r.body;
  close_after_write_ = !keep_alive;
  uv_buf_t bufs[2] = {uv_buf_init(out_head_.data(), static_cast<unsigned>(out_head_.size())),
                      uv_buf_init(out_body_.data(), static_cast<unsigned>(out_body_.size()))};
  writing_ = true;
  int rc = uv_write(&write_, reinterpret_cast<uv_stream_t*>(&tcp_), bufs, out_body_.empty() ? 1 : 2,
                    onWrite);
  if (rc != 0) {
    writing_ = false;
    close();
  }
}

void AdminConnection::handleWrite(int status) {
  writing_ = false;
  if (closing_ || status < 0) {   // UV_ECANCELED after close(), or the peer went away
    close();
    return;
  }
  out_head_.clear();
  out_body_.clear();
  if (close_after_write_) {
    close();
    return;
  }
  armTimer();
  llhttp_resume(&parser_);
  std::string rest;
  rest.swap(pending_);
  if (!rest.empty()) {
    feed(rest.data(), rest.size());
    if (writing_ || closing_) return;   // answered a pipelined request: reading stays off
  }
  uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), onAlloc, onRead);
}

// ---- the server ----

bool parseListenAddress(const std::string& listen, sockaddr_storage* out) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 >= listen.size()) return false;
  std::string host = listen.substr(0, colon);
  std::string port_text = listen.substr(colon + 1);
  char* end = nullptr;
  long port = strtol(port_text.c_str(), &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return false;
  memset(out, 0, sizeof(*out));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    return uv_ip6_addr(host.substr(1, host.size() - 2).c_str(), static_cast<int>(port),
                       reinterpret_cast<sockaddr_in6*>(out)) == 0;
  return uv_ip4_addr(host.c_str(), static_cast<int>(port), reinterpret_cast<sockaddr_in*>(out)) ==
         0;
}

AdminHttpServer::AdminHttpServer(uv_loop_t* loop, AdminHandler handler,
                                 std::function<void()> on_closed, AdminLimits limits)
    : loop_(loop), handler_(std::move(handler)), on_closed_(std::move(on_closed)),
      limits_(limits) {
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
}

AdminHttpServer* AdminHttpServer::start(uv_loop_t* loop, const std::string& listen,
                                        AdminHandler handler, std::function<void()> on_closed,
                                        std::string* error, AdminLimits limits) {
  sockaddr_storage addr;
  if (!parseListenAddress(listen, &addr)) {
    *error = "admin.listen: cannot parse '" + listen + "' as host:port";
    return nullptr;
  }
  auto* s = new AdminHttpServer(loop, std::move(handler), std::move(on_closed), limits);
  int rc = uv_tcp_bind(&s->listener_, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&s->listener_), 128, onConnection);
  if (rc != 0) {
    *error = "admin.listen: cannot listen on " + listen + ": " + uv_strerror(rc);
    s->on_closed_ = nullptr;   // the caller never saw this server
    s->stop();
    return nullptr;
  }
  sockaddr_storage bound;
  int len = sizeof(bound);
  uv_tcp_getsockname(&s->listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  s->port_ = ntohs(bound.ss_family == AF_INET6
                       ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return s;
}

void AdminHttpServer::onConnection(uv_stream_t* listener, int status) {
  auto* self = static_cast<AdminHttpServer*>(listener->data);
  if (status < 0) {
    LB_WARN("admin: accept failed: %s", uv_strerror(status));
    return;
  }
  if (!self->stopping_) self->accept();
}

void AdminHttpServer::accept() {
  auto* c = new AdminConnection(this);
  connections_.insert(c);
  c->start();   // on failure it closes and forgets itself
}

void AdminHttpServer::stop() {
  if (stopping_) return;
  stopping_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), onListenerClosed);
  // close() only schedules the close callbacks, so iterating while they erase is safe.
  for (AdminConnection* c : connections_) c->close();
}

void AdminHttpServer::onListenerClosed(uv_handle_t* h) {
  auto* self = static_cast<AdminHttpServer*>(h->data);
  self->listener_closed_ = true;
  self->maybeFree();
}

void AdminHttpServer::forget(AdminConnection* c) {
  connections_.erase(c);
  maybeFree();
}

void AdminHttpServer::maybeFree() {
  if (!stopping_ || !listener_closed_ || !connections_.empty()) return;
  auto done = std::move(on_closed_);
  delete this;
  if (done) done();
}

}  // namespace lb
