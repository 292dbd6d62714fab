// The redis and memcached read-through's counters (lb/proxy/cache/handover_reads.h), one slot
// per worker, each written by its worker alone and summed by /metrics:
//
//   lb_handover_reads_total{result}    a miss at the new owner read from the previous host:
//                                      hit (the client got its value), miss, error (the
//                                      previous host failed or timed out: the client got
//                                      the owner's miss)
//   lb_handover_copies_total{result}   a hit copied to the new owner without overwriting:
//                                      stored, not_stored (the owner had the key by then),
//                                      error
//   lb_handover_deletes_total{result}  a write of a moved key followed by a delete at its
//                                      previous host: ok (done, or nothing to delete), error
//
// The same read-through serves a cluster's replicas (a miss or a failure at a key's copy read
// from its next copy), counted apart:
//
//   lb_replica_reads_total{result}     primary (the first copy read answered), replica (it
//                                      missed or failed, and the next copy had the value),
//                                      miss (no copy had it), error (no copy answered)
#pragma once

#include <memory>

#include "lb/core/stats.h"

namespace lb {

enum class HandoverRead : uint8_t { kHit, kMiss, kError, kCount };
enum class HandoverCopy : uint8_t { kStored, kNotStored, kError, kCount };
enum class HandoverDelete : uint8_t { kOk, kError, kCount };

enum class ReplicaReadResult : uint8_t { kPrimary, kReplica, kMiss, kError, kCount };

inline const char* replicaReadName(ReplicaReadResult r) noexcept {
  static constexpr const char* kNames[] = {"primary", "replica", "miss", "error"};
  return kNames[static_cast<int>(r)];
}

inline const char* handoverReadName(HandoverRead r) noexcept {
  static constexpr const char* kNames[] = {"hit", "miss", "error"};
  return kNames[static_cast<int>(r)];
}
inline const char* handoverCopyName(HandoverCopy r) noexcept {
  static constexpr const char* kNames[] = {"stored", "not_stored", "error"};
  return kNames[static_cast<int>(r)];
}
inline const char* handoverDeleteName(HandoverDelete r) noexcept {
  static constexpr const char* kNames[] = {"ok", "error"};
  return kNames[static_cast<int>(r)];
}

struct alignas(64) HandoverWorkerStats {
  StatCounter reads[static_cast<int>(HandoverRead::kCount)];
  StatCounter copies[static_cast<int>(HandoverCopy::kCount)];
  StatCounter deletes[static_cast<int>(HandoverDelete::kCount)];
  StatCounter replica_reads[static_cast<int>(ReplicaReadResult::kCount)];
};

class HandoverStats {
 public:
  explicit HandoverStats(unsigned workers)
      : workers_(workers == 0 ? 1 : workers),
        per_worker_(std::make_unique<HandoverWorkerStats[]>(workers_)) {}
  HandoverStats(const HandoverStats&) = delete;
  HandoverStats& operator=(const HandoverStats&) = delete;

  // Worker `w`'s slot; a worker past the ones this was made for (a test's hand-built
  // cluster) shares the last.
  HandoverWorkerStats& worker(unsigned w) noexcept {
    return per_worker_[w < workers_ ? w : workers_ - 1];
  }
  unsigned workers() const noexcept { return workers_; }
  const HandoverWorkerStats& at(unsigned w) const noexcept { return per_worker_[w]; }

 private:
  const unsigned workers_;
  std::unique_ptr<HandoverWorkerStats[]> per_worker_;
};

}  // namespace lb
