// One socket's life, for whichever session owns it: accept (from a listening stream, with the
// transport the listener puts under it) or connect (to an address, bounded by a connect
// timeout), the peer and local addresses, TCP_NODELAY, one timer (the owner's idle or
// deadline timer; the connect timeout while connecting), reads into pool blocks or
// owner-supplied buffers, writes with bytes-queued accounting and high/low watermarks,
// shutdown of the write side, lingering close, and a counted close that calls the owner back
// once, after the last libuv callback, so that the owner may free itself there.
//
// One dialect for every socket lb holds: a client's, a backend's, a health check's, an
// admin or etcd exchange's. Every owner implements ConnectionOwner, and every callback names
// the connection it comes from (h2o's one callback shape), so a session that holds two (the
// client's and the backend's) implements one set of callbacks and tells the two apart by
// address. The upstream pool lends a backend connection to a session by making the session
// its owner (setOwner) and takes it back the same way.
//
// Bytes go through a Transport (transport.h): plain TCP, or TLS under it with no change to
// any owner. A splice(2) pump between two connections (bytes never reach the owner) is
// lb/net/splice_pump.h's SplicePump, which works on two Connections from outside.
//
// Rules (h2o's and libuv's): the Connection is embedded in its owner (no allocation of its
// own), neither copied nor moved; handle.data = this, and static trampolines forward to
// members; after close() the owner hears nothing but onWritten(UV_ECANCELED) for writes it
// queued (so it can take back their buffers) and, last, onClosed(). Owner callbacks are
// noexcept: no exception crosses a libuv callback. Loop thread only.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "lb/net/buffer_pool.h"
#include "lb/net/transport.h"

namespace lb {

class Connection;

// One write queued behind the socket: caller-owned storage (a member of the owner, or the
// header of the pool block that carries the bytes), valid until onWritten.
struct ConnectionWrite {
  uv_write_t req;
  Connection* conn = nullptr;
  size_t bytes = 0;       // queued with it
  // Where its completion goes instead of the owner's onWritten: a session writing on a
  // connection it does not own (TCP's backend side, owned by the UpstreamConn), which needs
  // its buffer back even after that connection closed (then with UV_ECANCELED).
  void (*done)(ConnectionWrite* w, int status) noexcept = nullptr;
  void* user = nullptr;   // the writer's
};

// The owner's side of the dialect. Every callback names the connection it comes from.
class ConnectionOwner {
 public:
  // connect(): 0, or < 0 (refused; UV_ETIMEDOUT at the connect timeout). After a failure
  // the connection is of no further use (kFailed): the owner closes it.
  virtual void onConnected(Connection& c, int status) noexcept {
    (void)c;
    (void)status;
  }
  // accept(): the transport's opening (TLS's handshake, read while the owner reads) has
  // just ended, before any of the client's bytes reach onRead. Never called for a plain
  // connection, which is open from the start (Connection::open()).
  virtual void onEstablished(Connection& c) noexcept { (void)c; }
  // Owner-supplied buffers (no read pool): where the next read lands. A zero-length buffer
  // makes libuv report UV_ENOBUFS (onError).
  virtual void onAlloc(Connection& c, uv_buf_t* buf) noexcept {
    (void)c;
    *buf = uv_buf_init(nullptr, 0);
  }
  // n bytes at p. With a read pool, p is `header` bytes into a pool block that is the
  // owner's from now on (it puts it back). With owner buffers, n == 0 gives back the
  // buffer onAlloc handed out, empty: after a read that found nothing (EAGAIN), and before
  // onEof or onError; an owner that took a block for it may put it back.
  virtual void onRead(Connection& c, char* p, size_t n) noexcept = 0;
  // The peer will send no more. Reading has stopped.
  virtual void onEof(Connection& c) noexcept = 0;
  // A read failed (reset, UV_ENOBUFS). Reading has stopped.
  virtual void onError(Connection& c, int status) noexcept = 0;
  // A write that write() queued has finished (< 0: failed; UV_ECANCELED after close()).
  virtual void onWritten(Connection& c, ConnectionWrite* w, int status) noexcept {
    (void)c;
    (void)w;
    (void)status;
  }
  // Bytes queued had crossed the high watermark and are now down to the low one.
  virtual void onDrained(Connection& c) noexcept { (void)c; }
  // shutdown() finished (status < 0: the peer is gone). Not called after close().
  virtual void onShutdown(Connection& c, int status) noexcept {
    (void)c;
    (void)status;
  }
  virtual void onTimer(Connection& c) noexcept { (void)c; }
  // lingerClose() ended (the peer closed, reset, or the linger time passed). The
  // connection closes right after unless the owner closed it here.
  virtual void onLingerDone(Connection& c) noexcept { (void)c; }
  // The last libuv callback has come back: the owner may free itself (and this connection).
  virtual void onClosed(Connection& c) noexcept = 0;

