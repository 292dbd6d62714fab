// The way from a key to a backend, the same admission for every protocol's session: HTTP and
// TCP through a BackendAttempt (one host per request or connection), the cache protocols
// through CommandPicks (one host per fragment of a command):
//
//   begin(key) or beginKeyless()          a new request (HTTP) or connection (TCP)
//   pickFirst()                           the key's host: bounded loads or the health-aware
//                                         preference walk (ClusterSnapshot::pick); keyless
//                                         round_robin: the worker's rotation in table order;
//                                         a hot key's spread: the least loaded of its first
//                                         hosts (begin's `spread`)
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
#include <vector>

#include "lb/config/backends.h"
#include "lb/routing/snapshot.h"
#include "lb/runtime/upstream_pool.h"

namespace lb {

class WorkerEnv;

// The admission of one cache command (redis, memcached): a pick per key, one fragment per
// host its keys land on. Each host picked carries one unit of live load for the command,
// taken at the pick exactly as BackendAttempt takes it (the bounded-load compare-and-swap
// under the host's cap, else added) and counted by reason (lb_backend_picks_total); the
// session hands each unit to the fragment it sends there (handOver), and the server
// connection gives it back when the fragment leaves its queue (reply, failure, or the late
// reply of a timed-out or detached one). A unit no fragment took (the command was refused
// after its picks: CROSSSLOT, a key with no backend, out of memory) goes back at release().
//
// A host the command already holds is admitted for its later keys without a second unit,
// whatever its load: the command's own unit must not push its other keys elsewhere (keys
// that share a hash tag would split, and MSETNX or EVAL be refused as CROSSSLOT).
//
// One per worker (the cache worker's), used by one command at a time: a command's picks
// and sends all happen inside one parse. Loop thread; nothing allocates once reserveHosts
// has sized it for the largest cluster.
// The most copies of a key a write goes to (a cluster's replicas, at most kMaxReplicas).
inline constexpr uint32_t kMaxCopies = static_cast<uint32_t>(kMaxReplicas);

class CommandPicks {
 public:
  CommandPicks() = default;
  CommandPicks(const CommandPicks&) = delete;
  CommandPicks& operator=(const CommandPicks&) = delete;
  ~CommandPicks() { release(); }

  // Loop thread, off the request path (a session's start): room for `hosts` backends.
  void reserveHosts(size_t hosts);
  // Loop thread. A new command of `listener` on `cluster`: what the previous one left is
  // given back first. All three must outlive the command's picks.
  void begin(WorkerEnv& env, const ListenerConfig& listener,
             const ClusterSnapshot& cluster) noexcept;
  // Loop thread. The host of a key hashing to `hash`: the cluster's pick (bounded loads,
  // else the health-aware preference order), its unit taken and the pick counted. False
  // when there is no usable host (no backends, or every one is down): nothing taken.
  // With `from`, the pick reads through (PickContext::read_through): *from is where a miss
  // at *host is read from inside a handover window, Pick::kNoHost when nowhere.
  // `read`: a plain read, which a copy of the key may answer (PickContext::replica_read).
  // *from_copy (when given): a miss or a failure is read at the key's next copy
  // (Pick::from_copy).
  bool pickForKey(uint64_t hash, uint32_t* host, uint32_t* from = nullptr,
                  bool read = false, bool* from_copy = nullptr) noexcept;
  // Loop thread. The hosts of a write of a key kept on `count` copies
  // (ClusterSnapshot::pickReplicas), each taken and counted, into hosts[]; how many.
  uint32_t pickReplicas(uint64_t hash, uint32_t count, uint32_t* hosts) noexcept;
  // Loop thread. The same for a command without a key, by the listener's on_missing_key:
  // "random" walks from a random hash, "round_robin" takes the worker's next host in the
  // cluster's rotation (and advances it). False for "reject", or when no host is usable.
  bool pickWithoutKey(uint32_t* host) noexcept;
  // Loop thread. A fragment goes to `host`: the command's unit there is now the fragment's.
  // False when the command held none there (a host this command did not pick).
  bool handOver(uint32_t host) noexcept;
  // Loop thread. Gives back every unit no fragment took. Idempotent.
  void release() noexcept;

 private:
  void take(const Pick& p) noexcept;

  WorkerEnv* env_ = nullptr;
  const ListenerConfig* listener_ = nullptr;
  const ClusterSnapshot* cluster_ = nullptr;
  std::vector<uint8_t> held_;     // by host index: this command holds a unit there
  std::vector<uint32_t> taken_;   // the hosts units were taken on (held_ says which still are)
  uint64_t held_units_ = 0;       // hosts held_ marks
};

class BackendAttempt {
 public:
  BackendAttempt() = default;
  ~BackendAttempt() { release(); }
  BackendAttempt(const BackendAttempt&) = delete;
  BackendAttempt& operator=(const BackendAttempt&) = delete;

  // Loop thread. Starts a walk for a request or connection whose key hashes to `hash`. A live
  // unit still held from the previous walk is given back first. `env`, `listener` and
  // `cluster` must outlive the walk (the session holds their snapshot).
  // `spread` >= 2 (ClusterSnapshot::spreadFor: a hot key, on a request that may spread):
  // the first pick is the least loaded of the key's first `spread` usable hosts
  // (plugins/selectors/hot_spread.h; counted reason kSpread and lb_hotkey_requests_total
  // path "spread"), or the ordinary pick when each of them is at its cap; a retry
  // (pickNext) walks on from the spread pick's position in the same order.
  void begin(WorkerEnv& env, const ListenerSnapshot& listener, const ClusterSnapshot& cluster,
             uint64_t hash, uint32_t spread = 0) noexcept;
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

  // Loop thread. A connection to the picked host, its Connection owned by `owner`: with
  // Pooling::kReuseIdle a pooled idle connection when there is one (UpstreamConn::reused();
  // it is connected), else a new one (the owner's onConnected follows, UV_ETIMEDOUT after
  // timeouts.connect). nullptr with *err when not even a connect could start.
  UpstreamConn* connect(ConnectionOwner& owner, Pooling pooling, int* err) noexcept;

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
  // What this walk asks of the one pick at attempt position `from_attempt`.
  PickContext context(uint32_t from_attempt) const noexcept;
  void take(Pick p) noexcept;

  WorkerEnv* env_ = nullptr;
  const ListenerSnapshot* listener_ = nullptr;
  const ClusterSnapshot* cluster_ = nullptr;
  uint64_t hash_ = 0;
  uint32_t spread_ = 0;        // hosts the first pick may spread over (0: it does not)
  bool in_rotation_ = false;   // keyless round_robin: positions count from rotation_start_
  uint32_t rotation_start_ = 0;
  Pick pick_{0, 0, PickReason::kOwner};
  const BackendSnapshot* backend_ = nullptr;
  BackendWorkerStats* stats_ = nullptr;
  uint32_t retries_used_ = 0;
  bool live_ = false;          // backend_'s live load carries our unit
};

}  // namespace lb
