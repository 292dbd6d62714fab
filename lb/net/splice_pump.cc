#include "lb/net/splice_pump.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "lb/net/connection.h"

namespace lb {

namespace {

constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
// Splice pairs per readiness callback: enough to move several pipes' worth, few enough that
// one busy connection does not hold the loop from the others (libuv's uv__read stops at 32
// reads for the same reason).
constexpr int kRounds = 16;
constexpr int kRunning = INT32_MIN;

// Process-wide counts for /metrics: each pool writes them (relaxed, once per pipe taken or
// given back, never per splice) and the admin thread reads them.
std::atomic<int64_t> g_pipes_in_use{0};
std::atomic<int64_t> g_pipes_pooled{0};

// Empty pipes kept for the next pump on this thread. Each worker is one thread, so this is the
// per-worker pool with no lock; the destructor closes them at thread exit.
struct PipePool {
  static constexpr int kKeep = 32;
  int fds[kKeep][2];
  size_t caps[kKeep];   // each pipe's capacity, asked once when it was made
  int n = 0;
  ~PipePool() {
    g_pipes_pooled.fetch_sub(n, std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      ::close(fds[i][0]);
      ::close(fds[i][1]);
    }
  }
  bool take(int out[2], size_t* cap) noexcept {
    if (n > 0) {
      --n;
      out[0] = fds[n][0];
      out[1] = fds[n][1];
      *cap = caps[n];
      g_pipes_pooled.fetch_sub(1, std::memory_order_relaxed);
      g_pipes_in_use.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (pipe2(out, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    g_pipes_in_use.fetch_add(1, std::memory_order_relaxed);
    // Best effort: past fs.pipe-max-size or the user's pipe-user-pages-soft the kernel refuses
    // and the pipe keeps its default size; F_GETPIPE_SZ says what it is.
    (void)fcntl(out[0], F_SETPIPE_SZ, SplicePump::kPipeSize);
    int got = fcntl(out[0], F_GETPIPE_SZ);
    *cap = got > 0 ? static_cast<size_t>(got) : 4096;
    return true;
  }
  void give(int p[2], size_t cap) noexcept {
    g_pipes_in_use.fetch_sub(1, std::memory_order_relaxed);
    if (n < kKeep) {
      fds[n][0] = p[0];
      fds[n][1] = p[1];
      caps[n] = cap;
      ++n;
      g_pipes_pooled.fetch_add(1, std::memory_order_relaxed);
    } else {
      ::close(p[0]);
      ::close(p[1]);
    }
  }
  // A pipe a pump closes (bytes left in it nobody will read): no longer in use.
  static void dropped() noexcept { g_pipes_in_use.fetch_sub(1, std::memory_order_relaxed); }
};
thread_local PipePool t_pipes;

}  // namespace

int SplicePump::pooledPipes() noexcept { return t_pipes.n; }
int64_t SplicePump::pipesInUse() noexcept { return g_pipes_in_use.load(std::memory_order_relaxed); }
int64_t SplicePump::pipesPooled() noexcept {
  return g_pipes_pooled.load(std::memory_order_relaxed);
}

int SplicePump::start(Connection& from, Connection& to, uint64_t budget) noexcept {
  if (started_ || budget == 0 || !from.plain() || !to.plain()) return UV_EINVAL;
  in_fd_ = from.fd();
  out_fd_ = to.fd();
  if (in_fd_ < 0 || out_fd_ < 0) return UV_EBADF;
  from_ = &from;
  to_ = &to;
  in_pipe_ = 0;
  budget_ = budget;
  read_ = written_ = 0;
  writable_armed_ = false;
  last_ms_ = uv_now(loop_);
  started_ = true;
  done_ = eof_ = blocked_out_ = error_on_source_ = false;
  // From here on a read on `from` only says that it is readable (Connection::setReadyHook).
  from.setReadyHook(onInReady, this);
  return 0;
}

void SplicePump::pumpNow() noexcept { run(); }

void SplicePump::onInReady(void* ctx) noexcept { static_cast<SplicePump*>(ctx)->run(); }
void SplicePump::onOutReady(void* ctx) noexcept { static_cast<SplicePump*>(ctx)->run(); }

// The source's readiness is libuv's own read watcher, registered with epoll already: a stop
// costs no syscall (libuv drops the registration only if an event comes meanwhile).
void SplicePump::wantIn(bool on) noexcept {
  if (on == from_->reading()) return;
  if (on)
    from_->readStart();
  else
    from_->readStop();
}

// The destination's poll (Connection::watchWritable) is armed only while a write waits on
// EAGAIN: an epoll_ctl each way then, none for a body the socket takes as it comes.
bool SplicePump::wantOut(bool on) noexcept {
  if (on == writable_armed_) return true;
  writable_armed_ = on;
  if (!on) {
    to_->unwatchWritable();
    return true;
  }
  if (to_->watchWritable(onOutReady, this) == 0) return true;
  writable_armed_ = false;
  return false;
}

void SplicePump::run() noexcept {
  if (done_ || !started_) return;
  size_t got = 0;          // read from the source in this callback
  bool dry = false;        // the source had less than asked: do not ask again this turn
  // kRunning until the pump ends; kUnsupported is 1, so the sentinel must be neither it nor
  // an errno (a 1 here once made a refused splice spin instead of falling back).
  int status = kRunning;
  for (int round = 0; round < kRounds && status == kRunning; ++round) {
    bool progress = false;
    if (in_pipe_ > 0) {
      ssize_t n = splice(pipe_[0], nullptr, out_fd_, nullptr, in_pipe_, kFlags);
      if (n > 0) {
        in_pipe_ -= static_cast<size_t>(n);
        written_ += static_cast<uint64_t>(n);
        blocked_out_ = false;
        progress = true;
      } else if (n < 0 && errno == EAGAIN) {
        blocked_out_ = true;
      } else if (!(n < 0 && errno == EINTR)) {
        status = n == 0 ? UV_EPIPE : -errno;
        error_on_source_ = false;
        break;
      }
    }
    if (!dry && !eof_ && budget_ > 0 && pipe_[0] < 0 && !takePipe()) {
      status = read_ == 0 ? kUnsupported : -EMFILE;   // no descriptor left for a pipe
      error_on_source_ = true;
      break;
    }
    if (!dry && !eof_ && budget_ > 0 && in_pipe_ < capacity_) {
      size_t want = std::min<uint64_t>(capacity_ - in_pipe_, budget_);
      ssize_t n = splice(in_fd_, nullptr, pipe_[1], nullptr, want, kFlags);
      if (n > 0) {
        in_pipe_ += static_cast<size_t>(n);
        read_ += static_cast<uint64_t>(n);
        budget_ -= static_cast<uint64_t>(n);
        got += static_cast<size_t>(n);
        progress = true;
        if (static_cast<size_t>(n) < want) dry = true;
      } else if (n == 0) {
        eof_ = true;
        progress = true;
      } else if (errno == EAGAIN) {
        dry = true;
      } else if (errno != EINTR) {
        int e = errno;
        // Descriptors splice cannot serve (a kernel without it, a socket type it refuses):
        // the owner copies instead, provided nothing has moved yet.
        status = (e == EINVAL || e == ENOSYS) && read_ == 0 ? kUnsupported : -e;
        error_on_source_ = true;
        break;
      }
    }
    if (in_pipe_ == 0 && (eof_ || budget_ == 0)) status = budget_ == 0 ? 0 : UV_EOF;
    if (!progress) break;
  }
  // An empty pipe goes back to the pool between bursts (HAProxy's pipe pool does the same), so
  // an idle connection holds none: pipes count against the user's pipe-user-pages-soft.
  if (in_pipe_ == 0 && pipe_[0] >= 0) givePipe();
  if (got > 0) {
    last_ms_ = uv_now(loop_);
    owner_->onPumpRead(*this, got);
    if (done_ || !started_) return;   // the owner stopped the pump in there
  }
  if (status != kRunning) {
    finish(status);
    return;
  }
  // Level-triggered both: a source with more to read, or a destination that can take more,
  // calls back on the next turn, so stopping at kRounds loses nothing. Bytes left in the pipe
  // mean the destination returned EAGAIN, or kRounds ran out (then writability calls back at
  // once); a body the destination takes as it comes never arms its poll.
  wantIn(!eof_ && budget_ > 0 && (pipe_[0] < 0 || in_pipe_ < capacity_));
  if (!wantOut(in_pipe_ > 0)) finish(-EMFILE);   // no duplicate or poll handle
}

void SplicePump::finish(int status) noexcept {
  done_ = true;
  // The budget met: the source's read stays as it is until the owner's stop() says (it runs
  // in onPumpDone, below, before libuv can call the hook again).
  if (status != 0) wantIn(false);
  wantOut(false);
  owner_->onPumpDone(*this, status);
}

void SplicePump::stop(bool keep_reading) noexcept {
  if (!started_) return;
  done_ = true;
  started_ = false;
  if (!keep_reading || budget_ != 0) wantIn(false);   // else the owner's reads resume as they are
  wantOut(false);
  from_->setReadyHook(nullptr, nullptr);
  in_fd_ = out_fd_ = -1;
  if (pipe_[0] >= 0 && in_pipe_ > 0) {   // bytes nobody will read: the pipe is not reusable
    PipePool::dropped();
    ::close(pipe_[0]);
    ::close(pipe_[1]);
    pipe_[0] = pipe_[1] = -1;
  } else if (pipe_[0] >= 0) {
    givePipe();
  }
  in_pipe_ = 0;
}

bool SplicePump::takePipe() noexcept {
  if (t_pipes.take(pipe_, &capacity_)) return true;
  pipe_[0] = pipe_[1] = -1;
  return false;
}

void SplicePump::givePipe() noexcept {
  t_pipes.give(pipe_, capacity_);
  pipe_[0] = pipe_[1] = -1;
}

}  // namespace lb
