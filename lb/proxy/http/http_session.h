// One downstream HTTP/1.1 connection and the upstream exchange it drives. Loop thread only.
//
// One request at a time (pipelined bytes wait, unparsed, in the read buffer until the response
// before them is complete, so answers keep their order). Per request: parse the head in place,
// derive the affinity key, pick a backend, send a rewritten head, then stream both bodies
// through with their original framing (Content-Length or chunked, never buffered whole).
// Flow control: at most one block is in flight per direction; while a write to one side is
// queued in libuv (write queue above zero), reading from the other side stops, and resumes
// when it drains, so a slow reader never makes lb buffer more than a block.
//
// Behaviour choices (what a HAProxy/nginx/Envoy user should know):
// - Framing passes through: Content-Length and chunked bodies are forwarded with their own
//   framing, never re-chunked or buffered whole. llhttp (strict) rejects CL+TE, duplicate
//   differing Content-Length and a Transfer-Encoding not ending in chunked; lb adds: exactly
//   one Host in HTTP/1.1, no CONNECT. All 400, nothing forwarded.
// - The request line goes up as received (HTTP/1.0 stays 1.0, with Connection: keep-alive
//   added so the upstream connection can be pooled). Hop-by-hop headers (Connection,
//   Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade unless upgrading, and every header
//   named in Connection) are dropped both ways; X-Forwarded-For is appended, X-Forwarded-Proto
//   set to http, Host kept.
// - Expect: 100-continue is forwarded; the backend's 100 comes back through (never to an
//   HTTP/1.0 client). lb does not answer 100 itself.
// - Upgrade: after the backend's 101, bytes flow both ways untouched until either side closes.
// - Retries: a connect failure (or connect timeout) always moves to the next distinct host of
//   the key's preference order, up to the cluster's `retries`. A reset or EOF before any
//   response byte is retried only for idempotent bodiless requests; on a pooled connection it
//   is first retried once on the same host over a fresh connection (the backend had closed
//   the idle connection under us), without spending a retry.
// - Statuses lb answers itself, all with Connection: close and a lingering close (half-close,
//   then discard input for up to 1 s so the client reads the answer, not a reset):
//   400 malformed or missing key (on_missing_key = reject), 408 request head not complete
//   within timeouts.header (counted from the first byte of the request; from accept for a new
//   connection), 413 a Content-Length or chunk of 1 TiB or more (no body limit is configurable),
//   431 head over limits.max_header_bytes (at most one 64 KiB block) or over 128 headers,
//   502 backend failed (refused, reset, malformed or oversized response head), 503 no usable
//   backend or the listener at limits.max_connections (each worker enforces its share),
//   504 no response head within timeouts.idle (there is no separate response timeout).
// - timeouts.idle also closes a keep-alive connection between requests (quietly) and any
//   exchange or tunnel with no traffic either way.
// - A client that closes while its request is in flight abandons it (the upstream connection
//   is closed, its live load released), as nginx does without proxy_ignore_client_abort.
//
// Lifetime: owns down_ and timer_ (and the UpstreamConn while it uses it); neither copied nor
// moved; handle.data = this; counts pending callbacks and deletes itself after the last.
#pragma once

#include <uv.h>

#include <memory>

#include "lb/http/parser.h"
#include "lb/routing/snapshot.h"
#include "lb/core/stats.h"
#include "lb/runtime/backend_attempt.h"
#include "lb/runtime/upstream_pool.h"
#include "lb/runtime/worker_env.h"
#include "plugins/key.h"

namespace lb {

class HttpSession final : public Session, public UpstreamOwner {
 public:
  // Loop thread. Accepts one connection from `server` and starts serving it (with a 503 when
  // the listener's Admission says it is over limits.max_connections).
  static void accept(WorkerEnv* worker, uv_stream_t* server,
                     const std::shared_ptr<const Snapshot>& snap, const ListenerSnapshot* ls,
                     Admission admission);
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  void abort() noexcept override;
  void drain() noexcept override;

  void onUpstreamConnect(int status) noexcept override;
  void onUpstreamAlloc(uv_buf_t* buf) noexcept override;
  void onUpstreamRead(ssize_t n, const uv_buf_t* buf) noexcept override;
  void onUpstreamWrite(int status) noexcept override;

 private:
  enum class State { kHead, kConnecting, kProxying, kTunnel, kLingering, kClosed };

  // A pool block used as a byte queue: [pos, len) not yet consumed.
  struct Block {
    char* buf = nullptr;
    uint32_t len = 0;
    uint32_t pos = 0;
  };

  HttpSession(WorkerEnv* worker, const std::shared_ptr<const Snapshot>& snap,
              const ListenerSnapshot* ls);
  ~HttpSession();

