// One worker thread: its own uv_loop_t, its own SO_REUSEPORT listening sockets, its own
// upstream keep-alive pools and I/O buffers (docs/architecture.md, "Threads and data"). The main thread
// talks to it only through a mailbox woken by uv_async: a new snapshot, drain, stop. Nothing
// on the request path takes a lock.
//
// What runs on the loop (listeners, sessions, the upstream pool) sees the worker only through
// its WorkerEnv (lb/runtime/worker_env.h); this class is the thread and the mailbox around it.
#pragma once

#include <uv.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lb/routing/snapshot.h"
#include "lb/runtime/access_log.h"
#include "lb/runtime/protocol_table.h"
#include "lb/runtime/worker_env.h"

namespace lb {

class Listener;

class Worker {
 public:
  // `protocols` outlives the worker (lb/app/builtin_protocols.cc holds the one table).
  Worker(unsigned index, unsigned worker_count, const ProtocolTable& protocols);
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
  // Main thread. Active checks took `backend` down: every session of this worker hears it
  // (Session::backendDown).
  void backendDown(std::shared_ptr<BackendState> backend);
  // Main thread. Every cluster of the worker's snapshot hands its hot-key summary over
  // (HotKeyState::handOver), on the worker's loop, as soon as it gets to its mailbox; the
  // main thread collects it later (lb/app/hot_key_monitor.h). No-op when not running.
  void handOverHotKeys();
  // Main thread. Every cluster of the worker's snapshot adopts the hot set published last
  // (HotKeyState::adoptHotSet), on the worker's loop, as soon as it gets to its mailbox;
  // until then its requests see the previous one. No-op when not running.
  void adoptHotSets();
  // Main thread. Close everything now and join the thread. Idempotent.
  void stop();

  // Main thread. Appends a dup (close-on-exec) of every socket this worker listens on, for
  // the lb that replaces this one (lb/upgrade/upgrade.h); the caller owns them.
  void dupListeningSockets(std::vector<int>* out);

  unsigned index() const noexcept { return env_.index(); }
  // Any thread. Sessions of every protocol still open on this worker: what a drain waits for.
  size_t inFlight() const noexcept { return env_.sessionCount(); }
  // After stop(). Connections this worker accepted (logged at exit).
  uint64_t accepted() const noexcept { return env_.accepted(); }

 private:
  static void onAsync(uv_async_t* a);
  void run();
  void processMailbox();
  // Opens listeners the snapshot has and this worker lacks, closes the ones it dropped.
  bool reconcileListeners(std::string* error);
  void shutdownLoop();
  // Loop thread. listening_fds_ := the fds of listeners_ (under fds_mu_); call before the
  // listeners it drops are closed, so the main thread never dups a closed fd.
  void publishListeningFds();

  const unsigned worker_count_;
  uv_loop_t loop_;
  uv_async_t async_;
  std::thread thread_;
  WorkerEnv env_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::unique_ptr<AccessLog> access_log_;
  bool stopping_ = false;

  // Mailbox: main thread writes under mu_, the loop thread reads after the async wakes it.
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const Snapshot> pending_snapshot_;
  std::vector<std::shared_ptr<BackendState>> pending_down_;
  bool pending_drain_ = false;
  bool pending_hot_keys_ = false;
  bool pending_hot_sets_ = false;
  bool pending_stop_ = false;
  bool started_ = false;      // start() result is ready
  bool start_ok_ = false;
  std::string start_error_;
  bool joined_ = true;

  std::mutex fds_mu_;               // the loop thread writes, the main thread dups
  std::vector<int> listening_fds_;
};

}  // namespace lb
