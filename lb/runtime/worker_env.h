// What a session, a listener and the upstream pool see of the worker they run on, and all
// they see: its loop, its index (the statistics slot it writes), its buffer pool and
// upstream pool, what each protocol keeps per worker, its access log, the snapshot new work
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

#include "lb/routing/snapshot.h"
#include "lb/runtime/buffer_pool.h"
#include "lb/runtime/object_pool.h"
#include "lb/runtime/protocols.h"
#include "lb/runtime/session.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class AccessLog;

// A per-worker service a family of protocols adds on first use (the cache protocols'
// pipelined server connections, lb/runtime/cache_worker.h): told of each new snapshot,
// closed at stop. Loop thread only.
class WorkerService {
 public:
  virtual ~WorkerService() = default;
  virtual void snapshotChanged(uint64_t generation) noexcept = 0;
  virtual void close() noexcept = 0;
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
  // The cache protocols' service (CacheWorker::of makes it on first use), or nullptr.
  WorkerService* cacheService() noexcept { return cache_.get(); }
  void setCacheService(std::unique_ptr<WorkerService> service) noexcept {
    cache_ = std::move(service);
  }
  // What protocol `p` keeps per worker beyond the buffer pool (HTTP: its pool of exchanges,
  // lb/proxy/http/http_exchange.h), made by the protocol on first use; nullptr until then.
  ProtocolWorkerState* protocolState(Protocol p) noexcept {
    return protocol_state_[static_cast<size_t>(p)].get();
  }
  void setProtocolState(Protocol p, std::unique_ptr<ProtocolWorkerState> state) noexcept {
    protocol_state_[static_cast<size_t>(p)] = std::move(state);
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
  // Stop, after every session was aborted: the cache protocols' server connections close.
  // The loop must then run until its handles are closed, before this is destroyed.
  void closeCache() noexcept;

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
  std::unique_ptr<WorkerService> cache_;
  std::array<std::unique_ptr<ProtocolWorkerState>, kProtocolCount> protocol_state_;
  uint64_t accepted_ = 0;
  uint64_t random_;
};

}  // namespace lb
