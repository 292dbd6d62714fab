// The way from a key to a connected backend, the same for every protocol's session (HTTP
// and TCP now; the cache protocols next):
//
//   begin(key) or beginKeyless()          a new request (HTTP) or connection (TCP)
//   pickFirst()                           the key's host: bounded loads or the health-aware
//                                         preference walk (ClusterSnapshot::pick); keyless
//                                         round_robin: the worker's rotation in table order
//   connect(owner, pooling)               an idle pooled connection, or a new one whose
//                                         connect is bounded by the listener's timeouts.connect
//   ... the attempt fails (refused, timed out, reset before any answer):
//   pickNext() -> connect(...)            the next *distinct* host in the same order, while the
//                                         cluster's `retries` last; false = give up
//   release()                             the exchange or connection is over
//
// What the session learns of the picked host it reports (reportConnectFailure, reportFailure,
// reportSuccess): counted in this worker's statistics slot (lb_backend_connect_failures_total)
// and read by passive outlier detection on the main thread (lb/health/outlier.h). Plain
// single-writer stores, no lock.
//
// While a host is picked and not released it carries one unit of live load (its
// BackendState::live, what bounded loads and lb_backend_active_requests see); every pick is
// counted by reason (lb_backend_picks_total). A session keeps one BackendAttempt as a member
// and reuses it for each request: nothing here allocates.
#pragma once

#include <cstdint>

#include "lb/routing/snapshot.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class WorkerEnv;

// The cache protocols pick a host per command (per key) with no connection of their own to
// hold, so they use these two rather than a BackendAttempt. Same walk, same rules: the
// cluster's pick (bounded loads, else the health-aware preference order), false when the
// host it lands on is not usable (every host is down). Loop thread; nothing counted, no live
// unit taken.
bool pickForKey(const ClusterSnapshot& cluster, uint64_t hash, Pick* out) noexcept;
// A command without a key, by the listener's on_missing_key: "random" walks from a random
// hash, "round_robin" takes the worker's next host in the cluster's rotation (and advances
// it). False for "reject", or when no host is usable.
bool pickWithoutKey(WorkerEnv& env, const ListenerConfig& listener,
                    const ClusterSnapshot& cluster, Pick* out) noexcept;

class BackendAttempt {
 public:
  BackendAttempt() = default;
  ~BackendAttempt() { release(); }
  BackendAttempt(const BackendAttempt&) = delete;
  BackendAttempt& operator=(const BackendAttempt&) = delete;

  // Loop thread. Starts a walk for a request or connection whose key hashes to `hash`. A live
  // unit still held from the previous walk is given back first. `env`, `listener` and
  // `cluster` must outlive the walk (the session holds their snapshot).
  void begin(WorkerEnv& env, const ListenerSnapshot& listener, const ClusterSnapshot& cluster,
             uint64_t hash) noexcept;
  // Loop thread. The same for one without a key, by the listener's on_missing_key: "random"
  // walks from a random hash (per-worker xorshift), "round_robin" from the worker's next host
  // in the cluster's rotation (lb/routing/rotation.h). "reject" is the session's to answer
  // in its protocol; it must not call this.
  void beginKeyless(WorkerEnv& env, const ListenerSnapshot& listener,
                    const ClusterSnapshot& cluster) noexcept;

  // Loop thread. Picks the walk's first host, raises its live load and counts the pick.
  // False when there is none to try: no backends, or every one is down.
  bool pickFirst() noexcept;
  // Loop thread. After a failed attempt: gives the live unit back, then picks the next
  // distinct usable host of the same order (counted kFailover, or kBounded past a host at
  // its cap), spending one of the cluster's `retries`. False when the retries are spent or no
  // untried usable host is left.
  bool pickNext() noexcept;
  // Loop thread. The host already picked, once more (a pooled connection that the backend had
  // closed under us is retried there on a fresh one): live load raised again, no new pick
  // counted, no retry spent.
  void pickSameAgain() noexcept;

  // Loop thread. A connection to the picked host for `owner`: with Pooling::kReuseIdle a
  // pooled idle connection when there is one (UpstreamConn::reused(); it is connected), else
  // a new one (owner->onUpstreamConnect follows, UV_ETIMEDOUT after timeouts.connect).
  // nullptr with *err when not even a connect could start.
  UpstreamConn* connect(UpstreamOwner* owner, Pooling pooling, int* err) noexcept;

  // Loop thread. Gives back the live unit, if held. Idempotent. backend() stays readable.
  void release() noexcept;

  // Loop thread, after a pick. The connect to the picked host failed with libuv status
  // `status`: UV_ETIMEDOUT counts as a timeout, a reset or EOF as a reset, anything else
  // (refused, unreachable, could not start) as refused.
  void reportConnectFailure(int status) noexcept;
  // Loop thread, after a pick. Another failure of the picked host (a reset before any
  // answer, a 5xx, no answer in time).
  void reportFailure(BackendFailure kind) noexcept;
  // Loop thread, after a pick. The picked host answered (connected, for TCP): its run of
  // failures on this worker ends.
  void reportSuccess() noexcept;

  // The host picked last (nullptr before the first pick), and this worker's statistics slot
  // of it. Both stay valid while the session holds the snapshot.
  const BackendSnapshot* backend() const noexcept { return backend_; }
  BackendWorkerStats* stats() const noexcept { return stats_; }
  uint32_t retriesUsed() const noexcept { return retries_used_; }

 private:
  void start(WorkerEnv& env, const ListenerSnapshot& listener,
             const ClusterSnapshot& cluster) noexcept;
  Pick walk(uint32_t from_attempt) const noexcept;
  void take(Pick p) noexcept;

  WorkerEnv* env_ = nullptr;
  const ListenerSnapshot* listener_ = nullptr;
  const ClusterSnapshot* cluster_ = nullptr;
  uint64_t hash_ = 0;
  bool in_rotation_ = false;   // keyless round_robin: positions count from rotation_start_
  uint32_t rotation_start_ = 0;
  Pick pick_{0, 0, PickReason::kOwner};
  const BackendSnapshot* backend_ = nullptr;
  BackendWorkerStats* stats_ = nullptr;
  uint32_t retries_used_ = 0;
  bool live_ = false;          // backend_'s live load carries our unit
};

}  // namespace lb
