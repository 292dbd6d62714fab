#include "lb/cli/hotkeys/admin_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>

#include "lb/core/address.h"
#include "lb/http/parser.h"

namespace lb {

namespace {

// An admin reply larger than this is not one of lb's (/hotkeys lists at most a few hundred
// keys of at most 200 bytes each).
constexpr size_t kMaxReplyBytes = 16 << 20;

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class BodyCollector final : public HttpBodySink {
 public:
  explicit BodyCollector(std::string* out) : out_(out) {}
  void onBody(const char* data, size_t len) noexcept override {
    // The whole reply is bounded before parsing, so this cannot grow past kMaxReplyBytes.
    out_->append(data, len);
  }

 private:
  std::string* out_;
};

// Milliseconds left before `deadline`, at least 0.
int remainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on fd until the deadline: 0, or an errno value (ETIMEDOUT at the end).
int waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, remainingMs(deadline));
    if (n > 0) return 0;
    if (n == 0) return ETIMEDOUT;
    if (errno != EINTR) return errno;
    if (remainingMs(deadline) == 0) return ETIMEDOUT;
  }
}

// A connected non-blocking socket to the first of `hostport`'s addresses that answers.
int connectTo(const HostPort& hp, Clock::time_point deadline, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (hp.numeric ? AI_NUMERICHOST : 0);
  addrinfo* found = nullptr;
  const std::string port = std::to_string(hp.port);
  if (int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    *error = "cannot resolve '" + hp.host + "': " + gai_strerror(rc);
    return -1;
  }
  std::string last = "no address";
  int result = -1;
  for (addrinfo* a = found; a != nullptr && result < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = strerror(errno);
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (rc == EINPROGRESS) {
      rc = waitFor(fd, POLLOUT, deadline);
      if (rc == 0) {
        socklen_t len = sizeof rc;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &len) != 0) rc = errno;
      }
    }
    if (rc == 0) {
      result = fd;
    } else {
      last = rc == ETIMEDOUT ? "timed out" : strerror(rc);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (result < 0) *error = last;
  return result;
}

bool sendAll(int fd, const std::string& data, Clock::time_point deadline, std::string* error) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (int rc = waitFor(fd, POLLOUT, deadline); rc != 0) {
        *error = rc == ETIMEDOUT ? "timed out sending the request" : strerror(rc);
        return false;
      }
      continue;
    }
    *error = std::string("send: ") + strerror(errno);
    return false;
  }
  return true;
}

// Reads until the peer closes (the request asked for Connection: close) or the deadline.
bool readAll(int fd, std::string* out, Clock::time_point deadline, std::string* error) {
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      if (out->size() > kMaxReplyBytes) {
        *error = "the reply is larger than 16 MiB";
        return false;
      }
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (int rc = waitFor(fd, POLLIN, deadline); rc != 0) {
        *error = rc == ETIMEDOUT ? "timed out waiting for the reply" : strerror(rc);
        return false;
      }
      continue;
    }
    // A reset after a whole reply still leaves a reply to parse.
    if (errno == ECONNRESET && !out->empty()) return true;
    *error = std::string("recv: ") + strerror(errno);
    return false;
  }
}

bool parseReply(const std::string& raw, AdminReply* reply, std::string* error) {
  BodyCollector sink(&reply->body);
  HttpParser parser(HTTP_RESPONSE, &sink);
  size_t consumed = 0;
  HttpParser::Result r = parser.feed(raw.data(), raw.data(), raw.size(), &consumed);
  if (r == HttpParser::Result::kHeadComplete) {
    const ParsedHead& head = parser.head();
    reply->status = head.status;
    for (uint32_t i = 0; i < head.header_count; ++i) {
      const std::string_view name = head.headers[i].name.in(raw.data());
      if (name.size() == 12 && strncasecmp(name.data(), "content-type", 12) == 0)
        reply->content_type = std::string(head.headers[i].value.in(raw.data()));
    }
    parser.resumeAfterHead(false);
    size_t more = 0;
    r = parser.feed(raw.data(), raw.data() + consumed, raw.size() - consumed, &more);
  }
  if (r == HttpParser::Result::kNeedMore && parser.headDone() && parser.finishAtEof())
    r = HttpParser::Result::kMessageComplete;
  if (r == HttpParser::Result::kMessageComplete) return true;
  if (r == HttpParser::Result::kError)
    *error = std::string("not an HTTP reply (") + parser.errorReason() + ")";
  else
    *error = raw.empty() ? "the server closed the connection without a reply"
                         : "the reply ended before its end (" + std::to_string(raw.size()) +
                               " bytes)";
  return false;
}

}  // namespace

std::string percentEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool adminGet(const std::string& hostport, const std::string& target, Duration timeout,
              AdminReply* reply, std::string* error) {
  HostPort hp;
  std::string why;
  if (!parseHostPort(hostport, &hp, &why)) {
    *error = why;
    return false;
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  Fd fd(connectTo(hp, deadline, &why));
  if (fd.get() < 0) {
    *error = "cannot connect to " + hostport + ": " + why;
    return false;
  }
  // Host as the client wrote it: lb's admin server wants exactly one, as RFC 9112 does.
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: " + hostport +
                              "\r\nAccept: application/json\r\nUser-Agent: lb\r\n"
                              "Connection: close\r\n\r\n";
  std::string raw;
  if (!sendAll(fd.get(), request, deadline, &why) || !readAll(fd.get(), &raw, deadline, &why) ||
      !parseReply(raw, reply, &why)) {
    *error = hostport + target + ": " + why;
    return false;
  }
  return true;
}

}  // namespace lb
