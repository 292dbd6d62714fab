// One downstream HTTP/1.1 connection and the upstream exchanges it drives. Loop thread only.
//
// One request at a time (pipelined bytes wait, unparsed, in the read buffer until the response
// before them is complete, so answers keep their order). Per request: parse the head in place,
// derive the affinity key, pick a backend, send a rewritten head, then stream both bodies
// through with their original framing (Content-Length or chunked, never buffered whole).
// Flow control: at most one block is in flight per direction; while a write to one side is
// queued in libuv (write queue above zero), reading from the other side stops, and resumes
// when it drains, so a slow reader never makes lb buffer more than a block.
//
// The connection's life (State), and what moves it on:
//
//                 accept
//                   |
//                   v      head complete
//  kIdle --byte--> kHead ---------------> kConnecting <----------------------.
//    ^               ^                        |                              |
//    |               |                        | connected (a pooled          | reset or EOF
//    |               |                        | connection: at once)         | before any
//    |               |                        v                              | response byte,
//    |               '--next request's---- kExchange ------------------------' safe to resend
//    |                  bytes already here   |  |  |
//    '------response done, keep-alive--------'  |  '--101--> kTunnel
//                                               |               |
//              response done, no keep-alive;    |               | a side's EOF, once its
//              or lb answers an error (from     |               | last bytes are out
//              kHead and kConnecting too)       v               v
//                                          kLingering ------> kClosed <---- kIdle: idle timeout,
//                                            client EOF or 1 s         drain, EOF; any state:
//                                                                      client gone, write
//                                                                      error, abort
//
//   kHead        Reads and parses the head in place; timeouts.header runs from accept or
//                from the first byte. The first byte takes a block and an HttpExchange (a
//                new connection that has sent nothing holds neither). Complete head ->
//                kConnecting. Malformed, too large, no key under `reject`, header timeout ->
//                400/413/414/431/505/408 and kLingering.
//   kIdle        Keep-alive between requests, nothing of the next one yet. A byte -> kHead;
//                timeouts.idle, drain or EOF -> kClosed, quietly. Holds no buffer block and
//                no HttpExchange (parsers, header views, log): only the session itself.
//   kConnecting  A backend is picked. A pooled connection, or the connect completing ->
//                kExchange. Connect refused or timeouts.connect -> the next host (stays), or
//                502 -> kLingering when retries are spent; no usable host -> 503.
//   kExchange    Request and response stream (HttpExchange's phases, http_exchange.h);
//                timeouts.idle, pushed out by traffic either way. Response done -> kIdle
//                (keep-alive), kHead (pipelined bytes waiting) or kLingering. Reset or EOF
//                before a response byte -> kConnecting when safe to resend, else 502. 101 ->
//                kTunnel. Idle timeout: 504 before the response head, cut short after.
//   kTunnel      Bytes both ways (TunnelPhase). A side's EOF -> kClosed once what it sent
//                is out; timeouts.idle -> kClosed.
//   kLingering   lb has answered: half-closed, discarding input. Client EOF or 1 s -> kClosed.
//                The exchange is given back on entry.
//   kClosed      Handles closing; the session frees itself after the last callback.
//   Any state: the client's EOF mid-request, a write error, a response cut short, or abort
//   (stop) -> kClosed.
//
// Io holds only libuv bookkeeping (is a read active, is a write queued, has the client's read
// side ended), never a position in the exchange.
//
// Behaviour choices (what a HAProxy/nginx/Envoy user should know):
// - Framing passes through: Content-Length and chunked bodies are forwarded with their own
//   framing, never re-chunked or buffered whole. The parser is strict (lb/http/parser.h lists
//   what it refuses: CL+TE, two Content-Lengths, a Transfer-Encoding not ending in chunked or
//   in HTTP/1.0, obs-fold, bare CR, non-token field names, a Host that is not an authority,
//   ...); lb adds no CONNECT. A refused request forwards nothing: 400 (505 for a version other
//   than HTTP/1.0 and 1.1), and neither it nor anything pipelined behind it reaches a backend.
//   A response the parser refuses is a 502 when the client has no head yet (else the client
//   connection is cut), and its upstream connection is closed, never pooled.
// - The request line goes up as received (HTTP/1.0 stays 1.0, with Connection: keep-alive
//   added so the upstream connection can be pooled). Hop-by-hop headers (Connection,
//   Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade unless upgrading, and every header
//   named in Connection) are dropped both ways; X-Forwarded-For is appended, X-Forwarded-Proto
//   set to http, Host kept.
// - Expect: 100-continue is forwarded; the backend's 100 comes back through (never to an
//   HTTP/1.0 client). lb does not answer 100 itself.
// - Upgrade: after the backend's 101, bytes flow both ways untouched until either side closes
//   (what that side sent before its EOF still reaches the other side; then both close).
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
//   414 a request-target that alone outgrows limits.max_header_bytes,
//   431 head over limits.max_header_bytes (at most one 64 KiB block) or over 128 headers,
//   502 backend failed (refused, reset, malformed or oversized response head), 503 no usable
//   backend or the listener at limits.max_connections (each worker enforces its share),
//   504 no response head within timeouts.idle (there is no separate response timeout),
//   505 a request in a version other than HTTP/1.0 and HTTP/1.1.
// - timeouts.idle also closes a keep-alive connection between requests (quietly) and any
//   exchange or tunnel with no traffic either way.
// - Health: when active checks take a backend down, a request still waiting for its answer
//   from it moves on at once, as after a reset before the answer (the next host when safe
//   to send again, else 502); a tunnel to it closes. Connect failures, resets before the
//   answer, 5xx and 504s count against the backend for outlier detection.
// - A client that closes while its request is in flight abandons it (the upstream connection
//   is closed, its live load released), as nginx does without proxy_ignore_client_abort.
//
// Files: http_session.cc (accept, client I/O, timer, errors, close), http_session_request.cc
// (request heads, keys, request bodies, keep-alive), http_session_upstream.cc (pick, connect,
// retry, the response), http_session_tunnel.cc (after a 101).
//
// Both sockets speak the one dialect (lb/net/connection.h): the session is the owner of the
// client's Connection and of the backend's while it holds the UpstreamConn, and hears both
// through one set of ConnectionOwner callbacks, each telling the sides apart by the
// connection it names and going on to the client's handler (http_session.cc) or the
// backend's (http_session_upstream.cc).
//
// Lifetime: owns the client's Connection (socket, timer, lingering close) and the
// UpstreamConn and the HttpExchange while it uses them; neither copied nor moved; deletes
// itself when the client's connection reports its last callback (onClosed).
#pragma once

