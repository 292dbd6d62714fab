// The access log: one line per HTTP request or TCP connection, to a file, to stdout, or off
// (config lb.access_log: a path, "-" for stdout, "" for off).
//
// A line is logfmt, one record per line, fields always in this order:
//   ts=2026-11-29T20:01:02.123Z listener=web proto=http client=127.0.0.1:50312
//   key=9f3c2a0b11d4e6f7 backend=cache-a status=200 bytes_in=112 bytes_out=5120
//   duration_ms=1.234 method=GET path="/img/1.png"
// key is the 64-bit affinity hash in hex ("-" when the request had none), backend "-" when
// none was picked; status is the HTTP status, or for tcp, redis and memcached the outcome
// (ok, connect_failed, idle_timeout, quit, ...); bytes_in are bytes from the client,
// bytes_out bytes to it; method and path appear on http lines only. redis and memcached
// write one line per client connection (each command has its own key and backend, so key
// and backend are "-"), ending in commands=N errors=M: the commands it sent, and how many
// of them lb answered with an error of its own.
//
// Writes never block a worker per request: each worker appends lines to its own buffer and
// hands a full buffer to libuv's thread pool (uv_fs_write) every kFlushInterval or as soon
// as it fills, whichever comes first, while it fills a second buffer. If both are busy (the
// disk is slower than the traffic), lines are dropped and counted rather than stalling the
// proxy; the drop count is logged at warn level on the next flush.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lb/core/log_sink.h"

namespace lb {

// Everything one line says. Views are only read during write().
struct AccessRecord {
  std::string_view listener;
  bool http = false;
  std::string_view proto = "tcp";  // http, h2, tcp, redis, memcached
  const sockaddr* client = nullptr;
  bool has_key = false;
  uint64_t key_hash = 0;
  std::string_view backend;        // "" -> "-"
  int status = 0;                  // http: the status sent to the client
  std::string_view outcome;        // tcp: tcpOutcomeName(); used when !http
  uint64_t bytes_in = 0;           // from the client
  uint64_t bytes_out = 0;          // to the client
  uint64_t duration_us = 0;
  std::string_view method;         // http only
  std::string_view path;           // http only; truncated to kMaxPathBytes, quoted
  bool has_counts = false;         // redis, memcached: commands and errors follow
  uint64_t commands = 0;
  uint64_t errors = 0;
};

// One worker's buffered writer. Loop thread only.
class AccessLog {
 public:
  static constexpr size_t kBufferBytes = 64 * 1024;
  static constexpr uint64_t kFlushIntervalMs = 1000;
  static constexpr size_t kMaxPathBytes = 512;

  // `sink` may be null (off). The flush timer is unref'd: it never keeps the loop alive.
  AccessLog(uv_loop_t* loop, std::shared_ptr<AccessLogSink> sink,
            size_t buffer_bytes = kBufferBytes, uint64_t flush_interval_ms = kFlushIntervalMs);
  // Only after close() and after the loop has run to the end (the timer's close callback
  // and any write in flight have completed).
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // Switches destination (reload): what is buffered goes to the old sink first.
  void setSink(std::shared_ptr<AccessLogSink> sink) noexcept;
  bool enabled() const noexcept { return sink_ != nullptr && !closed_; }
  // Appends one line. No syscall unless the buffer is full; never blocks on the disk.
  void write(const AccessRecord& r) noexcept;
  // Hands what is buffered to the thread pool now (if no write is already in flight).
  void flush() noexcept;
  // Stops the timer and writes out everything still buffered (synchronously, once, at
  // shutdown). Idempotent.
  void close() noexcept;

  uint64_t linesWritten() const noexcept { return lines_; }
  uint64_t linesDropped() const noexcept { return dropped_total_; }

 private:
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t len = 0;
  };
  static void onTimer(uv_timer_t* t);
  static void onWritten(uv_fs_t* req);
  void startWrite() noexcept;
  void writeSync(Buffer& b) noexcept;
  size_t format(const AccessRecord& r, char* out, size_t cap) noexcept;

  uv_loop_t* loop_;
  std::shared_ptr<AccessLogSink> sink_;
  std::shared_ptr<AccessLogSink> inflight_sink_;   // held until its write completes
  size_t cap_;
  Buffer active_;
  Buffer inflight_;
  bool writing_ = false;
  bool closed_ = false;
  uv_timer_t timer_;
  uv_fs_t req_;
  uint64_t lines_ = 0;
  uint64_t dropped_ = 0;         // since the last warning
  uint64_t dropped_total_ = 0;
  int64_t ts_second_ = -1;       // the second ts_prefix_ was formatted for
  char ts_prefix_[64] = {};      // "2026-11-29T20:01:02."
};

}  // namespace lb