 protected:
  ~ConnectionOwner() = default;
};

// What a listener puts under the connections it accepts (Connection::accept's argument,
// handed down through its protocol's accept function): make(ctx, c) builds the transport
// once the socket is accepted (null make, or no AcceptTransport at all: plain).
struct AcceptTransport {
  Transport* (*make)(void* ctx, Connection& c) noexcept = nullptr;
  void* ctx = nullptr;
};

// A Connection's life, one state at a time (the owner's position in its own exchange is the
// owner's; reading, the watermark and the write poll are separate facts, kept beside it):
//
//   kNew ──accept()──> kOpen (plain) or kAccepting ──onEstablished──> kOpen
//   kNew ──connect()──> kConnecting ──TCP up, the transport handshakes──> kHandshaking
//                          │ TCP up, no handshake                            │ done
//                          ├──────────────────────────────> kOpen <──────────┤
//                          │ refused, timed out                              │ failed
//                          └──────────────────────────────> kFailed <────────┘
//   kOpen, kAccepting ──lingerClose()──> kLingering ──the peer closed, time is up──> kClosing
//   any state ──close()──> kClosing ──the last callback──> onClosed (the owner may free it)
enum class ConnState : uint8_t {
  kNew,          // handles initialised, no peer yet: accept() or connect() comes next (a
                 // failed accept stays here, and the owner closes)
  kConnecting,   // connect() started, TCP's answer pending; the timer is the connect timeout
  kHandshaking,  // TCP is up and the transport's own opening (TLS towards a backend) runs
                 // under the same timer, reading for itself; the owner's readStart/readStop
                 // are only recorded, and its onConnected waits for the end
  kAccepting,    // accepted, the transport's opening (a TLS listener's handshake) running on
                 // the owner's reads; no byte reaches onRead before onEstablished
  kOpen,         // accepted or connected (onConnected(0) heard): bytes flow both ways
  kFailed,       // the connect or its handshake failed or timed out (onConnected(< 0)
                 // heard): of no further use, the owner closes it
  kLingering,    // lingerClose(): the write side shut, input read and dropped until the
                 // peer closes or the timer ends it (onLingerDone, then the close)
  kClosing,      // close(): handles closing; the owner hears only cancelled writes, then
                 // onClosed once, after which it may free the connection
};
// The state's name for debug logs ("open", "lingering", ...).
const char* connStateName(ConnState s) noexcept;

class Connection {
 public:
  static constexpr size_t kHighWatermark = 256 * 1024;
  static constexpr size_t kLowWatermark = 64 * 1024;

  // Initializes the socket and timer handles: the owner must close() it, accepted, connected
  // or not, and free itself only in onClosed.
  Connection(ConnectionOwner& owner, uv_loop_t* loop) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // --- Opening ------------------------------------------------------------------------
  // The pending connection of `server`, with `transport`'s transport under it (null: plain);
  // on success the peer address is read (getpeername) and the connection is kOpen, or
  // kAccepting while the transport's opening runs. < 0 when another worker took it, the
  // client is gone, or the transport could not be made; the owner closes.
  int accept(uv_stream_t* server, const AcceptTransport* transport) noexcept;
  // Starts a connect; onConnected follows (UV_ETIMEDOUT after `timeout_ms`, 0 = none). The
  // timer is the connect's until then. < 0 when it cannot even start. `transport` (null:
  // plain) goes under the connection now; one that handshakes (TLS towards a backend) runs
  // its handshake once TCP is up, inside the same timeout, and onConnected(0) comes only
  // when it has ended: a failed handshake is onConnected(< 0), like a refused connect.
  // Writes queued meanwhile wait for it. The connection releases the transport at close.
  int connect(const sockaddr* address, uint64_t timeout_ms,
              Transport* transport = nullptr) noexcept;
  void setNoDelay() noexcept { uv_tcp_nodelay(&tcp_, 1); }
  ConnState state() const noexcept { return state_; }
  // From connect() to onConnected, handshake included.
  bool connecting() const noexcept {
    return state_ == ConnState::kConnecting || state_ == ConnState::kHandshaking;
  }
  const sockaddr* peer() const noexcept { return reinterpret_cast<const sockaddr*>(&peer_); }
  // Read once, on first use (getsockname), so an owner that never asks pays no syscall.
  const sockaddr* local() noexcept {
    return local_read_ ? reinterpret_cast<const sockaddr*>(&local_) : readLocal();
  }

