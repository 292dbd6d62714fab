// One worker's share of the cache protocols (redis, memcached): its pipelined server
// connections, the free lists commands and fragments come from, its flush list, and scratch
// space a session parses into: the worker's WorkerService for redis and memcached, made on
// its first cache client (CacheWorker::of); Worker::shutdownLoop closes it.
//
// Server connections, as twemproxy keeps them: a few long-lived connections per backend
// (clusters.NAME.server_connections, default 1), shared by every client of the worker, each
// carrying many clients' commands at once. They are grouped by backend:
//
//   ServerTable   one per (snapshot, cluster, protocol): the group of each host, by
//                      host index, so a session finds its server in O(1). Held by the
//                      sessions that route with that snapshot.
//   ServerGroup   one per (backend, address, protocol, password, connection count):
//                      its connections. Shared by the tables of every snapshot that keeps the
//                      backend unchanged, so a reload that does not touch a backend keeps its
//                      connections; a group no table uses any more retires (each connection
//                      closes once its queue is empty).
//
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lb/routing/snapshot.h"
#include "lb/proxy/cache/command.h"
#include "lb/proxy/cache/server_connection.h"
#include "lb/proxy/cache/wire.h"
#include "lb/runtime/flush_list.h"
#include "lb/proxy/cache/handover_reads.h"
#include "lb/proxy/cache/near_cache.h"
#include "lb/runtime/backend_attempt.h"
#include "lb/runtime/worker_env.h"

namespace lb {


struct ServerTable {
  uint64_t generation = 0;           // the snapshot's
  uint32_t cluster = 0;              // its index in the snapshot
  const CacheWire* wire = nullptr;
  std::vector<ServerGroup*> hosts;   // by host index
  uint32_t sessions = 0;             // sessions that hold it
  // The cluster's near cache on this worker (hot_keys.near_cache), shared by the tables of
  // every snapshot with the same cluster state and bounds; null when it is off.
  std::shared_ptr<NearCache> near;
  // The worker's owner of the cluster's handover copies and deletes (handover_reads.h), when
  // the cluster has a handover and the protocol reads through; null otherwise.
  HandoverSink* handover = nullptr;
};

// Scratch a session fills while it parses and dispatches one command, then forgets: never
// held across callbacks, so one per worker serves every session. Grows to the largest
// command seen (bounded by limits.max_arguments), then allocates no more.
struct CacheScratch {
  std::vector<std::string_view> args;
  std::string text;                  // decoded inline arguments
  std::vector<uint32_t> hosts;       // the host of each key
  std::vector<uint32_t> order;       // key indices sorted by fragment
  std::vector<int32_t> fragment_of_host;   // -1 between uses; sized to the largest cluster
  std::vector<uint32_t> cursor;      // per fragment: a position while splitting or merging
  std::vector<uint32_t> fragment_hosts;   // the host of each fragment
  std::vector<std::string_view> keys;     // a split command's keys
  std::vector<uint16_t> key_fragments;    // the fragment of each of them
  // MGET with a near cache: the keys sent on (their client index), each one's element in
  // its fragment's reply, and each key's value from the near cache (bytes null: sent on).
  std::vector<uint32_t> near_remote;
  std::vector<uint32_t> near_element;
  std::vector<FragmentReply> near_hits;
  // A write of several keys with replicas: (host << 32 | key) of each copy past the first.
  std::vector<uint64_t> copies;
};

class CacheWorker final : public ServerConnectionHost, public WorkerService {
 public:
  // `env` outlives this; the flush list's handle starts on env's loop.
  explicit CacheWorker(WorkerEnv& env);
  ~CacheWorker();
  CacheWorker(const CacheWorker&) = delete;
  CacheWorker& operator=(const CacheWorker&) = delete;

  // The worker's CacheWorker, made on first use (a worker without redis or memcached
  // listeners never has one).
  static CacheWorker& of(WorkerEnv& env) noexcept;

  WorkerEnv& env() noexcept override { return env_; }
  FlushList& flushes() noexcept override { return flushes_; }
  CacheScratch& scratch() noexcept { return scratch_; }
  // The admission of the command being dispatched: its hosts' units of live load.
  CommandPicks& picks() noexcept { return picks_; }

  // Free lists. new* never fails silently: nullptr only when memory is exhausted.
  CacheCommand* newCommand() noexcept;
  void freeCommand(CacheCommand* c) noexcept;
  CacheFragment* newFragment() noexcept;
  void freeFragment(CacheFragment* f) noexcept override;
  // Objects handed out and not returned (a test checks that nothing leaks).
  size_t commandsOut() const noexcept { return commands_out_; }
  size_t fragmentsOut() const noexcept { return fragments_out_; }

  // The servers of cluster `cluster` of `snapshot` for `wire`'s protocol, held for one
  // session until releaseTable. nullptr only when memory is exhausted.
  ServerTable* holdTable(const Snapshot& snapshot, uint32_t cluster,
                              const CacheWire& wire) noexcept;
  void releaseTable(ServerTable* table) noexcept;
  // The worker has a new snapshot: tables of older ones that no session holds go, and the
  // groups only they used retire.
  void snapshotChanged(uint64_t generation) noexcept override;
  // Server `s` of `group` has closed for good and is freeing itself.
  void serverGone(ServerGroup* group, ServerConnection* s) noexcept override;

  // Worker stop: every server connection closes now (their fragments are failed), and the
  // flush list's handle closes. Sessions are aborted before this.
  void close() noexcept override;

  size_t serverCount() const noexcept;   // open server connections (tests)

 private:
  ServerGroup* group(const BackendSnapshot& backend, const CacheWire& wire,
                          const ClusterConfig& cluster);
  void dropTable(size_t index) noexcept;
  std::shared_ptr<NearCache> nearCacheOf(const ClusterSnapshot& cluster);
  HandoverSink* handoverSinkOf(const ClusterSnapshot& cluster, const CacheWire& wire);
  void retireGroup(ServerGroup* g) noexcept;

  WorkerEnv& env_;
  FlushList flushes_;
  CacheScratch scratch_;
  CommandPicks picks_;
  std::vector<CacheCommand*> free_commands_;
  std::vector<CacheFragment*> free_fragments_;
  size_t commands_out_ = 0;
  size_t fragments_out_ = 0;
  uint64_t generation_ = 0;          // the newest snapshot this worker has seen
  std::vector<ServerTable*> tables_;
  std::vector<ServerGroup*> groups_;
  // Near caches by cluster state, weakly: a cache lives while a table holds it.
  struct NearSlot {
    const ClusterState* state;
    NearCacheLimits limits;
    std::weak_ptr<NearCache> cache;
  };
  std::vector<NearSlot> near_;
  // One per cluster state and protocol that ever had a handover: a few, kept for the
  // worker's life, since copies and deletes in flight point at them.
  std::vector<std::unique_ptr<HandoverSink>> sinks_;
  uint32_t next_group_id_ = 1;
  bool closed_ = false;
};

}  // namespace lb
