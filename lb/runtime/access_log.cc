#include "lb/runtime/access_log.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

// Appends printf output, clamped to the space left.
size_t put(char* out, size_t cap, size_t at, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
size_t put(char* out, size_t cap, size_t at, const char* fmt, ...) {
  if (at >= cap) return at;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out + at, cap - at, fmt, ap);
  va_end(ap);
  if (n < 0) return at;
  return at + static_cast<size_t>(n) < cap ? at + n : cap - 1;
}

size_t putAddress(char* out, size_t cap, size_t at, const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "-";
  int port = 0;
  if (sa != nullptr && sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return put(out, cap, at, " client=%s:%d", host, port);
  }
  if (sa != nullptr && sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return put(out, cap, at, " client=[%s]:%d", host, port);
  }
  return put(out, cap, at, " client=-");
}

// Bare value: names and methods come from the config or are validated tokens; anything odd
// becomes '?' so a line always splits on spaces.
size_t putToken(char* out, size_t cap, size_t at, std::string_view v) {
  if (v.empty()) v = "-";
  for (char c : v) {
    if (at + 1 >= cap) break;
    out[at++] = (c > ' ' && c < 127 && c != '"' && c != '=') ? c : '?';
  }
  out[at] = '\0';
  return at;
}

size_t putQuoted(char* out, size_t cap, size_t at, std::string_view v, size_t max) {
  bool truncated = v.size() > max;
  if (truncated) v = v.substr(0, max);
  if (at + 1 < cap) out[at++] = '"';
  for (unsigned char c : v) {
    if (at + 5 >= cap) break;
    if (c == '"' || c == '\\') {
      out[at++] = '\\';
      out[at++] = static_cast<char>(c);
    } else if (c < ' ' || c >= 127) {   // a client must not be able to forge a line
      at += snprintf(out + at, cap - at, "\\x%02x", c);
    } else {
      out[at++] = static_cast<char>(c);
    }
  }
  if (truncated && at + 4 < cap) {
    memcpy(out + at, "...", 3);
    at += 3;
  }
  if (at + 1 < cap) out[at++] = '"';
  out[at] = '\0';
  return at;
}

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
  size_t at = put(out, cap, 0, "ts=%s%03dZ listener=", ts_prefix_,
                  static_cast<int>(now.tv_nsec / 1000000));
  at = putToken(out, cap, at, r.listener);
  at = put(out, cap, at, " proto=");
  at = putToken(out, cap, at, r.http ? std::string_view("http") : r.proto);
  at = putAddress(out, cap, at, r.client);
  if (r.has_key)
    at = put(out, cap, at, " key=%016llx", static_cast<unsigned long long>(r.key_hash));
  else
    at = put(out, cap, at, " key=-");
  at = put(out, cap, at, " backend=");
  at = putToken(out, cap, at, r.backend);
  if (r.http) {
    at = put(out, cap, at, " status=%d", r.status);
  } else {
    at = put(out, cap, at, " status=");
    at = putToken(out, cap, at, r.outcome);
  }
  at = put(out, cap, at, " bytes_in=%llu bytes_out=%llu duration_ms=%llu.%03llu",
           static_cast<unsigned long long>(r.bytes_in),
           static_cast<unsigned long long>(r.bytes_out),
           static_cast<unsigned long long>(r.duration_us / 1000),
           static_cast<unsigned long long>(r.duration_us % 1000));
  if (r.http) {
    at = put(out, cap, at, " method=");
    at = putToken(out, cap, at, r.method);
    at = put(out, cap, at, " path=");
    at = putQuoted(out, cap, at, r.path, kMaxPathBytes);
  }
  if (r.has_counts)
    at = put(out, cap, at, " commands=%llu errors=%llu",
             static_cast<unsigned long long>(r.commands),
             static_cast<unsigned long long>(r.errors));
  if (at + 1 >= cap) at = cap - 2;
  out[at++] = '\n';
  return at;
}

}  // namespace lb
