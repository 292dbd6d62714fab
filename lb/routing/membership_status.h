// What a cluster's membership source is doing, for /backends, /ready and the metrics: one per
// cluster, in its ClusterState (so it outlives snapshots, as the panic flag does). Written by
// the main thread's membership source (lb/membership/membership_source.h) and read by the
// admin server on the same loop: plain fields, no atomics, never read by a worker. The
// revision and fingerprint a cluster serves belong to its snapshot (ClusterSnapshot), not
// here: they change only with the table.
#pragma once

#include <cstdint>
#include <string>

namespace lb {

// Where a snapshot's backends of one cluster came from (/backends' membership.source).
enum class MembershipOrigin : uint8_t {
  kFile,        // the TOML file's backends (every cluster without a membership, and the fallback)
  kStateFile,   // the membership state file, at a start without etcd
  kEtcd,        // the cluster's etcd key
};
inline const char* membershipOriginName(MembershipOrigin o) noexcept {
  static constexpr const char* kNames[] = {"file", "state_file", "etcd"};
  return kNames[static_cast<int>(o)];
}

struct MembershipStatus {
  bool configured = false;       // the cluster has a membership table (a source runs)
  std::string state = "starting";   // starting, ranging, watching, reconnecting, stopped
  std::string endpoint;          // the etcd URL it talks to now (or last talked to)
  double last_sync = 0;          // when etcd last answered (Range or watch), epoch seconds; 0 never
  bool watch_up = false;         // a watch stream is open and has been confirmed by etcd
  uint64_t applied = 0;          // lb_membership_updates_total{result="applied"}
  uint64_t rejected = 0;         // lb_membership_updates_total{result="rejected"}
  int64_t last_rejected_revision = 0;   // 0: none yet
  std::string last_rejected_reason;
};

}  // namespace lb
