// The zone-aware preference order: a key's hosts as the selector orders them, walked the way
// Cassandra's NetworkTopologyStrategy walks racks. A host whose zone the walk has already used
// is set aside until every zone has one; then the set-aside hosts follow in the selector's
// order, and after them the rest. Since every host set aside comes before every host after
// it in that order, the result is: the first host of each zone, in the selector's order, then
// every other host, in the selector's order.
//
// The first host is the selector's own owner, so setting zones on a fleet moves no primary;
// what changes is who comes second. Retries, failover, bounded-load spill, hot-key spread,
// replicas and handover all walk this order (they all read SelectorTable::pick), so a key's
// next host is in another failure domain whenever the fleet has one.
//
// Envoy's zone-aware routing does not apply to its ring hash or Maglev balancers, and
// mcrouter's replicated pools are written out by hand; this is the walk a Dynamo-style store
// uses for its replicas, applied to a cache fleet's hash table.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "plugins/selector.h"

namespace lb {

class ZoneOrderTable final : public SelectorTable {
 public:
  // zone_of[h]: the zone index (< 64) of host h of `inner`; `zones`: how many indices are used.
  ZoneOrderTable(std::unique_ptr<SelectorTable> inner, std::vector<uint8_t> zone_of,
                 uint32_t zones);

  // attempt 0 is inner's owner. Attempt k walks at most k + zones positions of inner's order
  // (twice over for k past the zones), so replicas and first retries cost a few inner picks.
  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override;
  uint32_t hostCount() const noexcept override { return hosts_; }
  size_t memoryBytes() const noexcept override;

  // The selector's own order, without zones (lb analyze compares the two).
  const SelectorTable& inner() const noexcept { return *inner_; }

 private:
  std::unique_ptr<SelectorTable> inner_;
  std::vector<uint8_t> zone_of_;
  uint64_t all_zones_;   // one bit per zone index in use
  uint32_t hosts_;
};

// The zone index of each of the cluster's backends, in first-seen order ("" , no zone, is a
// zone of its own), and how many there are.
std::vector<uint8_t> zoneIndices(const std::vector<BackendConfig>& backends, uint32_t* zones);

// The cluster's table as every caller routes by it: the selector's table over its backends,
// in the zone-aware order when they name two zones or more. nullptr when the selector cannot
// build one (validation has refused what would make it so).
std::unique_ptr<SelectorTable> buildClusterTable(const ClusterConfig& cluster,
                                                 const SelectorInfo& selector);

}  // namespace lb
