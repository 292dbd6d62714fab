#include "lb/cli/simulate/replica_model.h"

#include <utility>

#include "lb/routing/zone_order.h"

namespace lb {

SimCopies simCopies(const ClusterSnapshot& routed, const std::vector<uint32_t>& ids,
                    uint64_t hash, uint32_t replicas, const std::vector<uint8_t>& marked) {
  SimCopies c;
  const uint32_t hosts = routed.hostCount();
  for (uint32_t a = 0; a < hosts && c.n < replicas && c.n < SimCopies::kMax; ++a) {
    const uint32_t id = ids[routed.hostAt(hash, a)];
    if (marked[id]) c.ids[c.n++] = id;
  }
  return c;
}

SimCopyRead simReadCopies(LruFleet& fleet, const SimCopies& copies,
                          const std::vector<uint8_t>& reachable, uint32_t key) {
  SimCopyRead r;
  for (uint32_t i = 0; i < copies.n; ++i) {
    const uint32_t id = copies.ids[i];
    if (!reachable[id]) continue;   // a failed copy: lb reads the next within the command
    if (r.served == LruFleet::kNone) r.served = id;
    r.value = fleet.touch(id, key);
    if (r.value == LruFleet::kNone) continue;
    r.from_replica = i > 0;   // the primary failed or missed: a later copy answered
    if (id != r.served) fleet.fill(r.served, key, r.value);   // back with NX where it missed
    return r;
  }
  return r;
}

std::unique_ptr<SelectorTable> simZoneTable(std::unique_ptr<SelectorTable> table,
                                            const std::vector<uint32_t>& ids, uint32_t zones) {
  if (zones < 2 || !table) return table;
  std::vector<uint8_t> zone_of;
  for (const uint32_t id : ids) zone_of.push_back(static_cast<uint8_t>(id % zones));
  return std::make_unique<ZoneOrderTable>(std::move(table), std::move(zone_of), zones);
}

}  // namespace lb
