// One L4 (protocol = "tcp") connection: the client's socket, a connection to the backend the
// connection's key maps to, and bytes piped both ways until both sides are done
// (design.md, "Config": listeners with protocol = "tcp"; docs/operations.md, "TCP listeners").
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

#include "lb/buffer_pool.h"
#include "lb/snapshot.h"

namespace lb {

class AccessLog;

// Fixed-size chunks for the pipe, from the worker's pool. A chunk holds a small header (the
// write request) followed by the bytes read into it, so relaying one read costs no
// allocation once the pool is warm. Loop thread only.
class BufferSource {
 public:
  virtual ~BufferSource() = default;
  // A chunk of chunkSize() bytes, aligned for any object; never null (falls back to the heap).
  virtual char* acquire() noexcept = 0;
  virtual void release(char* chunk) noexcept = 0;
  virtual size_t chunkSize() const noexcept = 0;
};

// A free list of heap chunks: what a worker uses when it has no pool of its own. Keeps up to
// `keep` chunks; beyond that, released chunks go back to the heap.
class FreeListBuffers final : public BufferSource {
 public:
  explicit FreeListBuffers(size_t chunk_size = 16384, size_t keep = 1024);
  ~FreeListBuffers() override;
  char* acquire() noexcept override;
  void release(char* chunk) noexcept override;
  size_t chunkSize() const noexcept override { return chunk_size_; }
  size_t outstanding() const noexcept { return outstanding_; }   // acquired, not released

 private:
  struct Free {
    Free* next;
  };
  size_t chunk_size_;
  size_t keep_;
  size_t kept_ = 0;
  size_t outstanding_ = 0;
  Free* free_ = nullptr;
};

// The worker's BufferPool as a BufferSource.
class BufferPoolSource final : public BufferSource {
 public:
  explicit BufferPoolSource(BufferPool& pool) : pool_(pool) {}
  char* acquire() noexcept override { return pool_.get(); }
  void release(char* chunk) noexcept override { pool_.put(chunk); }
  size_t chunkSize() const noexcept override { return BufferPool::kBlockSize; }

 private:
  BufferPool& pool_;
};

// What every TCP session on one worker shares. Lives as long as the worker's loop.
class TcpSession;

struct TcpWorkerEnv {
  uv_loop_t* loop = nullptr;
  unsigned worker = 0;                 // index into the per-worker statistics slots
  BufferSource* buffers = nullptr;
  AccessLog* access_log = nullptr;     // nullptr = access log off
  // Sessions alive on this worker. Written by the loop thread only (load + store, no RMW);
  // read by the main thread while it drains.
  std::atomic<uint64_t> open_sessions{0};
  TcpSession* sessions = nullptr;      // intrusive list of them, for closeAll()
  uint64_t round_robin = 0;            // on_missing_key = "round_robin" sequence
  uint64_t random_state = 0x9E3779B97F4A7C15ull;   // on_missing_key = "random" (xorshift64)
};

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

class TcpSession {
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
  ~TcpSession();

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
  TcpSession* prev_ = nullptr;  // TcpWorkerEnv::sessions
  TcpSession* next_ = nullptr;
};

}  // namespace lb
