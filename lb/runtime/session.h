// What a worker knows of a connection it serves, whatever its protocol: it can be told to
// finish (drain) or to stop now (abort). Sessions sit in an intrusive list so that linking
// one costs no allocation.
#pragma once

#include <atomic>
#include <cstddef>

namespace lb {

struct BackendState;

class Session {
 public:
  virtual ~Session() = default;
  // Loop thread. Close now (stop): every handle closes, the object frees itself later.
  virtual void abort() noexcept = 0;
  // Loop thread. Finish what is in flight, then close (drain).
  virtual void drain() noexcept = 0;
  // Loop thread. Active health checks took `backend` down: a session waiting on it for an
  // answer moves on (another host, or an error) rather than waiting for its timeout. A
  // session that does not use `backend` ignores it; so does a protocol that overrides
  // nothing. May close and unlink the session.
  virtual void backendDown(const BackendState& backend) noexcept { (void)backend; }
  // Loop thread. The worker took a new snapshot. A session that holds what only an older
  // snapshot uses (a cache session's table of server connections) moves to the new one now,
  // idle or not, so that connections to backends the new one dropped close without waiting
  // for the client's next command. May not close the session.
  virtual void snapshotChanged() noexcept {}

 private:
  friend class SessionList;
  Session* prev_ = nullptr;
  Session* next_ = nullptr;
};

// The sessions of one worker. Loop thread only, except count(), which the main thread reads
// while it waits for a drain.
class SessionList {
 public:
  void link(Session* s) noexcept;
  // Idempotent: a session that is not linked is left alone.
  void unlink(Session* s) noexcept;
  size_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  // Calls fn(session) for each; fn may unlink (and close) the session it is given.
  template <typename Fn>
  void forEach(Fn fn) {
    for (Session* s = head_; s != nullptr;) {
      Session* next = s->next_;
      fn(s);
      s = next;
    }
  }

 private:
  Session* head_ = nullptr;
  // Written by the loop thread only (load + store, no RMW).
  std::atomic<size_t> count_{0};
};

}  // namespace lb