  // --- Reading -----------------------------------------------------------------------
  // Reads go into blocks of `pool`, each starting `header` bytes in (room for the owner's
  // write header when the block carries the bytes on); without this, into onAlloc's buffers.
  void readIntoPool(BufferPool* pool, size_t header = 0) noexcept {
    pool_ = pool;
    header_ = header;
  }
  // Idempotent; 0 or < 0. Each start/stop pair is an epoll_ctl: owners stop only for flow
  // control.
  int readStart() noexcept;
  void readStop() noexcept;
  bool reading() const noexcept { return reading_; }
  uint64_t bytesRead() const noexcept { return bytes_read_; }

  // --- Writing -----------------------------------------------------------------------
  // [bufs, n): with try_first, as much as the socket takes now; what is left is queued with
  // `w` (the buffers must stay valid until onWritten(w)). Returns the bytes written now (all
  // of them: nothing queued, w unused), or < 0 (nothing queued; the owner closes). Writes
  // queue behind each other in order; `w` must not be in flight already.
  //
  // A plain socket that takes the whole write at once (a small answer, most of the time)
  // is served here, inline; the rest (a partial write, TLS, a queue) in writeRest.
  ssize_t write(ConnectionWrite* w, const uv_buf_t* bufs, unsigned n,
                bool try_first = true) noexcept {
    if (!try_first || n > kMaxBuffers || !plain() || closing())
      return writeRest(w, bufs, n, try_first, kNotTried);
    const int t = uv_try_write(stream(), bufs, n);
    if (t > 0) {
      size_t total = 0;
      for (unsigned i = 0; i < n; ++i) total += bufs[i].len;
      if (static_cast<size_t>(t) == total) {
        bytes_written_ += total;
        return t;
      }
    }
    return writeRest(w, bufs, n, try_first, t);
  }
  // Bytes queued and not yet on the socket (the transport's count): the owner stops
  // producing above the high watermark and hears onDrained once they are down to the low
  // one.
  size_t queued() noexcept {
    return plain() ? stream()->write_queue_size : transport_->queued(*this);
  }
  bool aboveHigh() noexcept { return queued() > high_; }
  size_t lowWatermark() const noexcept { return low_; }
  // Writes queued and not yet called back (a write can be all on the socket and still wait
  // for its callback, which comes on the loop's next turn).
  uint32_t writesInFlight() const noexcept { return writes_; }
  void setWatermarks(size_t high, size_t low) noexcept {
    high_ = high;
    low_ = low;
  }
  uint64_t bytesWritten() const noexcept { return bytes_written_; }
  // Ends the write side after every queued write; onShutdown follows. One at a time.
  int shutdown() noexcept;

  // --- Pipe -------------------------------------------------------------------------
  // A SplicePump (lb/net/splice_pump.h) moves bytes between two connections without the
  // owner when both transports are plain (plain()). It learns readiness from libuv's own
  // watcher on the socket, so nothing else registers the descriptor with epoll on the hot
  // path: while a ready hook is set, a read hands libuv a zero-length buffer (libuv then
  // reads nothing and reports UV_ENOBUFS, documented uv_alloc_cb behaviour) and the hook runs
  // instead of the owner's callbacks, each time the socket is readable while reading is
  // started (readStart/readStop as usual: the pump starts and stops it for back-pressure).
  // Writability comes from a uv_poll_t on a duplicate of the socket (epoll keys a
  // registration on descriptor and file, so it is distinct from libuv's): made on the
  // first watchWritable, kept until close(), armed only while a spliced write waits.
  using ReadyFn = void (*)(void* ctx) noexcept;
  bool plain() const noexcept { return transport_ == &PlainTransport::instance(); }
  // Accepted: whether the transport's opening is over (always, for a plain connection).
  bool open() const noexcept { return transport_->established(); }
  int fd() noexcept;   // the socket's descriptor, or -1
  void setReadyHook(ReadyFn fn, void* ctx) noexcept {
    ready_fn_ = fn;
    ready_ctx_ = ctx;
  }
  // fn(ctx) while the socket is writable (level-triggered), until unwatchWritable. 0, or < 0
  // when no duplicate or poll handle could be made (the owner copies instead).
  int watchWritable(ReadyFn fn, void* ctx) noexcept;
  void unwatchWritable() noexcept;
  void setTransport(Transport* t) noexcept { transport_ = t; }
  Transport* transport() const noexcept { return transport_; }

  // --- Owner ------------------------------------------------------------------------
  // Every callback from the next one on goes to `owner`: the upstream pool lends a backend
  // connection to a session this way and takes it back (lb/runtime/upstream_pool.h). The new
  // owner takes the connection as it is (its reads, writes in flight, buffers).
  void setOwner(ConnectionOwner& owner) noexcept { owner_ = &owner; }
  ConnectionOwner& owner() const noexcept { return *owner_; }

