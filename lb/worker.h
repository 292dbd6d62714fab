// One worker thread: its own uv_loop_t, its own SO_REUSEPORT listening sockets, its own
// upstream keep-alive pools and I/O buffers (design.md, "Threads and data"). The main thread
// talks to it only through a mailbox woken by uv_async: a new snapshot, drain, stop. Nothing
// on the request path takes a lock.
#pragma once

#include <uv.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lb/access_log.h"
#include "lb/buffer_pool.h"
#include "lb/snapshot.h"
#include "lb/tcp_session.h"

namespace lb {

class Listener;
class UpstreamPool;
class Worker;

// Anything a worker must be able to close on stop or nudge on drain: HTTP sessions now, TCP
// sessions later. Intrusive list: linking costs no allocation.
class Session {
 public:
  virtual ~Session() = default;
  // Loop thread. Close now (stop): every handle closes, the object frees itself later.
  virtual void abort() noexcept = 0;
  // Loop thread. Finish what is in flight, then close (drain).
  virtual void drain() noexcept = 0;

 protected:
  friend class Worker;
  Session* prev_ = nullptr;
  Session* next_ = nullptr;
};

class Worker {
 public:
  Worker(unsigned index, unsigned worker_count);
  ~Worker();   // joins the thread if still running
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Main thread. Starts the thread with the first snapshot and waits until its listeners
  // are bound; false (with *error) when one could not be, and the thread is then gone.
  bool start(std::shared_ptr<const Snapshot> snapshot, std::string* error);
  // Main thread. Hands over a new snapshot; the worker opens/closes listeners to match it
  // and new requests route with it. Requests in flight keep the one they started with.
  void applySnapshot(std::shared_ptr<const Snapshot> snapshot);
  // Main thread. Stop accepting; keep-alive connections close after their current response.
  void beginDrain();
  // Main thread. Close everything now and join the thread. Idempotent.
  void stop();

  // Loop thread accessors.
  unsigned index() const noexcept { return index_; }
  uv_loop_t* loop() noexcept { return &loop_; }
  BufferPool& buffers() noexcept { return buffers_; }
  UpstreamPool& upstreams() noexcept { return *upstreams_; }
  const std::shared_ptr<const Snapshot>& snapshot() const noexcept { return snapshot_; }
  bool draining() const noexcept { return draining_; }
  void link(Session* s) noexcept;
  void unlink(Session* s) noexcept;
  size_t sessionCount() const noexcept { return session_count_.load(std::memory_order_relaxed); }
  // Any thread. HTTP and TCP sessions still open on this worker: what a drain waits for.
  size_t inFlight() const noexcept {
    return session_count_.load(std::memory_order_relaxed) +
           tcp_.open_sessions.load(std::memory_order_relaxed);
  }
  // Loop thread. The TCP sessions' shared state, and the worker's access log (null until the
  // loop runs).
  TcpWorkerEnv& tcpEnv() noexcept { return tcp_; }
  AccessLog* accessLog() noexcept { return access_log_.get(); }
  // Counts connections accepted by this worker (tests and logs prove both workers serve).
  uint64_t accepted() const noexcept { return accepted_; }
  void noteAccepted() noexcept { ++accepted_; }

 private:
  static void onAsync(uv_async_t* a);
  void run();
  void processMailbox();
  // Opens listeners the snapshot has and this worker lacks, closes the ones it dropped.
  bool reconcileListeners(std::string* error);
  void shutdownLoop();

  const unsigned index_;
  const unsigned worker_count_;
  uv_loop_t loop_;
  uv_async_t async_;
  std::thread thread_;
  BufferPool buffers_;
  std::unique_ptr<UpstreamPool> upstreams_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  Session* sessions_ = nullptr;
  // Written by the loop thread only (load + store), read by the main thread during a drain.
  std::atomic<size_t> session_count_{0};
  BufferPoolSource tcp_buffers_{buffers_};
  TcpWorkerEnv tcp_;
  std::unique_ptr<AccessLog> access_log_;
  uint64_t accepted_ = 0;
  bool draining_ = false;
  bool stopping_ = false;

  // Mailbox: main thread writes under mu_, the loop thread reads after the async wakes it.
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const Snapshot> pending_snapshot_;
  bool pending_drain_ = false;
  bool pending_stop_ = false;
  bool started_ = false;      // start() result is ready
  bool start_ok_ = false;
  std::string start_error_;
  bool joined_ = true;
};

}  // namespace lb
