// One L4 (protocol = "tcp") connection: the client's socket, a connection to the backend the
// connection's key maps to, and bytes piped both ways until both sides are done
// (docs/operations.md, "TCP listeners").
//
//   accept -> key hash (source_ip / five_tuple, or on_missing_key) -> pick -> connect
//     connect fails or times out -> next distinct host in the key's order, up to `retries`
//   -> piping: each side's reads are written to the other side; a side whose peer's write
//      queue passes kHighWatermark stops reading until it drains below kLowWatermark
//   -> EOF from one side: shutdown(SHUT_WR) on the other once its queued writes are out
//      (half-close passes through); close once both directions are shut
//   -> close: live load and gauges back down, one access-log line, free after the last
//      close callback.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lb/routing/snapshot.h"
#include "lb/runtime/buffer_source.h"
#include "lb/runtime/session.h"
#include "lb/runtime/worker_env.h"

namespace lb {

class AccessLog;

// Why a TCP session ended; the access log's status field for tcp listeners.
enum class TcpOutcome : uint8_t {
  kOk,               // both directions closed normally
  kNoKey,            // on_missing_key = "reject" and no key
  kConnectFailed,    // every attempt refused or timed out
  kIdleTimeout,
  kClientReset,      // read or write error on the client side
  kBackendReset,     // read or write error on the backend side
  kDraining,         // closed by the drain deadline
};
const char* tcpOutcomeName(TcpOutcome o) noexcept;

class TcpSession final : public Session {
 public:
  // Loop thread only. Accepts one pending connection from `server` (a listening uv_tcp_t on
  // env.loop) and starts routing it on `snapshot`'s listener `listener` (an index into
  // Snapshot::listeners; its protocol must be tcp). The session holds the snapshot until it
  // ends, so a reload never changes a connection's backend or timeouts. Returns the session,
  // or nullptr when the accept failed (nothing to clean up then). The session frees itself.
  static TcpSession* accept(TcpWorkerEnv& env, std::shared_ptr<const Snapshot> snapshot,
                            uint32_t listener, uv_stream_t* server) noexcept;

  TcpSession(const TcpSession&) = delete;   // uv handles cannot move
  TcpSession& operator=(const TcpSession&) = delete;

  // Loop thread only. Closes both sockets now (RST-free: a plain close) and frees the session
  // after the last close callback. Idempotent.
  void close(TcpOutcome outcome) noexcept;
  // Loop thread only. Closes every session of env (the drain deadline, worker shutdown).
  static void closeAll(TcpWorkerEnv& env, TcpOutcome outcome) noexcept;

  // Session: a drain lets a TCP connection run until the drain deadline (it has no request
  // boundary to stop at); abort closes it as drained.
  void abort() noexcept override { close(TcpOutcome::kDraining); }
  void drain() noexcept override {}

  // Pipe watermarks: bytes queued for one side beyond which the other side stops reading.
  static constexpr size_t kHighWatermark = 256 * 1024;
  static constexpr size_t kLowWatermark = 64 * 1024;

 private:
  struct Side {
    uv_tcp_t tcp;
    uv_shutdown_t shutdown;
    bool open = false;        // uv_tcp_init done, not yet closed
    bool reading = false;
    bool paused = false;      // stopped by backpressure
    bool eof = false;         // read EOF: this side will send no more
    bool shut_sent = false;   // uv_shutdown issued on this side
    bool shut_done = false;
    uint64_t bytes_read = 0;
  };
  struct WriteOp;   // header at the start of a chunk carrying a write

  TcpSession(TcpWorkerEnv& env, std::shared_ptr<const Snapshot> snapshot, uint32_t listener);
  ~TcpSession() override;

  void start() noexcept;
  bool computeKey() noexcept;
  void connectNext() noexcept;
  void startPiping() noexcept;
  void handleConnect(int status) noexcept;
  void handleRead(Side& from, ssize_t n, const uv_buf_t* buf) noexcept;
  void handleWrite(WriteOp* op, int status) noexcept;
  void handleShutdown(Side& side, int status) noexcept;
  void handleTimer() noexcept;
  void failAttempt() noexcept;
  void releaseBackend() noexcept;
  void maybeFinish() noexcept;
  void resumeIfDrained(Side& reader, Side& writer) noexcept;
  void closeHandle(uv_handle_t* h) noexcept;
  void finishRecord() noexcept;
  Side& other(Side& s) noexcept { return &s == &down_ ? up_ : down_; }
  BackendWorkerStats* backendStats() noexcept;

  static void onAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void onWrite(uv_write_t* req, int status);
  static void onConnect(uv_connect_t* req, int status);
  static void onShutdown(uv_shutdown_t* req, int status);
  static void onTimer(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);

  enum class State : uint8_t { kConnecting, kPiping, kClosing };

  TcpWorkerEnv& env_;
  std::shared_ptr<const Snapshot> snapshot_;
  const ListenerSnapshot& listener_;
  const ClusterSnapshot& cluster_;
  State state_ = State::kConnecting;
  TcpOutcome outcome_ = TcpOutcome::kOk;
  Side down_;                   // the client
  Side up_;                     // the backend
  uv_connect_t connect_req_;
  uv_timer_t timer_;
  int pending_closes_ = 0;      // delete this when the last close callback brings it to 0
  bool closing_up_for_retry_ = false;

  uint64_t hash_ = 0;
  bool has_key_ = false;
  Pick pick_{0, 0, PickReason::kOwner};
  bool have_backend_ = false;   // pick_ names a backend whose live counter we raised
  bool connected_ = false;      // up_ connected (counts in the worker's connection gauge)
  uint32_t attempts_ = 0;       // connects tried
  uint64_t start_ns_ = 0;       // uv_hrtime at accept
  uint64_t last_activity_ms_ = 0;   // uv_now at the last read
  sockaddr_storage peer_{};
  sockaddr_storage local_{};
};

}  // namespace lb
