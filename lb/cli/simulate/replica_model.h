// Replicas in `lb simulate` (docs/analyze.md, "Zones and replicas"): where a key's copies are
// and how a read goes through them, as lb's cache engine does it
// (lb/proxy/cache/cache_session_replicas.cc, handover_reads.h), over the model's fleet of LRU
// caches and its health marks.
#pragma once

#include <cstdint>
#include <vector>

#include "lb/cli/simulate/lru_fleet.h"
#include "lb/routing/snapshot.h"

namespace lb {

// A key's copies, as global server ids, in the key's order.
struct SimCopies {
  static constexpr uint32_t kMax = 8;
  uint32_t ids[kMax] = {};
  uint32_t n = 0;
};

// The key's copies as lb's write picks them (ClusterSnapshot::pickReplicas): the first
// `replicas` hosts of its order that health has marked up. `ids` maps table hosts to global
// server ids.
SimCopies simCopies(const ClusterSnapshot& routed, const std::vector<uint32_t>& ids,
                    uint64_t hash, uint32_t replicas, const std::vector<uint8_t>& marked);

// What a read through the copies did.
struct SimCopyRead {
  uint32_t served = LruFleet::kNone;   // the copy read first (kNone: none reachable)
  uint32_t value = LruFleet::kNone;    // the version found (kNone: a miss everywhere)
  // found at a later copy than the first (the primary failed or missed); copied back into
  // the copy read first when that one missed
  bool from_replica = false;
};

// A read of `key`: the first reachable copy; on a miss there, the next reachable copies in
// order, a hit found there filled back into the first. A miss everywhere fills nothing (the
// caller's cache-aside write does, at every copy).
SimCopyRead simReadCopies(LruFleet& fleet, const SimCopies& copies,
                          const std::vector<uint8_t>& reachable, uint32_t key);

// The zone-aware order over `table` for servers in zone id % zones (lb/routing/zone_order.h);
// `table` itself when zones < 2.
std::unique_ptr<SelectorTable> simZoneTable(std::unique_ptr<SelectorTable> table,
                                            const std::vector<uint32_t>& ids, uint32_t zones);

}  // namespace lb
