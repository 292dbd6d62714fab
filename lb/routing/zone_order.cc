#include "lb/routing/zone_order.h"

#include <algorithm>
#include <utility>

#include "lb/routing/cluster_table.h"

namespace lb {

ZoneOrderTable::ZoneOrderTable(std::unique_ptr<SelectorTable> inner, std::vector<uint8_t> zone_of,
                               uint32_t zones)
    : inner_(std::move(inner)),
      zone_of_(std::move(zone_of)),
      all_zones_(zones >= 64 ? ~uint64_t{0} : (uint64_t{1} << zones) - 1),
      hosts_(inner_->hostCount()) {}

uint32_t ZoneOrderTable::pick(uint64_t hash, uint32_t attempt) const noexcept {
  if (attempt >= hosts_) attempt %= hosts_;
  if (attempt == 0) return inner_->pick(hash, 0);
  // The first host of each zone, in the selector's order, until every zone has one.
  uint64_t used = 0;
  uint32_t found = 0;
  for (uint32_t a = 0; a < hosts_ && used != all_zones_; ++a) {
    const uint32_t h = inner_->pick(hash, a);
    const uint64_t bit = uint64_t{1} << zone_of_[h];
    if (used & bit) continue;   // set aside until every zone is used
    used |= bit;
    if (found++ == attempt) return h;
  }
  // Then every other host in the selector's order: the set-aside ones come first there. The
  // first host of each zone is again the first of that zone this walk meets.
  uint64_t met = 0;
  for (uint32_t a = 0; a < hosts_; ++a) {
    const uint32_t h = inner_->pick(hash, a);
    const uint64_t bit = uint64_t{1} << zone_of_[h];
    if (!(met & bit)) {
      met |= bit;
      continue;
    }
    if (found++ == attempt) return h;
  }
  return inner_->pick(hash, 0);   // not reached: the two walks name every host once
}

size_t ZoneOrderTable::memoryBytes() const noexcept {
  return inner_->memoryBytes() + zone_of_.capacity() + sizeof(*this);
}

std::vector<uint8_t> zoneIndices(const std::vector<BackendConfig>& backends, uint32_t* zones) {
  std::vector<std::string_view> names;
  std::vector<uint8_t> index;
  index.reserve(backends.size());
  for (const BackendConfig& b : backends) {
    auto it = std::find(names.begin(), names.end(), b.zone);
    if (it == names.end()) it = names.insert(names.end(), b.zone);
    index.push_back(static_cast<uint8_t>(it - names.begin()));
  }
  *zones = static_cast<uint32_t>(names.size());
  return index;
}

std::unique_ptr<SelectorTable> buildClusterTable(const ClusterConfig& cluster,
                                                 const SelectorInfo& selector) {
  auto table = selector.build(hostSpecsOf(cluster), selectorOptionsOf(cluster));
  if (!table) return table;
  uint32_t zones = 0;
  std::vector<uint8_t> zone_of = zoneIndices(cluster.backends, &zones);
  // One zone (or none written) is the selector's order itself; more than 64 the validation
  // refused.
  if (zones < 2 || zones > 64) return table;
  return std::make_unique<ZoneOrderTable>(std::move(table), std::move(zone_of), zones);
}

}  // namespace lb
