// One L4 (protocol = "tcp") connection: the client's socket, a connection to the backend the
// connection's key maps to, and bytes piped both ways until both sides are done
// (docs/operations.md, "TCP listeners").
//
//   accept (past limits.max_connections: closed at once, outcome over_limit)
//   -> key hash (source_ip / five_tuple, or on_missing_key) -> the runtime's BackendAttempt:
//      pick, connect (timeouts.connect); a refused or timed-out connect moves to the next
//      distinct host in the key's order, up to `retries`               [kConnecting]
//   -> piping: when both sockets are plain, each direction is a SplicePump (splice(2)
//      through a pipe, lb/net/splice_pump.h) from the first byte: a tcp listener transforms
//      nothing, and a spliced message costs the same two syscalls as a copied one (read and
//      write), so there is no size below which copying wins once the connection is set up.
//      Otherwise, or where splice is refused (EINVAL, ENOSYS before any byte), each side's
//      reads are written to the other side; a side whose peer's write queue passes
//      kHighWatermark stops reading until it drains below kLowWatermark (a pump holds at most
//      its pipe). Half-close passes through: EOF from one side becomes shutdown(SHUT_WR) on
//      the other once its bytes are out; done once both directions are shut)   [kPiping]
//   -> close: live load and gauges back down, one access-log line, free after the last
//      callback                                                                  [kClosing]
//
// Active health checks that take the backend down (Session::backendDown) end a connection to
// it: still connecting, it moves to the next host; piping, it closes (outcome backend_down),
// so that a client of a frozen backend gets a closed connection within the checks' time
// rather than waiting on it for timeouts.idle, and its next connection goes elsewhere.
//
// Both sockets speak the one dialect (lb/net/connection.h): the session owns the client's
// Connection and, while it holds it, the backend's (the UpstreamConn's), and hears both
// through one set of ConnectionOwner callbacks, each naming its side. Both read into pool
// blocks after the write header, so a read is relayed in the block it arrived in.
//
// Lifetime: owns the client's Connection (the socket and the idle timer) and (while it has
// one) the UpstreamConn; neither copied nor moved. It deletes itself once the client
// connection has closed (onClosed) and every write it queued on the backend's connection
// has called back (up_writes_: each carries one of its pool blocks).
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "lb/routing/snapshot.h"
#include "lb/runtime/backend_attempt.h"
#include "lb/net/connection.h"
#include "lb/net/splice_pump.h"
#include "lb/runtime/protocol_table.h"
#include "lb/runtime/session.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class WorkerEnv;

// Why a TCP session ended; the access log's status field for tcp listeners.
enum class TcpOutcome : uint8_t {
  kOk,               // both directions closed normally
  kNoKey,            // on_missing_key = "reject" and no key
  kOverLimit,        // past the listener's limits.max_connections: closed at accept
  kNoBackend,        // no usable backend to try (none configured, or every one down)
  kConnectFailed,    // every attempt refused or timed out
  kIdleTimeout,
  kClientReset,      // read or write error on the client side
  kBackendReset,     // read or write error on the backend side
  kDraining,         // closed by the drain deadline
  kBackendDown,      // closed because active checks took its backend down
  kTlsHandshake,     // a TLS listener's client failed or left its handshake (no backend tried)
};
const char* tcpOutcomeName(TcpOutcome o) noexcept;

