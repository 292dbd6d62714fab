// One direction of zero-copy relay between two plain sockets: splice(2) from the source
// socket into a pipe, and from the pipe into the destination socket, so the bytes never
// enter user space (HAProxy's "option splice-response" does the same). The owner hands it
// the two Connections, a byte budget (or kUnbounded: until EOF) and hears, through
// SplicePumpOwner, each batch of bytes read and, once, how the pump ended.
//
// Readiness, without fighting libuv (docs/architecture.md, "Connections"): the source's is
// libuv's own read watcher on it. While the pump runs, the source Connection's ready hook is
// set (Connection::setReadyHook): each read hands libuv a zero-length buffer, libuv reads
// nothing and reports UV_ENOBUFS, and the hook runs the pump, which splices; the pump starts
// and stops that read for back-pressure, which costs no syscall while the descriptor stays
// registered. The destination's writability is a uv_poll_t on a duplicate of its socket,
// made once per connection and kept by it (Connection::watchWritable), armed only while a
// spliced write waits on EAGAIN: epoll keys a registration on descriptor and open file, so
// the duplicate's is distinct from libuv's and neither sees the other's events. The owner
// queues no libuv write on the destination while the pump runs.
//
// Back-pressure both ways: the pump reads only while its pipe has room, and watches the
// destination for writability only while bytes wait in the pipe and it returned EAGAIN; a
// stopped reader leaves at most one pipe's worth (kPipeSize) in flight, held in kernel pipe
// pages, not in lb's memory.
//
// Pipes come from a per-thread pool (each worker is one thread with one loop) when bytes
// arrive and go back as soon as the pipe is empty again, so an idle connection holds none;
// one that ends with bytes in it is closed.
//
// Lifetime: embedded in its owner, neither copied nor moved; it holds no handle of its own, so
// stop() is immediate and the pump may be started again or freed right after. Both
// Connections must outlive the pump's run (the owner stops it before closing either). Loop
// thread only; every callback noexcept.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>

namespace lb {

class Connection;
class SplicePump;

class SplicePumpOwner {
 public:
  // n bytes were read from the source (they are in the pipe or already on the destination).
  virtual void onPumpRead(SplicePump& p, size_t n) noexcept = 0;
  // The pump stopped on its own: 0 (the budget is on the destination), UV_EOF (the source
  // ended and every byte before its EOF is on the destination), kUnsupported (splice is not
  // possible on these descriptors and no byte moved: use the copy path), or < 0 (a read or
  // write error; error_on_source() says which side). The polls are stopped, not yet closed.
  virtual void onPumpDone(SplicePump& p, int status) noexcept = 0;

 protected:
  ~SplicePumpOwner() = default;
};

class SplicePump {
 public:
  static constexpr uint64_t kUnbounded = UINT64_MAX;
  static constexpr int kUnsupported = 1;
  // The pipe's capacity asked with F_SETPIPE_SZ (best effort).
  static constexpr int kPipeSize = 256 * 1024;

  SplicePump(SplicePumpOwner& owner, uv_loop_t* loop) noexcept : owner_(&owner), loop_(loop) {}
  SplicePump(const SplicePump&) = delete;
  SplicePump& operator=(const SplicePump&) = delete;

  // Starts moving up to `budget` bytes from `from` to `to` (both plain; `from`'s read may be
  // on or off: the pump takes it over). 0, or < 0 when it could not start (no descriptor: use
  // the copy path; nothing to stop).
  int start(Connection& from, Connection& to, uint64_t budget) noexcept;
  // After a start() that returned 0, once the owner has recorded it: splices at once, and
  // waits for readiness only where that returned EAGAIN (a response body is usually in the
  // socket already; a poll armed first would cost an epoll_ctl and a loop turn). The
  // owner's callbacks may run in here, onPumpDone included.
  void pumpNow() noexcept;
  // Stops (reading on the source stays stopped, its ready hook cleared). Idempotent; after
  // onPumpDone too. `keep_reading`, only after onPumpDone(0): the source's read stays as the
  // pump left it (started), so an owner that goes on reading the socket (a pooled backend
  // connection watched for EOF, the next response) pays no uv_read_stop/start pair, which
  // libuv turns into two epoll_ctl on the next loop turn.
  void stop(bool keep_reading = false) noexcept;

  bool active() const noexcept { return started_ && !done_; }
  bool started() const noexcept { return started_; }
  bool errorOnSource() const noexcept { return error_on_source_; }
  uint64_t bytesRead() const noexcept { return read_; }
  uint64_t bytesWritten() const noexcept { return written_; }
  uint64_t lastActivityMs() const noexcept { return last_ms_; }

  // Idle pipes kept per thread (closed at thread exit).
  static int pooledPipes() noexcept;
  // The whole process's pipes, every thread's (for /metrics, lb_splice_pipes): held by a
  // pump with bytes in flight, and idle in the pools.
  static int64_t pipesInUse() noexcept;
  static int64_t pipesPooled() noexcept;

 private:
  static void onInReady(void* ctx) noexcept;
  static void onOutReady(void* ctx) noexcept;

  void run() noexcept;
  void finish(int status) noexcept;
  void wantIn(bool on) noexcept;
  bool wantOut(bool on) noexcept;
  bool takePipe() noexcept;
  void givePipe() noexcept;

  SplicePumpOwner* owner_;
  uv_loop_t* loop_;
  Connection* from_ = nullptr;
  Connection* to_ = nullptr;
  int in_fd_ = -1;        // from_'s socket
  int out_fd_ = -1;       // to_'s socket
  int pipe_[2] = {-1, -1};
  bool writable_armed_ = false;   // to_'s writable poll is armed
  size_t capacity_ = 0;   // the pipe's, from F_GETPIPE_SZ
  size_t in_pipe_ = 0;
  uint64_t budget_ = 0;   // bytes still to read from the source
  uint64_t read_ = 0;
  uint64_t written_ = 0;
  uint64_t last_ms_ = 0;
  bool started_ = false;
  bool done_ = false;
  bool eof_ = false;
  bool blocked_out_ = false;   // the last write to the destination returned EAGAIN
  bool error_on_source_ = false;
};

}  // namespace lb
