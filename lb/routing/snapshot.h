// An immutable view of everything a worker needs to route: clusters with their built selector
// tables, listeners with their key plugins, and the long-lived per-backend state. Built on
// the main thread (at start and on reload), handed to each worker, and held by every request
// that started on it until that request ends (docs/architecture.md, "Threads and data").
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lb/config/config.h"
#include "lb/routing/backend_state.h"
#include "lb/routing/handover.h"
#include "lb/routing/pick_context.h"
#include "lb/routing/rotation.h"
#include "plugins/key.h"
#include "plugins/selector.h"
#include "plugins/selectors/bounded_load.h"
#include "plugins/selectors/hot_spread.h"

namespace lb {

class TlsClientContext;   // lb/tls/tls_client_context.h (built by lb/app's ClusterTlsBuilder)

struct BackendSnapshot {
  const BackendConfig* config = nullptr;   // points into Snapshot::config
  // config->address as connect() takes it: the numeric address, or what its host name
  // resolved to (at load, or at the cluster's last re-resolution) with the port set.
  sockaddr_storage address{};
  socklen_t address_len = 0;
  std::shared_ptr<BackendState> state;
  double keyspace_share = 0;                // fraction of the key space this backend owns
  // The cluster's TLS towards its backends (null: plain), the ClusterSnapshot's, here too
  // because a connection is opened knowing only its backend.
  std::shared_ptr<const TlsClientContext> tls;
  // Its zone is lb's own ([lb] zone): a read = "local" pick prefers it among a key's
  // replicas, and a pick of a host not here counts as cross-zone.
  bool local_zone = false;
  bool other_zone = false;   // both lb and it name a zone, and they differ
};

// LoadView over a cluster's shared live-load counters and health flags, and the cluster's
// panic flag. The total is the cluster's one running counter (ClusterLoadState): O(1),
// whatever the number of hosts. In panic every host is usable (the pick routes by the table
// as if all were healthy); the flag is read only when a host is unhealthy, so a pick whose
// host is up pays nothing for it, and one past a down host one relaxed load.
class ClusterLoads final : public LoadView {
 public:
  // `panic` may be null (never in panic): tests that stand a cluster up by hand.
  ClusterLoads(const std::vector<BackendSnapshot>* backends,
               std::shared_ptr<ClusterLoadState> total, const std::atomic<bool>* panic = nullptr)
      : backends_(backends), total_(std::move(total)), panic_(panic) {}
  uint64_t load(uint32_t host) const noexcept override;
  uint64_t totalLoad() const noexcept override;
  bool usable(uint32_t host) const noexcept override;
  bool tryReserve(uint32_t host, uint64_t cap) const noexcept override;
  bool reserves() const noexcept override { return true; }
  // The running total this view reads, for a snapshot rebuilt over the same backends.
  const std::shared_ptr<ClusterLoadState>& totalState() const noexcept { return total_; }

 private:
  const std::vector<BackendSnapshot>* backends_;
  std::shared_ptr<ClusterLoadState> total_;
  const std::atomic<bool>* panic_;
};

struct ClusterSnapshot {
  const ClusterConfig* config = nullptr;
  const SelectorInfo* selector = nullptr;   // selectorOf(*config): its key_hash hashes keys
  // Shared with the snapshots a re-resolution derives from this one (lb/routing/readdress.h):
  // an address is not an identity, so a new address never rebuilds the table.
  std::shared_ptr<const SelectorTable> table;
  std::optional<BoundedLoad> bounded;       // set when hash_balance_factor > 0
  std::vector<BackendSnapshot> backends;    // index = host index in table
  std::shared_ptr<ClusterState> state;      // the panic flag, kept across reloads
  std::unique_ptr<ClusterLoads> loads;
  // Each worker's place in the round-robin rotation for keyless requests (on_missing_key =
  // "round_robin"; lb/routing/rotation.h). Starts afresh with each snapshot.
  Rotation rotation;
  // Where `backends` came from, and the etcd mod_revision that named them (0: from the file).
  MembershipOrigin origin = MembershipOrigin::kFile;
  int64_t revision = 0;
  // tableFingerprint() of this cluster: two instances serving the same table show the same
  // number (lb_cluster_table_fingerprint, /backends, /ring). 0 when there is no table.
  uint64_t fingerprint = 0;
  // The table that served before the last change of owners, while its handover window lasts
  // (the cluster's `handover`); null otherwise.
  std::shared_ptr<const HandoverWindow> handover;
  // The cluster's handover.window in ms (0: off): how long a backend that health brings back
  // takes to get its keys back (BackendState::returned_at_ms).
  int64_t handover_window_ms = 0;
  // The cluster's replicas (1: none), and whether a read that may read a copy goes to the
  // copy in lb's own zone first (read = "local", and some backend is in that zone).
  uint32_t replicas = 1;
  bool local_first = false;
  // A redis or memcached listener serves the cluster: its handover reads through (every pick
  // of the cluster then does, PickContext::read_through) instead of ramping keys over.
  bool reads_through = false;

