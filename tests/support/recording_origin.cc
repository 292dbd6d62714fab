#include "tests/support/recording_origin.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <strings.h>

namespace lb::test {
namespace {

bool equalsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The length of the one request at the start of s: 0 while incomplete, -1 when it cannot be
// framed (two lengths, a coding other than a final chunked, a bad chunk line).
long frameRequest(std::string_view s) {
  size_t head_end = s.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return s.size() > (1u << 20) ? -1 : 0;
  long length = -1;
  bool chunked = false;
  size_t line = s.find("\r\n") + 2;   // past the request line
  while (line < head_end + 2) {
    size_t end = s.find("\r\n", line);
    std::string_view l = s.substr(line, end - line);
    line = end + 2;
    size_t colon = l.find(':');
    if (colon == std::string_view::npos) return -1;
    std::string_view name = l.substr(0, colon), value = trim(l.substr(colon + 1));
    if (equalsNoCase(name, "content-length")) {
      if (length >= 0 || value.empty() || value.size() > 15) return -1;
      length = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return -1;
        length = length * 10 + (c - '0');
      }
    } else if (equalsNoCase(name, "transfer-encoding")) {
      size_t comma = value.rfind(',');
      std::string_view last = trim(comma == std::string_view::npos ? value : value.substr(comma + 1));
      if (chunked || !equalsNoCase(last, "chunked")) return -1;
      chunked = true;
    }
  }
  if (chunked && length >= 0) return -1;
  size_t pos = head_end + 4;
  if (!chunked) {
    size_t want = pos + static_cast<size_t>(length < 0 ? 0 : length);
    return s.size() >= want ? static_cast<long>(want) : 0;
  }
  for (;;) {
    size_t end = s.find("\r\n", pos);
    if (end == std::string_view::npos) return 0;
    std::string_view size_text = s.substr(pos, end - pos);
    size_text = size_text.substr(0, size_text.find(';'));
    if (size_text.empty() || size_text.size() > 15) return -1;
    size_t size = 0;
    for (char c : size_text) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return -1;
      size = size * 16 + static_cast<size_t>(d);
    }
    pos = end + 2;
    if (size == 0) {   // trailers, then the empty line
      for (;;) {
        size_t t = s.find("\r\n", pos);
        if (t == std::string_view::npos) return 0;
        if (t == pos) return static_cast<long>(pos + 2);
        pos = t + 2;
      }
    }
    if (s.size() < pos + size + 2) return 0;
    if (s.substr(pos + size, 2) != "\r\n") return -1;
    pos += size + 2;
  }
}

}  // namespace

RecordingOrigin::RecordingOrigin() {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return;
  }
  listen_fd_ = fd;
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { run(); });
}

RecordingOrigin::~RecordingOrigin() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    char b = 's';
    (void)!::write(wake_[1], &b, 1);
    thread_.join();
  }
  for (auto& c : conns_)
    if (c->fd >= 0) ::close(c->fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

void RecordingOrigin::setResponse(std::string raw, bool close_after) {
  std::lock_guard<std::mutex> lock(mu_);
  response_ = std::move(raw);
  close_after_ = close_after;
}

void RecordingOrigin::run() {
  for (;;) {
    std::vector<pollfd> fds;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (auto& c : conns_)
        if (c->fd >= 0) fds.push_back({c->fd, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) return;
    // The pipe first: a sync whose byte this consumes counted itself before writing it.
    char buf[64];
    while (::read(wake_[0], buf, sizeof buf) > 0) {
    }
    uint64_t requested;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requested = sync_requested_;
    }
    // Everything readable now, whatever woke us: a sync asked before this pass is answered
    // only after it.
    drainAll();
    {
      std::lock_guard<std::mutex> lock(mu_);
      sync_done_ = requested;
    }
    cv_.notify_all();
  }
}

void RecordingOrigin::drainAll() {
  acceptAll();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& c : conns_)
    if (c->fd >= 0) readConn(*c);
}

void RecordingOrigin::acceptAll() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    conns_.push_back(std::move(c));
  }
}

// Under mu_.
void RecordingOrigin::readConn(Conn& c) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.received.append(buf, static_cast<size_t>(n));
      c.pending.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    c.peer_closed = true;   // EOF or reset
    break;
  }
  serve(c);
  if (c.peer_closed && c.fd >= 0) {
    ::close(c.fd);
    c.fd = -1;
  }
}

// Under mu_.
void RecordingOrigin::serve(Conn& c) {
  while (!c.stuck && c.fd >= 0 && !c.pending.empty()) {
    long n = frameRequest(c.pending);
    if (n == 0) return;
    if (n < 0) {
      c.stuck = true;
      return;
    }
    c.pending.erase(0, static_cast<size_t>(n));
    size_t off = 0;
    while (off < response_.size()) {
      ssize_t w = ::send(c.fd, response_.data() + off, response_.size() - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd p{c.fd, POLLOUT, 0};
        poll(&p, 1, 1000);
        continue;
      }
      break;   // the peer is gone
    }
    if (close_after_) {
      ::close(c.fd);
      c.fd = -1;
      return;
    }
  }
}

void RecordingOrigin::sync() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) return;
  uint64_t want = ++sync_requested_;
  lock.unlock();
  char b = 'w';
  (void)!::write(wake_[1], &b, 1);
  lock.lock();
  cv_.wait_for(lock, 5s, [&] { return sync_done_ >= want; });
}

RecordingOrigin::Mark RecordingOrigin::mark() {
  sync();
  std::lock_guard<std::mutex> lock(mu_);
  Mark m;
  for (auto& c : conns_) m.push_back(c->received.size());
  return m;
}

std::string RecordingOrigin::receivedSince(const Mark& m) {
  sync();
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (size_t i = 0; i < conns_.size(); ++i) {
    size_t from = i < m.size() ? m[i] : 0;
    out += conns_[i]->received.substr(from);
  }
  return out;
}

size_t RecordingOrigin::connections() {
  sync();
  std::lock_guard<std::mutex> lock(mu_);
  return conns_.size();
}

bool RecordingOrigin::peerClosed(size_t i) {
  sync();
  std::lock_guard<std::mutex> lock(mu_);
  return i < conns_.size() && conns_[i]->peer_closed;
}

bool RecordingOrigin::waitPeerClosed(size_t i, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!peerClosed(i)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace lb::test
