// One pipelined connection from a worker to a cache backend (twemproxy's server connection):
// every client of the worker whose key lives on this backend sends its commands over it, and
// replies come back in the order the commands went out, so a FIFO of fragments says whose
// each reply is.
//
//   kIdle ──push──> kConnecting ──connected──> kReady ──error/EOF/stuck──> kIdle
//     ^                 │ refused, timeouts.connect                           │
//     └─────────────────┴──── every queued fragment fails ─────────────────────┘
//   (retire: closes once nothing is queued; close: now)            -> kClosed, freed
//
// - Connect: through the worker's UpstreamPool (timeouts.connect of the listener whose
//   command opened it), then the protocol's handshake (Redis AUTH with the cluster's
//   password) before any command; its reply is checked, never passed on.
// - Writes: commands are copied into one ByteChain as sessions dispatch them; the worker's
//   flush list writes the chain once per loop turn (UpstreamConn::write: as much as the
//   socket takes now, the rest queued on its Connection).
// - Its events come as every connection's do: it owns its UpstreamConn's Connection
//   (ConnectionOwner) from the connect to the close.
// - Reads: into one buffer; the protocol's framer says where each reply ends; each goes to
//   its fragment's session in FIFO order.
// - Live load: each queued fragment holds one unit of its backend's live load (what bounded
//   loads and lb_backend_active_requests see), taken at its host's pick (CommandPicks) and
//   given back when it leaves the queue: its reply arrives (a timed-out or detached one's
//   late reply too: the server is still working on it), or it fails.
// - timeouts.response: a fragment unanswered at its deadline has its command answered with a
//   timeout error now; it stays in the FIFO, detached (a tombstone), until its reply comes
//   and is dropped, so the FIFO never misaligns. A connection whose oldest fragment has had
//   no reply for twice its timeout is taken as stuck (a frozen server) and closed: everything
//   still queued fails, and the next command reconnects.
// - Any failure (refused, reset, EOF, a malformed reply, a failed handshake, stuck) fails
//   every fragment queued on the connection with an error for its command (other commands
//   and clients carry on) and leaves the connection idle; the next command reconnects.
//
// Lifetime: owned by its ServerGroup; owns its timer and (while connected) an
// UpstreamConn; frees itself after its last callback once closed. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lb/core/stats.h"
#include "lb/routing/snapshot.h"
#include "lb/proxy/cache/byte_chain.h"
#include "lb/proxy/cache/command.h"
#include "lb/proxy/cache/wire.h"
#include "lb/runtime/flush_list.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class NearTracker;
class ServerConnection;
class WorkerEnv;

struct ServerGroup {
  std::shared_ptr<BackendState> state;
  BackendSnapshot target;            // the address and TLS to connect with (config stays null)
  const CacheWire* wire = nullptr;
  std::string password;              // the cluster's, when the group was made
  std::string handshake;             // wire->handshake(password)
  std::vector<ServerConnection*> servers; // server_connections of them; null once closed
  uint32_t tables = 0;               // tables that use this group
  uint32_t open = 0;                 // servers not yet freed
  uint32_t id = 0;                   // the worker's name for it: a near-cache entry's source
  NearTracker* tracker = nullptr;    // near_tracker.h; closed when the group retires
};

// What a server connection needs of its worker (CacheWorker): the loop and pools, the flush
// list, the fragment free list, and word when it is gone. Loop thread only.
class ServerConnectionHost {
 public:
  virtual WorkerEnv& env() noexcept = 0;
  virtual FlushList& flushes() noexcept = 0;
  virtual void freeFragment(CacheFragment* f) noexcept = 0;
  // Server `s` of `group` has closed for good and is freeing itself.
  virtual void serverGone(ServerGroup* group, ServerConnection* s) noexcept = 0;

 protected:
  ~ServerConnectionHost() = default;
};