  // THE pick (lb/routing/pick_context.h names its steps; pick.cc applies them in order). True
  // with *out a usable host (in panic, any host); false when there is none to try: no hosts,
  // every one down, or a retry with no untried usable position left. *out is then the order's
  // first host with kFallback, what a caller that only shows where a key goes prints.
  bool pick(uint64_t hash, const PickContext& ctx, Pick* out) const noexcept;
  // The host a key hashing to `hash`, now at `owner`, was served by before: what a pick
  // that reads through names in Pick::from (its previous owner inside a handover window, or
  // the host that stood in for a returned owner), for a write that deletes it there.
  // Pick::kNoHost when there is none.
  uint32_t handoverFrom(uint64_t hash, uint32_t owner) const noexcept;
  // Step "replicas" for a write: the key's copies, the first `count` usable hosts of its
  // preference order (a down host's copy goes to the next one, where reads walking past it
  // will look), each as a Pick at its position, into out[]; returns how many (fewer when
  // fewer are usable). Bounded loads do not move a copy: reads find it only where it is.
  uint32_t pickReplicas(uint64_t hash, uint32_t count, Pick* out) const noexcept;
  // Where a read of a key with copies, sent to `chosen`, reads a miss or a failure there:
  // the first other of the key's copies (the first `replicas` usable hosts of its order);
  // Pick::kNoHost when there is none.
  uint32_t nextCopyOf(uint64_t hash, uint32_t chosen) const noexcept;
  // The copy a read of the key goes to now (the pick of a read that may read a copy, taking
  // nothing): what a read of several keys, which does not keep each key's host, was read at.
  uint32_t readCopyOf(uint64_t hash) const noexcept;
  // Whether a handover window may be open in the cluster (a membership change's, not yet
  // seen over, or a returned backend's): a read of several keys is then worth reading
  // through key by key. Two relaxed loads at most.
  bool handoverOpen() const noexcept {
    return (handover && !handover->over.value.load(std::memory_order_relaxed)) ||
           (state && state->returns_until_ms.load(std::memory_order_relaxed) != 0);
  }
  // Position `position` of the key's preference order (past the last host it wraps): the
  // order the pick walks, what /ring and lb analyze list. No health, no load.
  uint32_t hostAt(uint64_t hash, uint32_t position) const noexcept {
    return table->pick(hash, position);
  }
  uint32_t hostCount() const noexcept { return table ? table->hostCount() : 0; }
  // A hot key's spread candidates: its first `spread` usable hosts in preference order, what
  // the spread step chooses among and /hotkeys lists as serving the key.
  uint32_t spreadSetOf(uint64_t hash, uint32_t spread, SpreadSet* out) const noexcept;
  // The admission, for every protocol: counts the pick in worker `worker`'s slot
  // (lb_backend_picks_total, and a spread one in lb_hotkey_requests_total) and takes the
  // host's unit of live load, unless the pick reserved it already or the caller `holds` one
  // there (a cache command's later key). Loop thread of `worker`; no lock, no allocation.
  BackendWorkerStats& admit(unsigned worker, const Pick& p, bool holds = false) const noexcept;

  // Loop thread of worker `worker`; the request path. How many hosts a request for the key
  // hashing to `hash` may spread over: hot_keys.spread while the key is in the hot set this
  // worker adopted (HotKeyState::isHot), else 0 (it keeps its owner). Whether the request
  // is one that may spread (HTTP GET, HEAD) is the caller's to say.
  uint32_t spreadFor(unsigned worker, uint64_t hash) const noexcept {
    const uint32_t r = config->hot_keys.spread;
    return r >= 2 && state && state->hot_keys.isHot(worker, hash) ? r : 0;
  }

  // Loop thread of worker `worker`; the request path. Counts one key for hot-key detection
  // (HotKeyState::count): `hash` is the key hash the pick uses, `key` the bytes it came from.
  // A cluster stood up by hand without state counts nothing.
  void countKey(unsigned worker, uint64_t hash, std::string_view key) const noexcept {
    if (state) state->hot_keys.count(worker, hash, key);
  }
};

class KeyChain;        // plugins/keys/key_chain.h
class AccessLogSink;   // lb/core/log_sink.h

class TlsServerContext;   // lb/tls/tls_context.h (built by lb/app's ListenerTlsBuilder)

// One certificate of a TLS listener, for lb_tls_certificate_expiry_timestamp_seconds.
struct TlsCertificateExpiry {
  std::string name;
  double not_after = 0;
};

struct ListenerSnapshot {
  const ListenerConfig* config = nullptr;
  // config->tls made into OpenSSL contexts (null: plain), shared by every worker.
  std::shared_ptr<const TlsServerContext> tls;
  std::vector<TlsCertificateExpiry> tls_expiry;
  uint32_t cluster = 0;                     // index into Snapshot::clusters
  std::shared_ptr<const KeyChain> keys;     // the listener's hash policies, combined
  std::shared_ptr<ListenerState> state;
  sockaddr_storage listen_address{};        // config->listen, resolved
  socklen_t listen_address_len = 0;
};

struct Snapshot {
  Config config;
  std::vector<ClusterSnapshot> clusters;
  std::vector<ListenerSnapshot> listeners;
  uint64_t generation = 0;
  // config.access_log opened (null = off); each snapshot reopens it, so SIGHUP rotates.
  std::shared_ptr<AccessLogSink> access_log;

