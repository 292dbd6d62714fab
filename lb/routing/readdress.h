// Snapshots derived from the running one without a reload: new backend addresses, for the
// re-resolution of host names (clusters.NAME.resolve_interval; lb/app/dns_refresh.h drives
// it on the main thread), and the leaving backends dropped when their handover window ends
// (lb/routing/handover.h; lb/app/lifecycle.h drives it).
//
// An address is not an identity: a backend's place among the keys comes from its hash_key.
// So a new address changes nothing but the address: the derived snapshot shares the
// running one's config generation, selector tables, bounded-load weights, key chains,
// backend and listener state and access log. No table is rebuilt, no key moves, no counter
// resets, no listener is touched. Workers take it exactly as they take a reload's snapshot;
// requests in flight finish on the snapshot they started with, and a pooled connection to
// the old address is closed instead of reused (UpstreamPool::take compares addresses).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lb/routing/snapshot.h"

namespace lb {

// One backend whose host name now resolves to another address.
struct AddressChange {
  uint32_t cluster = 0;   // index into Snapshot::clusters
  uint32_t backend = 0;   // index into that cluster's backends
  sockaddr_storage address{};
  socklen_t address_len = 0;
};

// The distinct host names of `cluster`'s backend addresses, in file order (numeric addresses
// have none). Pure.
std::vector<std::string> hostNamesOf(const ClusterConfig& cluster);

// For every backend of the clusters listed in `clusters` (indexes into base.clusters) whose
// address names a host that `answers` holds: the answer with the backend's port, when it
// differs from the address the backend has in `base`. Names missing from `answers` (they did
// not resolve this time) keep their last address and yield nothing. Pure.
std::vector<AddressChange> addressChanges(const Snapshot& base, std::span<const uint32_t> clusters,
                                          const ResolvedHosts& answers);

// A copy of `base` with `changes` applied, sharing everything listed at the top of this file;
// only the round-robin rotations (on_missing_key = "round_robin") start afresh, as after a
// reload. Main thread.
std::shared_ptr<const Snapshot> withAddresses(const Snapshot& base,
                                              std::span<const AddressChange> changes);

// The earliest end (ms since the epoch) of a handover window that keeps leaving backends in
// `snap`; 0 when none does. Pure.
int64_t leavingUntil(const Snapshot& snap);

// A copy of `base`, as above, as generation `generation` (so that workers close what they
// held for the old one), without the leaving backends and windows of the clusters whose
// window ended by `now_ms`. Its clusters keep their tables: no key moves. Main thread.
std::shared_ptr<const Snapshot> withoutLeaving(const Snapshot& base, uint64_t generation,
                                               int64_t now_ms);

}  // namespace lb