#include <uv.h>

#include <algorithm>
#include <memory>

#include "lb/core/stats.h"
#include "lb/http/parser.h"
#include "lb/proxy/http/http_exchange.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/backend_attempt.h"
#include "lb/runtime/h2_handoff.h"
#include "lb/net/connection.h"
#include "lb/net/splice_pump.h"
#include "lb/runtime/upstream_pool.h"
#include "lb/runtime/worker_env.h"
#include "plugins/key.h"

namespace lb {

class HttpSession final : public Session,
                          private ConnectionOwner,
                          private SplicePumpOwner {
 public:
  // Loop thread. Accepts one connection from `server`, with the listener's `transport` under
  // it (null: plain), and starts serving it (with a 503 when the listener's Admission says it
  // is over limits.max_connections).
  static void accept(WorkerEnv* worker, uv_stream_t* server, const AcceptTransport* transport,
                     const std::shared_ptr<const Snapshot>& snap, const ListenerSnapshot* ls,
                     Admission admission);
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  void abort() noexcept override;
  void drain() noexcept override;
  // Idle between requests, or new and nothing received yet.
  bool quietForDrain() const noexcept;
  // Active checks took `backend` down: an exchange still waiting for its answer from it
  // moves on (http_session_upstream.cc).
  void backendDown(const BackendState& backend) noexcept override;

 private:
  enum class State : uint8_t {
    kIdle,         // keep-alive, between requests: no byte of the next one yet
    kHead,         // reading a request head (a new connection starts here)
    kConnecting,   // the head is complete: picking a backend, connecting to it
    kExchange,     // request and response stream (HttpExchange says how far)
    kTunnel,       // after a 101: bytes both ways, untouched
    kLingering,    // lb is done answering: half-closed, discarding input
    kH2,           // the connection speaks HTTP/2: h2_ owns the client's Connection and
                   // hears its events until it hands it back to close it
    kClosed,       // handles closing; freed after the last callback
  };
  // kTunnel: which side sent EOF first. Its last bytes still go out to the other side; the
  // session closes once they have.
  enum class TunnelPhase : uint8_t { kOpen, kClientEnded, kBackendEnded };

  // libuv bookkeeping, orthogonal to State.
  struct Io {
    bool down_writing = false;   // down_write_ is queued in libuv
    bool down_eof = false;       // the client's read side ended (EOF or error)
    bool up_reading = false;     // reading from up_ is active
  };

  // A pool block used as a byte queue: [pos, len) not yet consumed.
  struct Block {
    char* buf = nullptr;
    uint32_t len = 0;
    uint32_t pos = 0;
  };

  HttpSession(WorkerEnv* worker, const std::shared_ptr<const Snapshot>& snap,
              const ListenerSnapshot* ls);
  ~HttpSession();

  // ConnectionOwner, both sides (http_session.cc): the client's connection (client_) and
  // the backend's (up_'s), told apart by the connection each callback names. Only the
  // backend's connects; only the client's times out, lingers and closes here (a closed
  // UpstreamConn takes its connection's last callbacks).
  void onConnected(Connection& c, int status) noexcept override;
  void onAlloc(Connection& c, uv_buf_t* buf) noexcept override;
  void onRead(Connection& c, char* p, size_t n) noexcept override;
  void onEof(Connection& c) noexcept override;
  void onError(Connection& c, int status) noexcept override;
  void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept override;
  void onEstablished(Connection& c) noexcept override;
  void onTimer(Connection& c) noexcept override;
  void onLingerDone(Connection& c) noexcept override;
  void onClosed(Connection& c) noexcept override;
  bool isClient(const Connection& c) const noexcept { return &c == &client_; }

  // The connection (http_session.cc).
  void start(Admission admission) noexcept;
  void allocDown(uv_buf_t* buf) noexcept;
  void handleDownRead(ssize_t n) noexcept;
  void handleClientEof() noexcept;
  void handleDownWrite(int status) noexcept;
  void handleTimer() noexcept;
  void setDownReading(bool on) noexcept;
  // Writes to the client: 0 sent now, 1 queued (handleDownWrite follows, and reading from the
  // backend stops until then), < 0 error.
  int writeDown(const char* p, size_t n) noexcept;
  // The same for several pieces in one writev (the response head and its first body bytes).
  int writeDownBufs(uv_buf_t* bufs, unsigned count) noexcept;
  void sendError(int status, HttpErrorReason reason) noexcept;
  void lingerClose() noexcept;
  void closeAll() noexcept;
  void armTimer(uint64_t ms) noexcept;
  void touch(uint64_t ms) noexcept;   // pushes the activity deadline out
  void releaseBlock(Block* b) noexcept;
  // ex_ from the worker's pool, reset for a new request; false (ex_ stays null) only when
  // memory is exhausted. acquireExchange keeps an ex_ already held.
  bool acquireExchange() noexcept;
  void releaseExchange() noexcept;

  // HTTP/2 (http_session.cc): the client chose it by ALPN, or sent the h2c preface as its
  // first bytes (maybeH2c). The room (lb/runtime/h2_handoff.h) takes the connection over.
  bool maybeH2c() noexcept;
  void startH2(const char* bytes, size_t len) noexcept;

  // Requests (http_session_request.cc).
  void processHead() noexcept;
  void onRequestHead() noexcept;
  bool deriveKey() noexcept;
  void pumpRequest() noexcept;
  void nextRequest() noexcept;
  // Moves the connection to the worker's newest snapshot, so that each request is routed by
  // the membership current when its head is read (a keep-alive connection opened before a
  // reload or an etcd revision routes as a new one does). False when the newest snapshot has
  // no listener of this name: the connection stays where it is. Twice a request (its head,
  // the move to the next): inline, for the usual answer, "already on it".
  bool followSnapshot() noexcept {
    const Snapshot* current = worker_->snapshot().get();
    return current == nullptr || current == snap_.get() || moveToSnapshot();
  }
  bool moveToSnapshot() noexcept;

  // The backend side of an exchange (http_session_upstream.cc).
  void connectUpstream(Pooling pooling) noexcept;
  void handleUpConnect(int status) noexcept;
  void allocUp(uv_buf_t* buf) noexcept;
  // Bytes read (n > 0), the buffer back empty (0), or EOF/an error (< 0).
  void handleUpRead(ssize_t n) noexcept;
  void handleUpWrite(int status) noexcept;
  void sendRequestHead() noexcept;
  void afterRequestHeadWritten() noexcept;
  void upstreamFailed(bool connect_failure) noexcept;
  void handleBackendEof(ssize_t n) noexcept;
  void pumpResponse() noexcept;
  void onResponseHead() noexcept;
  void finishExchange() noexcept;
  void releaseUpstream(bool reusable) noexcept;
  void setUpReading(bool on) noexcept;
  void recordResponse(int status, bool from_backend) noexcept;

  // After a 101 (http_session_tunnel.cc).
  void startTunnel() noexcept;
  void pumpTunnel() noexcept;
  void endTunnel(TunnelPhase ended) noexcept;

  WorkerEnv* worker_;
  std::shared_ptr<const Snapshot> snap_;
  const ListenerSnapshot* lst_;
  const ClusterSnapshot* cluster_;
  ListenerWorkerStats* lstats_;
  State state_ = State::kHead;
  TunnelPhase tunnel_ = TunnelPhase::kOpen;
  Io io_;

  Connection client_;            // the client's socket; its timer is the phase's deadline
  ConnectionWrite down_write_;
  uint64_t deadline_ = 0;        // uv_now() at which the timer's phase expires
  // When the timer the session last started on client_ is due, 0 when none is known to be
  // running (never started, fired, stopped, or taken by the lingering close). armTimer leaves
  // a running timer due no later than the new deadline as it is: it fires early and
  // handleTimer starts it again for the rest, as after touch(). A keep-alive request arms the
  // timer three times (header, response, idle), which otherwise cost three removals from and
  // insertions into libuv's timer heap a request.
  uint64_t timer_due_ = 0;

  Block in_;                     // client bytes: the request head, body, pipelined requests
  Block upin_;                   // backend bytes
  char* out_ = nullptr;          // the rewritten request head (until written)
  char* rout_ = nullptr;         // the rewritten response head (until written)
  // Bytes of rout_ not yet written: the final response head waits for the body bytes that
  // came with it, so both leave in one writev (pumpResponse).
  uint32_t rout_pending_ = 0;
  uint32_t head_end_ = 0;        // in_ offset just past the request head

  // Serving HTTP/2 (kH2): the room that speaks it, deleted with the session.
  H2Room* h2_ = nullptr;
  // A new plain connection whose first bytes may still be the h2c preface: cleared once
  // they are not, or once a request has been served.
  bool h2c_possible_ = false;

  char client_ip_[64] = {};
  uint32_t client_ip_len_ = 0;

  // The backend picked for the request in flight: it holds one unit of that backend's live
  // load from the pick until releaseUpstream (lb/runtime/backend_attempt.h).
  BackendAttempt attempt_;
  UpstreamConn* up_ = nullptr;   // the connection of the current attempt
  // The request in flight, from the worker's HttpExchangePool: taken at the request's first
  // byte (or when lb answers before one), given back when the connection goes idle, lingers
  // or closes. Null in kIdle and in kHead before the first byte.
  HttpExchange* ex_ = nullptr;
  // The worker's HttpExchangePool, found on the first acquireExchange (a worker's services
  // live as long as it does, so the pointer stays good): a request takes and gives back its
  // exchange without looking the service up each time.
  HttpExchangePool* exchanges_ = nullptr;

  // A Content-Length body of at least kSpliceMin bytes, a response's or a request's, moves
  // with splice(2), and so does a chunk's data of that size (http_session_splice.cc); the
  // pump holds no handle, and every path that lets go of a connection stops it first
  // (releaseUpstream).
  // Chosen from bench/compare_objects.sh (bench/RESULTS.md): with the head read capped at
  // kHeadRead, a 64 KiB object leaves about 48 KiB to move, and splicing that cost 0.82-0.86
  // of HAProxy's CPU per request where copying it cost 0.96-1.18 (128 KiB alike).
  static constexpr uint64_t kSpliceMin = 32 * 1024;
  // The most a read takes while a head is incomplete (allocUp, allocDown): HAProxy's buffer
  // size, enough for nearly every head in one read.
  static constexpr size_t kHeadRead = 16 * 1024;
  // How much the next read of a chunked body may take: a body in chunks of kSpliceMin or
  // more reads the rest of the current chunk's data and at most kHeadRead beyond it, so the
  // next chunk's size line comes with few of its data bytes and the rest can be spliced (a
  // full-block read would take the next chunk's start, and once misaligned every chunk's
  // rest would stay below kSpliceMin). Bodies in small chunks read full blocks.
  static size_t chunkedReadCap(const HttpParser& p, size_t room) noexcept {
    if (!p.chunked() || p.lastChunkSize() < kSpliceMin) return room;
    return static_cast<size_t>(std::min<uint64_t>(room, p.chunkDataLeft() + kHeadRead));
  }
  // Whether a body of this exchange could be spliced at all: both sockets plain (no TLS on
  // either side) and no refused splice on this connection. Only then is a read capped for it.
  bool spliceable() const noexcept {
    return !splice_refused_ && client_.plain() && up_ != nullptr && up_->connection().plain();
  }
  bool spliceResponseBody() noexcept;
  bool spliceRequestBody() noexcept;
  // Stops whichever pump is open. Every request passes here (releaseUpstream), almost always
  // with none open: that answer is inline.
  void stopBodyPump() noexcept {
    if (pump_open_ || tunnel_pump_open_) stopPumps();
  }
  void stopPumps() noexcept;
  void onPumpRead(SplicePump& p, size_t n) noexcept override;
  void onPumpDone(SplicePump& p, int status) noexcept override;
  SplicePump body_pump_;
  // kTunnel: body_pump_ moves client to backend, tunnel_pump_ backend to client, each once
  // that direction's buffered bytes are out (http_session_tunnel.cc).
  SplicePump tunnel_pump_;
  bool tunnel_pump_open_ = false;
  void spliceTunnel(bool client_to_backend) noexcept;
  void onTunnelPumpDone(SplicePump& p, int status) noexcept;
  bool pump_open_ = false;       // body_pump_ started and not yet stopped
  bool pump_request_ = false;    // body_pump_ moves a request body (else a response's)
  bool pump_chunk_ = false;      // ... one chunk's data of it (else the rest of its length)
  bool splice_refused_ = false;  // splice failed with nothing moved: copy from now on
};

}  // namespace lb