  // --- Timer -------------------------------------------------------------------------
  void startTimer(uint64_t ms) noexcept {
    if (!closing()) uv_timer_start(&timer_, onTimerFired, ms, 0);
  }
  void stopTimer() noexcept { uv_timer_stop(&timer_); }
  bool timerActive() const noexcept {
    return uv_is_active(reinterpret_cast<const uv_handle_t*>(&timer_)) != 0;
  }

  // --- Closing -----------------------------------------------------------------------
  // Shuts the write side (queued writes go out first), then reads and drops what the peer
  // still sends until it closes or `ms` pass, so that it reads lb's last answer rather than
  // a reset (nginx's lingering_close); onLingerDone, then close. False when the shutdown
  // could not start (the peer is gone): the linger runs all the same, and an owner that
  // would rather not wait closes now.
  bool lingerClose(uint64_t ms) noexcept;
  bool lingering() const noexcept { return state_ == ConnState::kLingering; }
  // Idempotent. Both handles close; queued writes come back cancelled; onClosed follows
  // the last callback, exactly once.
  void close() noexcept;
  bool closing() const noexcept { return state_ == ConnState::kClosing; }

  // --- For transports ----------------------------------------------------------------
  uv_stream_t* stream() noexcept { return reinterpret_cast<uv_stream_t*>(&tcp_); }
  uv_tcp_t* tcp() noexcept { return &tcp_; }
  // The buffer the next delivered bytes go into (the pool block or the owner's).
  void ownerBuffer(uv_buf_t* buf) noexcept;
  // Bytes (n > 0), nothing (0), or EOF/an error (< 0) for the owner, in `buf`.
  void deliver(ssize_t n, const uv_buf_t* buf) noexcept;
  // The handshake startHandshake began has ended: the owner hears onConnected(status).
  void handshakeDone(int status) noexcept;
  // An accepted connection's opening has ended: kOpen, and the owner hears onEstablished().
  void established() noexcept;
  bool handshaking() const noexcept { return state_ == ConnState::kHandshaking; }

 private:
  static void onAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void onRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  static void onWrite(uv_write_t* req, int status);
  static void onShutdownDone(uv_shutdown_t* req, int status);
  static void onConnect(uv_connect_t* req, int status);
  static void onTimerFired(uv_timer_t* t);
  static void onHandleClosed(uv_handle_t* h);
  static void onWritable(uv_poll_t* h, int status, int events);

  // A write of more buffers than this is queued whole (owners write pool-block chains of at
  // most 32).
  static constexpr unsigned kMaxBuffers = 64;
  static constexpr int kNotTried = INT_MIN;   // no uv_try_write result (never one of libuv's)
  // write() past its fast path; `tried` is its uv_try_write's result, or kNotTried.
  ssize_t writeRest(ConnectionWrite* w, const uv_buf_t* bufs, unsigned n, bool try_first,
                    int tried) noexcept;
  const sockaddr* readLocal() noexcept;
  void handleWrite(ConnectionWrite* w, int status) noexcept;
  void beginHandshake() noexcept;
  // The connect (and its handshake, if any) ended: the owner hears onConnected(status).
  void connectDone(int status) noexcept;
  void lingerEnd() noexcept;
  void callbackDone() noexcept;
  // The one place the state changes (and says so in the debug log).
  void enter(ConnState next) noexcept;

  ConnectionOwner* owner_;
  Transport* transport_;
  BufferPool* pool_ = nullptr;
  size_t header_ = 0;

  uv_tcp_t tcp_;
  uv_timer_t timer_;
  uv_connect_t connect_req_;
  uv_shutdown_t shutdown_req_;
  int pending_ = 2;                // close callbacks, writes, a shutdown and a connect
  ConnState state_ = ConnState::kNew;

  ReadyFn ready_fn_ = nullptr;     // set: reads go to it, not to the owner (splicing)
  void* ready_ctx_ = nullptr;
  ReadyFn writable_fn_ = nullptr;
  void* writable_ctx_ = nullptr;
  uv_poll_t write_poll_;           // on write_dup_, once made
  int write_dup_ = -1;
  bool write_armed_ = false;

  // Facts beside the state, each of its own:
  bool reading_ = false;           // libuv's read is started
  // kHandshaking: whether the owner has asked to read (readStart), so that reading stops
  // after the handshake unless it did.
  bool owner_reads_ = false;
  bool above_ = false;             // crossed the high watermark, not yet back to low
  bool local_read_ = false;        // local_ holds getsockname's answer

  uint32_t writes_ = 0;
  size_t high_ = kHighWatermark;
  size_t low_ = kLowWatermark;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
  sockaddr_storage peer_{};
  sockaddr_storage local_{};
};

}  // namespace lb
