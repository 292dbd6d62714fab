// on_missing_key = "round_robin": a request (HTTP) or connection (TCP) without a key goes to
// the host after the one its worker picked last for the same cluster, in table order (the
// order of `backends` in the file), skipping hosts that are not usable. That is nginx's and
// HAProxy's plain round robin among the servers that are up: with one host of three down, the
// other two alternate, rather than the one after the down host taking its turn too.
//
// Each worker keeps its own place in each cluster's rotation (no shared counter, no atomic
// read-modify-write); with several workers, each rotates on its own. A reload starts every
// rotation afresh at the first host.
#pragma once

#include <cstdint>
#include <memory>

#include "plugins/selectors/bounded_load.h"

namespace lb {

// Attempt k of a keyless request whose rotation starts at table position `start`: the first
// usable host at positions start + k, start + k + 1, ... (modulo `hosts`), never going past
// position start + hosts - 1, so every attempt of one request is a distinct host. Attempt 0's
// host is kOwner, a later one kFailover. When no host from `from_attempt` on is usable:
// {start % hosts, 0, kFallback} (hosts > 0). No allocation.
Pick pickInTableOrder(uint32_t hosts, uint32_t start, const LoadView& loads,
                      uint32_t from_attempt) noexcept;

// Where each worker stands in one cluster's rotation. The cursors are not part of the
// snapshot's meaning (like the live loads, they change while the snapshot is shared), so they
// are written through a const reference; each slot is written only by its own worker.
class Rotation {
 public:
  Rotation() = default;   // no worker slots: every rotation starts at host 0 and stays there
  explicit Rotation(unsigned workers)
      : workers_(workers), slots_(std::make_unique<Slot[]>(workers)) {}

  unsigned workers() const noexcept { return workers_; }
  // Loop thread of `worker`. Table position where this worker's next keyless request starts.
  uint32_t start(unsigned worker) const noexcept {
    return worker < workers_ ? slots_[worker].next : 0;
  }
  // Loop thread of `worker`. `host` was just picked: the rotation continues after it.
  void advancePast(unsigned worker, uint32_t host) const noexcept {
    if (worker < workers_) slots_[worker].next = host + 1;
  }

 private:
  struct alignas(64) Slot {   // one cache line per worker: no false sharing
    uint32_t next = 0;
  };
  unsigned workers_ = 0;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace lb
