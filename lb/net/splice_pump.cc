#include "lb/net/splice_pump.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "lb/net/connection.h"

namespace lb {

namespace {

constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
// Splice pairs per readiness callback: enough to move several pipes' worth, few enough that
// one busy connection does not hold the loop from the others (libuv's uv__read stops at 32
// reads for the same reason).
constexpr int kRounds = 16;

// Empty pipes kept for the next pump on this thread. Each worker is one thread, so this is the
// per-worker pool with no lock; the destructor closes them at thread exit.
struct PipePool {
  static constexpr int kKeep = 32;
  int fds[kKeep][2];
  size_t caps[kKeep];   // each pipe's capacity, asked once when it was made
  int n = 0;
  ~PipePool() {
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
      return true;
    }
    if (pipe2(out, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    // Best effort: past fs.pipe-max-size or the user's pipe-user-pages-soft the kernel refuses
    // and the pipe keeps its default size; F_GETPIPE_SZ says what it is.
    (void)fcntl(out[0], F_SETPIPE_SZ, SplicePump::kPipeSize);
    int got = fcntl(out[0], F_GETPIPE_SZ);
    *cap = got > 0 ? static_cast<size_t>(got) : 4096;
    return true;
  }
  void give(int p[2], size_t cap) noexcept {
    if (n < kKeep) {
      fds[n][0] = p[0];
      fds[n][1] = p[1];
      caps[n] = cap;
      ++n;
    } else {
      ::close(p[0]);
      ::close(p[1]);
    }
  }
};
thread_local PipePool t_pipes;

int dupOf(Connection& c) noexcept {
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(c.tcp()), &fd) != 0) return -1;
  return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

}  // namespace

int SplicePump::pooledPipes() noexcept { return t_pipes.n; }

int SplicePump::start(Connection& from, Connection& to, uint64_t budget) noexcept {
  if (started_ || budget == 0 || !from.plain() || !to.plain()) return UV_EINVAL;
  in_fd_ = dupOf(from);
  out_fd_ = in_fd_ >= 0 ? dupOf(to) : -1;
  int err = 0;
  if (out_fd_ < 0) {
    err = -errno;
  } else if ((err = uv_poll_init(loop_, &in_poll_, in_fd_)) == 0) {
    if ((err = uv_poll_init(loop_, &out_poll_, out_fd_)) != 0) {
      // in_poll_ holds no resource until started; its close needs no callback of ours.
      uv_close(reinterpret_cast<uv_handle_t*>(&in_poll_), nullptr);
    }
  }
  if (err != 0) {
    if (in_fd_ >= 0) ::close(in_fd_);
    if (out_fd_ >= 0) ::close(out_fd_);
    in_fd_ = out_fd_ = -1;
    return err < 0 ? err : UV_EINVAL;
  }
  in_poll_.data = this;
  out_poll_.data = this;
  in_pipe_ = 0;
  budget_ = budget;
  read_ = written_ = 0;
  in_events_ = out_events_ = 0;
  last_ms_ = uv_now(loop_);
  started_ = true;
  done_ = eof_ = blocked_out_ = error_on_source_ = false;
  arm(&in_poll_, &in_events_, UV_READABLE, onInReady);
  return 0;
}

// Only when the wanted events change: uv_poll_start stops first, an epoll_ctl DEL, and the
// next loop turn ADDs again.
void SplicePump::arm(uv_poll_t* h, int* current, int want, uv_poll_cb cb) noexcept {
  if (*current == want) return;
  *current = want;
  if (want == 0)
    uv_poll_stop(h);
  else
    uv_poll_start(h, want, cb);
}

void SplicePump::onInReady(uv_poll_t* h, int status, int) {
  auto* p = static_cast<SplicePump*>(h->data);
  if (status < 0) p->in_events_ = 0;   // libuv stopped the poll on POLLERR; splice says why
  p->run();
}

void SplicePump::onOutReady(uv_poll_t* h, int status, int) {
  auto* p = static_cast<SplicePump*>(h->data);
  if (status < 0) p->out_events_ = 0;
  p->run();
}

void SplicePump::run() noexcept {
  if (done_ || !started_) return;
  size_t got = 0;          // read from the source in this callback
  bool dry = false;        // the source had less than asked: do not ask again this turn
  int status = 1;          // 1: still running
  for (int round = 0; round < kRounds && status == 1; ++round) {
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
  if (status != 1) {
    finish(status);
    return;
  }
  // Level-triggered: a source with more to read, or a destination that can take more, calls
  // back on the next turn, so stopping at kRounds loses nothing.
  arm(&in_poll_, &in_events_,
      !eof_ && budget_ > 0 && (pipe_[0] < 0 || in_pipe_ < capacity_) ? UV_READABLE : 0,
      onInReady);
  arm(&out_poll_, &out_events_, in_pipe_ > 0 ? UV_WRITABLE : 0, onOutReady);
}

void SplicePump::finish(int status) noexcept {
  done_ = true;
  arm(&in_poll_, &in_events_, 0, onInReady);
  arm(&out_poll_, &out_events_, 0, onOutReady);
  owner_->onPumpDone(*this, status);
}

void SplicePump::stop() noexcept {
  if (!started_ || closing_ > 0) return;
  done_ = true;
  closing_ = 2;
  // uv_close on a poll handle removes its descriptor from epoll at once (libuv's
  // uv__poll_stop invalidates it), so the duplicates can close now.
  uv_close(reinterpret_cast<uv_handle_t*>(&in_poll_), onPollClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&out_poll_), onPollClosed);
  ::close(in_fd_);
  ::close(out_fd_);
  in_fd_ = out_fd_ = -1;
  if (pipe_[0] >= 0 && in_pipe_ > 0) {   // bytes nobody will read: the pipe is not reusable
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

void SplicePump::onPollClosed(uv_handle_t* h) {
  auto* p = static_cast<SplicePump*>(h->data);
  if (--p->closing_ > 0) return;
  p->started_ = false;
  p->owner_->onPumpClosed(*p);
}

}  // namespace lb