class ServerConnection final : public Flushable, private ConnectionOwner {
 public:
  ServerConnection(ServerConnectionHost& worker, ServerGroup& group) noexcept;
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // Session side, for one fragment: open() gives the chain to append the command's bytes to
  // (connecting first when idle, with `connect_timeout_ms`); push() then queues the
  // fragment, whose reply is due within f->timeout_ms. Nothing may be appended between
  // another fragment's open() and push().
  ByteChain& open(uint64_t connect_timeout_ms) noexcept;
  void push(CacheFragment* f) noexcept;

  // The group is going away: close once nothing is queued. Idempotent.
  void retire() noexcept;
  // Worker stop: fail what is queued and close now. Idempotent.
  void close() noexcept;

  size_t queued() const noexcept { return queued_; }
  // The near tracker's epoch this connection last sent its enable command in (0: none since
  // it connected: a new connection starts untracked).
  uint32_t trackingEpoch() const noexcept { return tracking_epoch_; }
  void setTrackingEpoch(uint32_t e) noexcept { tracking_epoch_ = e; }
  bool connected() const noexcept { return state_ == State::kReady; }

  // Flushable: write the chain.
  void flush() noexcept override;

  // Reads into a pool block; a reply larger than one grows the buffer (heap) up to this.
  static constexpr size_t kMaxReplyBytes = size_t{1} << 30;

 private:
  enum class State : uint8_t { kIdle, kConnecting, kReady, kClosed };

  ~ServerConnection();

  // ConnectionOwner: the backend's connection (conn_'s), its only one.
  void onConnected(Connection& c, int status) noexcept override;
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  // Never comes: a closed UpstreamConn takes its connection's last callbacks and frees
  // itself.
  void onClosed(Connection&) noexcept override {}

  void connect(uint64_t timeout_ms) noexcept;
  // Every queued fragment fails with `text`; the connection closes; back to kIdle (or
  // kClosed when `for_good`).
  void fail(CacheErrorReason reason, const char* text, bool for_good = false) noexcept;
  // The connection broke as `kind` says: one outlier failure of the backend when commands
  // waited on it (an idle connection the server closed is not one), then fail().
  void backendFailed(BackendFailure kind, const char* text) noexcept;
  // The read side ended: EOF, an error, or a reply past kMaxReplyBytes (UV_ENOBUFS).
  void readFailed(int status) noexcept;
  void readReplies() noexcept;
  void deliver(const char* p, size_t n) noexcept;
  void releaseBuffer() noexcept;
  bool growBuffer(size_t want) noexcept;
  void armTimer(uint64_t deadline_ms) noexcept;
  void handleTimer() noexcept;
  void settleLive() noexcept;
  void maybeFree() noexcept;
  void closeIfRetiredAndEmpty() noexcept;
  const char* name() const noexcept;

  static void onTimerFired(uv_timer_t* t);
  static void onTimerClosed(uv_handle_t* h);

  ServerConnectionHost& worker_;
  ServerGroup& group_;
  BackendWorkerStats& stats_;
  State state_ = State::kIdle;
  bool retired_ = false;
  UpstreamConn* conn_ = nullptr;

  ByteChain out_;
  // A write of conn_ is queued (it carries write_bytes_ of out_). A failure closes conn_,
  // whose queued write never calls back, so fail() clears this.
  bool writing_ = false;
  size_t write_bytes_ = 0;

  CacheFragment* head_ = nullptr;  // FIFO: replies come in this order
  CacheFragment* tail_ = nullptr;
  size_t queued_ = 0;
  bool handshake_pending_ = false; // the next reply is the handshake's
  uint32_t tracking_epoch_ = 0;
  int64_t live_release_ = 0;       // live units to give back at the end of this batch

  char* in_ = nullptr;             // replies read and not yet delivered
  size_t in_len_ = 0;
  size_t in_cap_ = 0;
  bool in_pooled_ = false;
  ReplyScan scan_;

  uv_timer_t timer_;
  uint64_t timer_at_ = 0;          // uv_now the timer fires at; 0 = not armed
  int pending_ = 1;                // the timer's close
};

}  // namespace lb