  const ClusterSnapshot* findCluster(const std::string& name) const;
  const ListenerSnapshot* findListener(const std::string& name) const;
};

// Main thread only. Keeps BackendState, ClusterState and ListenerState alive across reloads
// so that a backend (cluster, name) that stays keeps its live counter, statistics and health.
class StateRegistry {
 public:
  explicit StateRegistry(unsigned workers) : workers_(workers) {}
  std::shared_ptr<BackendState> backend(const std::string& cluster, const std::string& name);
  std::shared_ptr<ClusterState> cluster(const std::string& name);
  std::shared_ptr<ListenerState> listener(const std::string& name);
  // The cluster's running live total, shared by every BackendState of that cluster.
  std::shared_ptr<ClusterLoadState> clusterLoad(const std::string& cluster);
  unsigned workers() const { return workers_; }

 private:
  unsigned workers_;
  std::map<std::string, std::weak_ptr<ClusterLoadState>> cluster_loads_;
  std::map<std::pair<std::string, std::string>, std::weak_ptr<BackendState>> backends_;
  std::map<std::string, std::weak_ptr<ClusterState>> clusters_;
  std::map<std::string, std::weak_ptr<ListenerState>> listeners_;
};

// Host names of backend addresses and the address each resolved to (port 0: each backend
// sets its own). Filled on the main thread by lb/app/resolver.h.
struct ResolvedAddress {
  sockaddr_storage address{};
  socklen_t len = 0;
};
using ResolvedHosts = std::map<std::string, ResolvedAddress, std::less<>>;

// 48 bits (exact in a double, so Prometheus shows it unrounded) of a hash over what decides
// where keys go: every backend's name, address (as configured, so that instances whose DNS
// answers differ still agree), weight and hash_key in table order, and the owner of
// kFingerprintSamples evenly spaced key hashes over the key hash's range. Equal tables give
// equal numbers on every instance and every build; 0 for a cluster with no table. Pure.
inline constexpr uint64_t kFingerprintSamples = 4096;
uint64_t tableFingerprint(const ClusterConfig& cluster, const SelectorTable* table,
                          const KeyHash& key_hash);

// Where each cluster's backends came from, by cluster name, for buildSnapshot: a cluster not
// listed is from the file, revision 0.
struct BackendOrigin {
  MembershipOrigin source = MembershipOrigin::kFile;
  int64_t revision = 0;
  // The membership document's changed_at_ms (0: none): where a handover window it opens
  // starts, so that every instance fed by it ramps alike.
  int64_t changed_at_ms = 0;
};
using BackendOrigins = std::map<std::string, BackendOrigin, std::less<>>;

// The host names of `snap`'s backend addresses with the address each is connected to now
// (port 0): what a snapshot built from its config again, with some backends changed, needs
// for the names it keeps. Main thread.
ResolvedHosts resolvedHostsOf(const Snapshot& snap);

// The fraction of the key space each host owns under `table`, by sampling evenly spaced
// hashes over the key hash's range (key_hash.bits: 64 for XXH64, 32 for CRC32 and most of
// twemproxy's hashes, 15 for its crc32).
std::vector<double> keyspaceShares(const SelectorTable& table, const KeyHash& key_hash);

// Builds tables, turns addresses into socket addresses and builds key plugins. A backend
// address that names a host takes its answer from `resolved`; a name missing there is an
// error (so is any name when `resolved` is null). The config itself was validated when loaded.
// `origins` names the clusters whose backends came from a membership (null: all from the file).
// Main thread. Builds a listener's TLS contexts from config.tls (reads and checks its files):
// null with errors appended (at `file`) when they do not load. Routing stands below lb/tls, so
// lb/app installs the builder once at start; with none, a TLS listener is an error.
using ListenerTlsBuilder = std::shared_ptr<const TlsServerContext> (*)(
    const ListenerConfig& listener, const std::string& file,
    std::vector<TlsCertificateExpiry>* expiry, Errors* errors);
void setListenerTlsBuilder(ListenerTlsBuilder builder);
// The same for a cluster's `tls` (config.tls towards its backends), with a session slot per
// worker (`workers`) and one for the main thread's health checks.
using ClusterTlsBuilder = std::shared_ptr<const TlsClientContext> (*)(
    const ClusterConfig& cluster, const std::string& file, unsigned workers, Errors* errors);
void setClusterTlsBuilder(ClusterTlsBuilder builder);

// `previous` is the snapshot serving now (null at start): a cluster with a handover window
// whose owners change against it keeps its table for the window (lb/routing/handover.h).
Result<std::shared_ptr<const Snapshot>> buildSnapshot(Config config, StateRegistry& registry,
                                                      uint64_t generation,
                                                      const ResolvedHosts* resolved = nullptr,
                                                      const BackendOrigins* origins = nullptr,
                                                      const Snapshot* previous = nullptr);

}  // namespace lb
