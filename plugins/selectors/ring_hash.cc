// ring_hash: Karger et al.'s consistent hashing ring ("Consistent Hashing and Random Trees",
// STOC 1997) as Envoy's ring_hash load balancer builds it, with one deliberate difference: the
// number of points per host is fixed (vnodes per unit of weight, default 160), never scaled to
// the host count, so adding or removing a host moves only that host's keys (Envoy scales to a
// min/max ring size and its users see keys move between two other hosts when one leaves).
//
// Point scheme (pinned by the golden tests; changing it remaps every key):
//   host with hash_key K and weight w owns points XXH64("K_<i>", seed 0), i = 0 .. vnodes*w - 1,
//   <i> in decimal without padding. Points are sorted by hash, ties by hash_key, so neither the
//   order of the backends nor their addresses matter.
// Lookup: the first point with hash >= key hash, wrapping past the last (as Envoy, HAProxy).
#include <algorithm>
#include <cassert>
#include <charconv>
#include <string>

#include "lb/core/hash.h"
#include "plugins/selectors/point_ring.h"
#include "plugins/selectors/selectors.h"

namespace lb {
namespace {

using Ring = selector_detail::PointRing<uint64_t>;

}  // namespace

std::unique_ptr<SelectorTable> buildRingHash(std::span<const HostSpec> hosts,
                                             const SelectorOptions& options) {
  assert(options.vnodes >= 1);
  const uint64_t vnodes = std::max<uint32_t>(options.vnodes, 1);
  uint64_t total = 0;
  for (const HostSpec& h : hosts) total += vnodes * std::max<uint32_t>(h.weight, 1);
  assert(total <= UINT32_MAX);

  std::vector<Ring::Point> points;
  points.reserve(total);
  std::string buf;
  for (uint32_t host = 0; host < hosts.size(); ++host) {
    const std::string& key = hosts[host].hash_key;
    const uint64_t n = vnodes * std::max<uint32_t>(hosts[host].weight, 1);
    buf.assign(key);
    buf.push_back('_');
    const size_t prefix = buf.size();
    for (uint64_t i = 0; i < n; ++i) {
      char digits[24];
      auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), i);
      (void)ec;  // 24 bytes always hold a uint64_t
      buf.resize(prefix);
      buf.append(digits, end);
      points.push_back({xxh64(buf), host});
    }
  }
  std::sort(points.begin(), points.end(), [&](const Ring::Point& a, const Ring::Point& b) {
    if (a.hash != b.hash) return a.hash < b.hash;
    return hosts[a.host].hash_key < hosts[b.host].hash_key;
  });
  return std::make_unique<selector_detail::PointRingTable<uint64_t>>(
      Ring(points, static_cast<uint32_t>(hosts.size())));
}

}  // namespace lb