class TcpSession final : public Session,
                         private ConnectionOwner,
                         private SplicePumpOwner {
 public:
  // Loop thread only (a ProtocolTable AcceptFn). Accepts one pending connection from
  // `server` (a listening uv_tcp_t on env's loop) and starts routing it on `snapshot`'s
  // listener `listener` (an index into Snapshot::listeners; its protocol must be tcp). The
  // session holds the snapshot until it ends, so a reload never changes a connection's
  // backend or timeouts. Nothing to clean up when the accept fails; the session frees itself.
  static void accept(WorkerEnv& env, uv_stream_t* server, const AcceptTransport* transport,
                     const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener,
                     Admission admission) noexcept;

  TcpSession(const TcpSession&) = delete;   // uv handles cannot move
  TcpSession& operator=(const TcpSession&) = delete;

  // Loop thread only. Closes both sockets now (a plain close, no RST) and frees the session
  // after the last callback. Idempotent.
  void close(TcpOutcome outcome) noexcept;

  // Session: a drain lets a TCP connection run until the drain deadline (it has no request
  // boundary to stop at); abort closes it as drained.
  void abort() noexcept override { close(TcpOutcome::kDraining); }
  void drain() noexcept override {}
  void backendDown(const BackendState& backend) noexcept override;

  // Pipe watermarks: bytes queued for one side beyond which the other side stops reading
  // (each side's Connection's defaults).
  static constexpr size_t kHighWatermark = Connection::kHighWatermark;
  static constexpr size_t kLowWatermark = Connection::kLowWatermark;

 private:
  // One direction's end: the client (down_) or the backend (up_).
  struct Side {
    Connection* conn = nullptr;   // up_: the UpstreamConn's, once connected
    bool reading = false;
    bool paused = false;      // stopped by backpressure
    bool eof = false;         // read EOF: this side will send no more
    bool shut_sent = false;   // uv_shutdown issued on this side
    bool shut_done = false;
    uint64_t bytes_read = 0;
    uint64_t sent_at_eof = 0;     // the other side's bytes_read when this side's EOF came
    SplicePump* pump = nullptr;   // moving this side's reads to the other side, when spliced
  };
  struct WriteOp;   // header at the start of a pool block carrying a write

  // kHandshaking: a TLS listener's client is still in its handshake, and no backend has
  // been picked or dialled yet.
  enum class State : uint8_t { kHandshaking, kConnecting, kPiping, kClosing };

  TcpSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener);
  ~TcpSession() override;

  void start(Admission admission) noexcept;
  void pickAndConnect() noexcept;
  bool computeKey() noexcept;
  void connectPicked() noexcept;
  void failAttempt() noexcept;
  void startPiping() noexcept;
  void startReading(Side& side) noexcept;
  void stopReading(Side& side) noexcept;
  void handleWrite(WriteOp* op, int status) noexcept;
  void ended(Side& from) noexcept;
  void handleShutdown(Side& side, int status) noexcept;
  void maybeFinish() noexcept;
  void resumeIfDrained(Side& reader, Side& writer) noexcept;
  void maybeFree() noexcept;   // the client connection closed and no backend write is out
  void finishRecord() noexcept;
  Side& other(Side& s) noexcept { return &s == &down_ ? up_ : down_; }
  // The side whose connection `c` is: the client's, or else the backend's.
  Side& sideOf(const Connection& c) noexcept { return &c == &client_ ? down_ : up_; }

  // ConnectionOwner, both sides: the client's connection and the backend's. Only the
  // backend's connects; only the client's opens (a TLS listener's handshake), times out and
  // closes here (a closed UpstreamConn takes its connection's last callbacks). Writes to the
  // backend carry their own completion (onUpWritten), so onWritten is the client's.
  void onConnected(Connection& c, int status) noexcept override;
  void onEstablished(Connection& c) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onShutdown(Connection& c, int status) noexcept override;
  void onTimer(Connection& c) noexcept override;
  void onClosed(Connection& c) noexcept override;
  static void onUpWritten(ConnectionWrite* w, int status) noexcept;

  // SplicePumpOwner: pump_up_ moves the client's bytes to the backend, pump_down_ the
  // backend's to the client.
  void onPumpRead(SplicePump& p, size_t n) noexcept override;
  void onPumpDone(SplicePump& p, int status) noexcept override;
  Side& sourceOf(SplicePump& p) noexcept { return &p == &pump_up_ ? down_ : up_; }
  void startPump(Side& from) noexcept;
  void stopPump(Side& from) noexcept;

  WorkerEnv& env_;
  std::shared_ptr<const Snapshot> snapshot_;
  const ListenerSnapshot& listener_;
  const ClusterSnapshot& cluster_;
  State state_ = State::kConnecting;
  TcpOutcome outcome_ = TcpOutcome::kOk;
  Connection client_;           // the client's socket; its timer is the idle timeout
  Side down_;                   // the client
  Side up_;                     // the backend
  UpstreamConn* conn_ = nullptr;
  BackendAttempt attempt_;
  uint32_t up_writes_ = 0;      // writes queued on a backend connection, not yet back
  SplicePump pump_up_;
  SplicePump pump_down_;
  bool client_closed_ = false;  // client_'s onClosed came

  uint64_t hash_ = 0;
  bool has_key_ = false;
  uint64_t start_ns_ = 0;       // uv_hrtime at accept
  uint64_t last_activity_ms_ = 0;   // uv_now at the last read
};

}  // namespace lb
