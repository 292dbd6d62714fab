// What a session, a listener and the upstream pool see of the worker they run on, and all
// they see: its loop, its index (the statistics slot it writes), its buffer pool and
// upstream pool, the services protocols keep per worker, its access log, the snapshot new work
// routes with, whether it drains, the list of its sessions, and its per-worker state for
// keyless requests. The Worker owns one and keeps it current; a test can stand one up on a
// loop of its own. None of this includes worker.h, so the runtime's pieces depend on the
// worker's environment, never on the worker.
//
// Loop thread only, except where a function says otherwise.
#pragma once

#include <uv.h>

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "lb/routing/snapshot.h"
#include "lb/net/buffer_pool.h"
#include "lb/runtime/protocol_table.h"
#include "lb/runtime/session.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class AccessLog;

// What a protocol (or a family of them: redis and memcached share their server connections)
// keeps per worker beyond the buffer pool: HTTP's pool of exchanges, the cache protocols'
// pipelined server connections. Made by WorkerEnv::service<T>() on first use, told of each
// new snapshot, closed at stop (after every session was aborted), destroyed with the
// environment. The runtime never names one: each is a type of its protocol's folder.
// Loop thread only.
class WorkerService {
 public:
  virtual ~WorkerService() = default;
  virtual void snapshotChanged(uint64_t /*generation*/) noexcept {}
  virtual void close() noexcept {}
};

class WorkerEnv {
 public:
  // Idle keep-alive connections kept per backend per worker: enough for a wrk -c64 run to
  // reuse every connection, small enough that a fleet of 100 backends cannot pin thousands
  // of sockets.
  static constexpr size_t kMaxIdlePerBackend = 128;

  // `loop` and `protocols` outlive the environment. Nothing here touches the loop until a
  // session or listener runs on it.
  WorkerEnv(uv_loop_t* loop, unsigned index, const ProtocolTable& protocols,
            size_t max_idle_per_backend = kMaxIdlePerBackend);
  ~WorkerEnv();
  WorkerEnv(const WorkerEnv&) = delete;
  WorkerEnv& operator=(const WorkerEnv&) = delete;

  uv_loop_t* loop() const noexcept { return loop_; }
  // The worker's number: the index of its slot in every per-worker statistics array.
  unsigned index() const noexcept { return index_; }
  const ProtocolTable& protocols() const noexcept { return protocols_; }
  BufferPool& buffers() noexcept { return buffers_; }
  UpstreamPool& upstreams() noexcept { return upstreams_; }
  // The worker's service of type T (a WorkerService constructible from WorkerEnv&), made on
  // first use; nullptr only when memory is exhausted. findService: nullptr until made.
  template <typename T>
  T* service() noexcept;
  template <typename T>
  T* findService() const noexcept {
    size_t id = serviceId<T>();
    return id < services_.size() ? static_cast<T*>(services_[id].get()) : nullptr;
  }
  // nullptr while the worker has none (the access log itself may be off: enabled()).
  AccessLog* accessLog() const noexcept { return access_log_; }
  // The newest snapshot: what a new connection or a keep-alive connection's next request
  // routes with.
  const std::shared_ptr<const Snapshot>& snapshot() const noexcept { return snapshot_; }
  // True once the worker drains: no new requests on kept-alive connections.
  bool draining() const noexcept { return draining_; }

  // Every open session, whatever its protocol, so that drain and stop reach all of them.
  void link(Session* s) noexcept { sessions_.link(s); }
  void unlink(Session* s) noexcept { sessions_.unlink(s); }   // idempotent
  SessionList& sessions() noexcept { return sessions_; }
  // Any thread: sessions open now (a drain waits for 0).
  size_t sessionCount() const noexcept { return sessions_.count(); }

  // Connections this worker accepted (logged at exit: proof that every worker served).
  void noteAccepted() noexcept { ++accepted_; }
  uint64_t accepted() const noexcept { return accepted_; }

  // on_missing_key = "random": xorshift64 (Marsaglia 2003), per worker, no syscall, no lock.
  uint64_t nextRandom() noexcept {
    random_ ^= random_ << 13;
    random_ ^= random_ >> 7;
    random_ ^= random_ << 17;
    return random_;
  }

  // The worker's side: what it changes as its mailbox delivers.
  void setSnapshot(std::shared_ptr<const Snapshot> snapshot) noexcept;
  void setAccessLog(AccessLog* log) noexcept { access_log_ = log; }
  // Drain begins: idle upstream connections close and no more are kept.
  void beginDrain() noexcept;
  // Stop, after every session was aborted: every service closes (the cache protocols' server
  // connections). The loop must then run until its handles are closed, before this is
  // destroyed.
  void closeServices() noexcept;

 private:
  uv_loop_t* const loop_;
  const unsigned index_;
  const ProtocolTable& protocols_;
  BufferPool buffers_;
  UpstreamPool upstreams_;
  AccessLog* access_log_ = nullptr;
  std::shared_ptr<const Snapshot> snapshot_;
  bool draining_ = false;
  SessionList sessions_;
  // By service type's id (serviceId<T>), process-wide and dense.
  std::vector<std::unique_ptr<WorkerService>> services_;
  uint64_t accepted_ = 0;
  uint64_t random_;

  static size_t nextServiceId() noexcept;
  template <typename T>
  static size_t serviceId() noexcept {
    static const size_t id = nextServiceId();
    return id;
  }
};

template <typename T>
T* WorkerEnv::service() noexcept {
  if (T* s = findService<T>()) return s;
  size_t id = serviceId<T>();
  try {
    if (id >= services_.size()) services_.resize(id + 1);
    services_[id] = std::make_unique<T>(*this);
  } catch (...) {
    return nullptr;
  }
  return static_cast<T*>(services_[id].get());
}

}  // namespace lb
