// Blocking loopback sockets with poll() deadlines, and an llhttp response reader.
#include "tests/support/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <strings.h>

namespace lb::test {
namespace {

using Clock = std::chrono::steady_clock;

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

bool equalsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Accumulates one response from llhttp callbacks.
struct ResponseBuilder {
  HttpResponse* r = nullptr;
  std::string field, value;
  bool in_value = false;
  bool complete = false;
  bool head_request = false;

  void flushHeader() {
    if (!field.empty() || in_value) r->headers.emplace_back(std::move(field), std::move(value));
    field.clear();
    value.clear();
    in_value = false;
  }
};

ResponseBuilder* builder(llhttp_t* p) { return static_cast<ResponseBuilder*>(p->data); }

int onHeaderField(llhttp_t* p, const char* at, size_t n) {
  auto* b = builder(p);
  if (b->in_value) b->flushHeader();
  b->field.append(at, n);
  return 0;
}
int onHeaderValue(llhttp_t* p, const char* at, size_t n) {
  auto* b = builder(p);
  b->in_value = true;
  b->value.append(at, n);
  return 0;
}
int onHeadersComplete(llhttp_t* p) {
  auto* b = builder(p);
  b->flushHeader();
  b->r->status = llhttp_get_status_code(p);
  b->r->http_major = llhttp_get_http_major(p);
  b->r->http_minor = llhttp_get_http_minor(p);
  b->r->chunked = (p->flags & F_CHUNKED) != 0;
  // RFC 9112 §6.3: a 304 ends with its head whatever its Content-Length says (llhttp 8.1 would
  // wait for that many bytes, as lb/http/parser.cc knows).
  return b->head_request || b->r->status == 304 ? 1 : 0;
}
int onBody(llhttp_t* p, const char* at, size_t n) {
  builder(p)->r->body.append(at, n);
  return 0;
}
int onMessageComplete(llhttp_t* p) {
  auto* b = builder(p);
  b->complete = true;
  b->r->keep_alive = llhttp_should_keep_alive(p) != 0;
  b->r->upgrade = llhttp_get_upgrade(p) != 0;
  return HPE_PAUSED;   // stop here: what follows belongs to the next response
}

const llhttp_settings_t* responseSettings() {
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_header_field = onHeaderField;
    s.on_header_value = onHeaderValue;
    s.on_headers_complete = onHeadersComplete;
    s.on_body = onBody;
    s.on_message_complete = onMessageComplete;
    return s;
  }();
  return &settings;
}

}  // namespace

TcpClient::~TcpClient() { close(); }

bool TcpClient::connect(uint16_t port, Millis timeout) {
  close();
  eof_ = reset_ = false;
  buf_.clear();
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  int r = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (r != 0 && errno != EINPROGRESS) {
    close();
    return false;
  }
  pollfd p{fd_, POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof(err);
  if (r != 0 && (poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
                 getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)) {
    close();
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

bool TcpClient::send(std::string_view data, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (!data.empty()) {
    if (fd_ < 0) return false;
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, remainingMs(deadline)) <= 0) return false;
      continue;
    }
    if (n < 0 && errno == ECONNRESET) reset_ = true;
    return false;
  }
  return true;
}

void TcpClient::shutdownWrite() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

void TcpClient::close(bool reset) {
  if (fd_ < 0) return;
  if (reset) {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }
  ::close(fd_);
  fd_ = -1;
}

bool TcpClient::readOnce(Millis timeout) {
  if (fd_ < 0 || eof_) return false;
  pollfd p{fd_, POLLIN, 0};
  int pr = poll(&p, 1, static_cast<int>(timeout.count()));
  if (pr <= 0) return false;
  char chunk[65536];
  for (;;) {
    ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buf_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;   // spurious wakeup
    if (n < 0 && errno == ECONNRESET) reset_ = true;
    eof_ = true;
    return false;
  }
}

bool TcpClient::readAtLeast(size_t n, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (buf_.size() < n) {
    if (!readOnce(Millis(remainingMs(deadline)))) return buf_.size() >= n;
  }
  return true;
}

bool TcpClient::readUntil(std::string_view needle, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (buf_.find(needle) == std::string::npos) {
    if (!readOnce(Millis(remainingMs(deadline)))) return buf_.find(needle) != std::string::npos;
  }
  return true;
}

bool TcpClient::waitClosed(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (!eof_) {
    if (!readOnce(Millis(remainingMs(deadline))) && !eof_) return false;
  }
  return true;
}

std::string TcpClient::take(size_t n) {
  n = std::min(n, buf_.size());
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  return out;
}

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (equalsNoCase(k, name)) return v;
  return std::nullopt;
}

size_t HttpResponse::headerCount(std::string_view name) const {
  size_t n = 0;
  for (const auto& h : headers) n += equalsNoCase(h.first, name) ? 1 : 0;
  return n;
}

HttpResponse readHttpResponse(TcpClient& c, bool head_request, Millis timeout) {
  HttpResponse r;
  ResponseBuilder b;
  b.r = &r;
  b.head_request = head_request;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_RESPONSE, responseSettings());
  parser.data = &b;
  auto deadline = Clock::now() + timeout;
  for (;;) {
    std::string& buf = c.buffer();
    if (!buf.empty()) {
      llhttp_errno_t e = llhttp_execute(&parser, buf.data(), buf.size());
      if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
        const char* pos = llhttp_get_error_pos(&parser);
        c.take(static_cast<size_t>(pos - buf.data()));
        if (e == HPE_PAUSED_UPGRADE) r.upgrade = true;
        r.ok = b.complete;
        if (!r.ok) r.error = "paused before the message completed";
        return r;
      }
      if (e != HPE_OK) {
        r.error = std::string("llhttp: ") + llhttp_errno_name(e) + ": " +
                  llhttp_get_error_reason(&parser);
        return r;
      }
      buf.clear();   // all consumed into r
    }
    if (c.closedByPeer()) {
      // Read-until-close framing ends here; anything else is a truncated response.
      llhttp_finish(&parser);
      r.ok = b.complete;
      if (!r.ok) r.error = "connection closed before a complete response";
      return r;
    }
    if (!c.readAtLeast(1, Millis(remainingMs(deadline))) && !c.closedByPeer()) {
      r.error = "timed out waiting for the response";
      return r;
    }
  }
}

HttpResponse httpExchange(uint16_t port, std::string_view request, Millis timeout) {
  TcpClient c;
  HttpResponse r;
  if (!c.connect(port, timeout)) {
    r.error = "connect failed";
    return r;
  }
  if (!c.send(request, timeout)) {
    r.error = "send failed";
    return r;
  }
  return readHttpResponse(c, request.substr(0, 5) == "HEAD ", timeout);
}

std::string httpRequest(std::string_view method, std::string_view target,
                        std::string_view extra_headers, std::string_view body) {
  std::string s;
  s.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  s.append(extra_headers);
  if (!body.empty()) s.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  s.append("\r\n").append(body);
  return s;
}

}  // namespace lb::test
