#include "lb/runtime/access_log.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"

namespace lb {

AccessLog::AccessLog(uv_loop_t* loop, std::shared_ptr<AccessLogSink> sink, size_t buffer_bytes,
                     uint64_t flush_interval_ms)
    : loop_(loop), sink_(std::move(sink)), cap_(buffer_bytes) {
  active_.data.reset(new char[cap_]);
  inflight_.data.reset(new char[cap_]);
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
  uv_timer_start(&timer_, onTimer, flush_interval_ms, flush_interval_ms);
  uv_unref(reinterpret_cast<uv_handle_t*>(&timer_));
  req_.data = this;
}

AccessLog::~AccessLog() = default;

void AccessLog::onTimer(uv_timer_t* t) { static_cast<AccessLog*>(t->data)->flush(); }

void AccessLog::setSink(std::shared_ptr<AccessLogSink> sink) noexcept {
  if (sink == sink_) return;
  flush();   // what is buffered belongs to the old destination
  sink_ = std::move(sink);
}

void AccessLog::flush() noexcept {
  if (writing_ || active_.len == 0 || !sink_) return;
  startWrite();
}

void AccessLog::startWrite() noexcept {
  std::swap(active_, inflight_);
  active_.len = 0;
  writing_ = true;
  inflight_sink_ = sink_;
  uv_buf_t b = uv_buf_init(inflight_.data.get(), static_cast<unsigned>(inflight_.len));
  int rc = uv_fs_write(loop_, &req_, inflight_sink_->fd(), &b, 1, -1, onWritten);
  if (rc < 0) {
    writing_ = false;
    inflight_.len = 0;
    inflight_sink_.reset();
    LB_WARN("access log: write not queued: %s", sysErrorText(rc));
  }
}

void AccessLog::onWritten(uv_fs_t* req) {
  auto* self = static_cast<AccessLog*>(req->data);
  ssize_t result = req->result;
  uv_fs_req_cleanup(req);
  // A short write to a regular file means the disk is full; the rest of the buffer is lost
  // and said so, rather than retried forever on the worker.
  if (result < 0 || static_cast<size_t>(result) < self->inflight_.len)
    LB_WARN("access log: write to '%s' failed: %s", self->inflight_sink_->path().c_str(),
            result < 0 ? sysErrorText(static_cast<int>(result)) : "short write");
  self->inflight_.len = 0;
  self->inflight_sink_.reset();
  self->writing_ = false;
  if (self->dropped_ > 0) {
    LB_WARN("access log: %llu lines dropped (the destination is slower than the traffic)",
            static_cast<unsigned long long>(self->dropped_));
    self->dropped_ = 0;
  }
  if (self->closed_) {
    self->writeSync(self->active_);   // close() was waiting for this write
  } else if (self->active_.len >= self->cap_ / 2) {
    self->startWrite();   // it filled up meanwhile; do not wait for the timer
  }
}

void AccessLog::writeSync(Buffer& b) noexcept {
  size_t off = 0;
  while (sink_ && off < b.len) {
    ssize_t n = ::write(sink_->fd(), b.data.get() + off, b.len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  b.len = 0;
}

void AccessLog::close() noexcept {
  if (closed_) return;
  closed_ = true;
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
  // Lines must not overtake the write in flight: if there is one, its callback writes the
  // rest; otherwise write it now.
  if (!writing_) writeSync(active_);
}

void AccessLog::write(const AccessRecord& r) noexcept {
  if (!enabled()) return;
  // The longest line: fixed fields (~250 bytes) plus the quoted, escaped path (4x).
  char line[kMaxPathBytes * 4 + 512];
  size_t n = format(r, line, sizeof line);
  if (active_.len + n > cap_) {
    flush();
    if (active_.len + n > cap_) {   // the previous write is still in flight
      ++dropped_;
      ++dropped_total_;
      return;
    }
  }
  memcpy(active_.data.get() + active_.len, line, n);
  active_.len += n;
  ++lines_;
}

namespace {

// One access-log line being written into a fixed buffer: every append is clamped to the
// space left (one byte kept for the newline), so an oversized field truncates the line and
// never overruns it. Hand-written rather than snprintf: a line used to take ten printf calls
// and inet_ntop, ~40% of the instructions of a small proxied request (bench/RESULTS.md,
// "Request path CPU since 62b9e55"); these appends are memcpy and std::to_chars.
class LineWriter {
 public:
  LineWriter(char* out, size_t cap) : out_(out), end_(cap > 0 ? cap - 1 : 0) {}

  void text(std::string_view v) noexcept {
    const size_t n = std::min(v.size(), end_ - at_);
    memcpy(out_ + at_, v.data(), n);
    at_ += n;
  }
  void number(uint64_t v) noexcept {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    text(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  void signedNumber(int64_t v) noexcept {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    text(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  // `digits` decimal digits, zero-padded (the milliseconds of a timestamp or a duration).
  void padded(uint64_t v, int digits) noexcept {
    char buf[20];
    for (int i = digits - 1; i >= 0; --i, v /= 10) buf[i] = static_cast<char>('0' + v % 10);
    text(std::string_view(buf, static_cast<size_t>(digits)));
  }
  // 16 lowercase hex digits, as %016llx.
  void hex16(uint64_t v) noexcept {
    char buf[16];
    for (int i = 15; i >= 0; --i, v >>= 4) buf[i] = kHex[v & 15];
    text(std::string_view(buf, 16));
  }
  // A bare value: names and methods come from the config or are validated tokens; anything
  // odd becomes '?' so a line always splits on spaces.
  void token(std::string_view v) noexcept {
    if (v.empty()) v = "-";
    for (const char c : v) {
      if (at_ >= end_) break;
      out_[at_++] = (c > ' ' && c < 127 && c != '"' && c != '=') ? c : '?';
    }
  }
  // In double quotes, '"' and '\\' escaped and bytes outside printable ASCII as \xNN (a client
  // must not be able to forge a line); past `max` bytes cut, with "...".
  void quoted(std::string_view v, size_t max) noexcept {
    const bool truncated = v.size() > max;
    if (truncated) v = v.substr(0, max);
    text("\"");
    for (const unsigned char c : v) {
      if (at_ + 4 > end_) break;
      if (c == '"' || c == '\\') {
        out_[at_++] = '\\';
        out_[at_++] = static_cast<char>(c);
      } else if (c < ' ' || c >= 127) {
        const char esc[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
        text(std::string_view(esc, 4));
      } else {
        out_[at_++] = static_cast<char>(c);
      }
    }
    if (truncated) text("...");
    text("\"");
  }
  // " client=IP:port", " client=[IPv6]:port" or " client=-".
  void client(const sockaddr* sa) noexcept {
    if (sa != nullptr && sa->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
      const auto* b = reinterpret_cast<const unsigned char*>(&in->sin_addr);
      text(" client=");
      for (int i = 0; i < 4; ++i) {
        if (i > 0) text(".");
        number(b[i]);
      }
      text(":");
      number(ntohs(in->sin_port));
      return;
    }
    if (sa != nullptr && sa->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
      char host[INET6_ADDRSTRLEN] = "-";
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      text(" client=[");
      text(host);
      text("]:");
      number(ntohs(in6->sin6_port));
      return;
    }
    text(" client=-");
  }
  // Ends the line; its length.
  size_t finish() noexcept {
    out_[at_++] = '\n';
    return at_;
  }

 private:
  static constexpr char kHex[] = "0123456789abcdef";
  char* out_;
  size_t end_;
  size_t at_ = 0;
};

}  // namespace

size_t AccessLog::format(const AccessRecord& r, char* out, size_t cap) noexcept {
  timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);   // vDSO: no syscall
  if (now.tv_sec != ts_second_) {
    ts_second_ = now.tv_sec;
    tm t;
    time_t s = now.tv_sec;
    gmtime_r(&s, &t);
    snprintf(ts_prefix_, sizeof ts_prefix_, "%04d-%02d-%02dT%02d:%02d:%02d.", t.tm_year + 1900,
             t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
  }
  LineWriter w(out, cap);
  w.text("ts=");
  w.text(ts_prefix_);
  w.padded(static_cast<uint64_t>(now.tv_nsec / 1000000), 3);
  w.text("Z listener=");
  w.token(r.listener);
  w.text(" proto=");
  w.token(r.proto);
  w.client(r.client);
  if (r.has_key) {
    w.text(" key=");
    w.hex16(r.key_hash);
  } else {
    w.text(" key=-");
  }
  w.text(" backend=");
  w.token(r.backend);
  w.text(" status=");
  if (r.http)
    w.signedNumber(r.status);
  else
    w.token(r.outcome);
  w.text(" bytes_in=");
  w.number(r.bytes_in);
  w.text(" bytes_out=");
  w.number(r.bytes_out);
  w.text(" duration_ms=");
  w.number(r.duration_us / 1000);
  w.text(".");
  w.padded(r.duration_us % 1000, 3);
  if (r.http) {
    w.text(" method=");
    w.token(r.method);
    w.text(" path=");
    w.quoted(r.path, kMaxPathBytes);
  }
  if (r.has_counts) {
    w.text(" commands=");
    w.number(r.commands);
    w.text(" errors=");
    w.number(r.errors);
  }
  return w.finish();
}

}  // namespace lb