  // Trampolines.
  static void onDownAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void onDownRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void onDownWrite(uv_write_t* req, int status);
  static void onShutdown(uv_shutdown_t* req, int status);
  static void onTimer(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);

  // Downstream side (http_session.cc).
  void start(Admission admission) noexcept;
  void handleDownRead(ssize_t n) noexcept;
  void handleDownWrite(int status) noexcept;
  void handleTimer() noexcept;
  void processHead() noexcept;
  void onRequestHead() noexcept;
  void pumpRequest() noexcept;
  void nextRequest() noexcept;
  void setDownReading(bool on) noexcept;
  // Writes to the client: 0 sent now, 1 queued (handleDownWrite follows), < 0 error.
  int writeDown(const char* p, size_t n) noexcept;
  void sendError(int status, HttpErrorReason reason) noexcept;
  void lingerClose() noexcept;
  void closeAll() noexcept;
  void maybeDelete() noexcept;
  void armTimer(uint64_t ms) noexcept;
  void touch(uint64_t ms) noexcept;   // pushes the activity deadline out
  void releaseBlock(Block* b) noexcept;

  // Upstream side (http_session_upstream.cc).
  void connectUpstream(Pooling pooling) noexcept;
  void sendRequestHead() noexcept;
  void upstreamFailed(bool connect_failure) noexcept;
  void pumpResponse() noexcept;
  void onResponseHead() noexcept;
  void finishExchange() noexcept;
  void releaseUpstream(bool reusable) noexcept;
  void setUpReading(bool on) noexcept;
  void pumpTunnel() noexcept;
  void recordResponse(int status, bool from_backend) noexcept;
  void afterRequestHeadWritten() noexcept;

  WorkerEnv* worker_;
  std::shared_ptr<const Snapshot> snap_;
  const ListenerSnapshot* lst_;
  const ClusterSnapshot* cluster_;
  ListenerWorkerStats* lstats_;
  State state_ = State::kHead;

  uv_tcp_t down_;
  uv_timer_t timer_;
  uv_write_t down_write_;
  uv_shutdown_t shutdown_req_;
  int pending_ = 0;              // handle closes, down writes and shutdowns still to call back
  bool closing_ = false;
  bool down_reading_ = false;
  bool down_writing_ = false;
  bool down_eof_ = false;
  bool up_reading_ = false;
  bool close_after_write_ = false;
  uint64_t deadline_ = 0;        // uv_now() at which the timer's phase expires

  Block in_;                     // client bytes: the request head, body, pipelined requests
  Block upin_;                   // backend bytes
  char* out_ = nullptr;          // the rewritten request head (until written)
  char* rout_ = nullptr;         // the rewritten response head (until written)
  HttpParser req_{HTTP_REQUEST};
  HttpParser resp_{HTTP_RESPONSE};

  sockaddr_storage peer_{};
  sockaddr_storage local_{};
  char client_ip_[64] = {};
  uint32_t client_ip_len_ = 0;

  // The request in flight.
  bool head_timer_ = false;      // the header deadline runs (a request has begun)
  uint32_t head_end_ = 0;        // in_ offset just past the request head
  uint64_t hash_ = 0;
  bool has_key_ = false;
  BackendAttempt attempt_;       // pick, live load, connect, retries (lb/runtime)
  bool fresh_retry_done_ = false;
  const BackendSnapshot* backend_ = nullptr;   // attempt_'s host
  BackendWorkerStats* bstats_ = nullptr;
  UpstreamConn* up_ = nullptr;
  bool retry_ok_ = false;        // idempotent and bodiless: safe to resend
  bool keep_req_ = false;        // the client allows keep-alive
  bool is_head_ = false;
  bool client_http10_ = false;
  bool upgrade_req_ = false;
  bool req_done_ = false;
  bool req_resumed_ = false;     // the request parser went past the head
  bool head_written_ = false;    // the request head went upstream (this attempt)
  bool body_sent_ = false;       // a body byte went upstream
  bool resp_started_ = false;    // a byte came back from the backend
  bool resp_head_sent_ = false;  // the final response head went downstream
  bool resp_done_ = false;
  bool keep_down_ = false;
  int status_ = 0;
  uint64_t start_ns_ = 0;
  // For this request's access-log line (lb/runtime/access_log.h): bytes of the request as received
  // (head + body), bytes written to the client, and the request line (path truncated).
  uint64_t log_in_ = 0;
  uint64_t log_out_ = 0;
  char log_method_[16] = {};
  uint8_t log_method_len_ = 0;
  char log_path_[256] = {};
  uint16_t log_path_len_ = 0;
  GeneratedCookie cookie_;
  HttpHeader view_headers_[ParsedHead::kMaxHeaders];
};

}  // namespace lb
