// twemproxy: nutcracker's `distribution: ketama` continuum, point for point (twitter/twemproxy
// src/hashkit/nc_ketama.c, ketama_update and ketama_dispatch, as nutcracker 0.5.0 ships it),
// so that a fleet moving from twemproxy keeps every key on the server that already holds it.
// The key hash is the cluster's choice (`twemproxy.hash`, plugins/selectors/twemproxy_hash.h);
// the continuum's own points are always MD5.
//
// Points. With n servers of total weight W, a server of weight w gets
//   points = floor(w/W * 160/4 * n + 1e-10) * 4
// evaluated in single precision as nutcracker does (twemproxyPointsPerServer): 160 when the
// weights are equal, except at the server counts where 1/n rounded to float falls short
// (25, 47, 50, 55, 61, ...: 156 each). Its points come 4 from each MD5 digest of "NAME-i",
// i = 0, 1, ... in decimal, NAME being the server's name in nutcracker.yml (here the backend's
// hash_key): digest bytes 4x..4x+3, little-endian, are point x of that digest.
// A server line without a name ("10.0.0.1:6379:1") is named "host:port" by nutcracker, or just
// "host" when the port is 11211 (libmemcached's convention); set hash_key to that.
// Sorted by value; nutcracker's qsort is glibc's merge sort, stable, so equal values keep
// the order they were made in (server, then i, then x), and nutcracker's server order is by
// name, not the file's (nutcrackerOrder below): MD5("t307-30") and MD5("t570-31") tie, and
// t307's point comes first however the file lists them. A tie needs two MD5 words to
// collide: about points^2 / 2^33 per ring, so a few on a 1000-server ring. No point is dropped.
// Lookup: the first point >= the key hash, wrapping past the last (ketama_dispatch); retries
// walk clockwise skipping hosts already met. nutcracker with auto_eject_hosts drops a failed
// server's points instead; with equal weights the survivors usually keep theirs (not across
// the server counts above), so a failed host's keys land on the next host lb's walk gives.
//
// `distribution: modula` (nc_modula.c, modula_update and modula_dispatch): a list of
// servers, each once per unit of its weight, and the key's server is list[hash % length].
// The list follows nutcracker's server order, which is not the file's: conf_validate_server
// sorts a pool's servers by name before they are built (string_compare: shorter names first,
// equal lengths bytewise), so lb sorts its hosts by hash_key the same way (nutcrackerOrder).
// nutcracker with auto_eject_hosts rebuilds the list without the ejected server, which moves
// nearly every key (a new modulus); lb never ejects from the table: attempt k > 0 is the k-th
// next distinct host along the list from the key's slot, wrapping, so only a failed host's
// keys move, each to its next neighbour on the list.
#include <algorithm>
#include <cmath>
#include <string>

#include "plugins/selectors/point_ring.h"
#include "plugins/selectors/selectors.h"
#include "plugins/selectors/twemproxy_hash.h"

namespace lb {
namespace {

// nutcracker's server order: conf_validate_server sorts a pool's servers with string_compare
// (a shorter name first, equal lengths bytewise) before they are built, whatever the file's
// order. Names are distinct (validated), so the order is total.
std::vector<uint32_t> nutcrackerOrder(std::span<const HostSpec> hosts) {
  std::vector<uint32_t> order(hosts.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const std::string& x = hosts[a].hash_key;
    const std::string& y = hosts[b].hash_key;
    if (x.size() != y.size()) return x.size() < y.size();
    return x < y;   // char_traits<char> compares as unsigned char, as strncmp does
  });
  return order;
}

using Ring = selector_detail::PointRing<uint32_t>;

constexpr uint32_t kPointsPerServer = 160;   // KETAMA_POINTS_PER_SERVER
constexpr uint32_t kPointsPerHash = 4;       // one MD5 digest gives four 32-bit points

}  // namespace

uint32_t twemproxyPointsPerServer(uint32_t weight, uint32_t total_weight,
                                  uint32_t servers) noexcept {
  // Operation for operation as nc_ketama.c writes it, types included: float products, a double
  // sum with 1e-10, rounded back to float before floorf (which loses the 1e-10 whenever the
  // product is not tiny). No float addition follows a float product, so FMA contraction,
  // were it on, could not change the result.
  const float pct = static_cast<float>(weight) / static_cast<float>(total_weight);
  const float scaled = pct * kPointsPerServer / kPointsPerHash * static_cast<float>(servers);
  const float nudged = static_cast<float>(static_cast<double>(scaled) + 0.0000000001);
  return static_cast<uint32_t>(std::floor(nudged) * kPointsPerHash);
}

std::vector<ContinuumPoint> twemproxyContinuum(std::span<const HostSpec> hosts) {
  uint32_t total_weight = 0;
  for (const HostSpec& h : hosts) total_weight += std::max<uint32_t>(h.weight, 1);
  const uint32_t servers = static_cast<uint32_t>(hosts.size());

  std::vector<ContinuumPoint> points;
  points.reserve(size_t{kPointsPerServer} * servers);
  std::string name;
  for (uint32_t host : nutcrackerOrder(hosts)) {
    const uint32_t n = twemproxyPointsPerServer(std::max<uint32_t>(hosts[host].weight, 1),
                                                total_weight, servers);
    name.assign(hosts[host].hash_key);
    name.push_back('-');
    const size_t prefix = name.size();
    for (uint32_t i = 0; i < n / kPointsPerHash; ++i) {
      name.resize(prefix);
      name += std::to_string(i);
      const auto d = twemproxy::md5Digest(name);
      for (uint32_t x = 0; x < kPointsPerHash; ++x) {
        const uint32_t value = uint32_t{d[4 * x]} | uint32_t{d[4 * x + 1]} << 8 |
                               uint32_t{d[4 * x + 2]} << 16 | uint32_t{d[4 * x + 3]} << 24;
        points.push_back({value, host});
      }
    }
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const ContinuumPoint& a, const ContinuumPoint& b) {
                     return a.value < b.value;
                   });
  return points;
}

std::vector<uint32_t> twemproxyModulaList(std::span<const HostSpec> hosts) {
  std::vector<uint32_t> list;
  for (uint32_t host : nutcrackerOrder(hosts))
    for (uint32_t w = 0; w < std::max<uint32_t>(hosts[host].weight, 1); ++w) list.push_back(host);
  return list;
}

namespace {

class ModulaTable final : public SelectorTable {
 public:
  ModulaTable(std::vector<uint32_t> list, uint32_t host_count)
      : list_(std::move(list)), host_count_(host_count) {}

  // modula_dispatch takes the 32-bit key hash; a combined multi-source hash is folded to its
  // low half, as the ketama ring does. Every host is on the list, so the walk meets them all
  // within one lap (nthDistinct's contract).
  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    if (host_count_ == 0) return 0;
    const size_t n = list_.size();
    const size_t start = static_cast<uint32_t>(hash) % n;
    return selector_detail::nthDistinct(
        attempt % host_count_, host_count_, [&](uint64_t i) noexcept -> uint32_t {
          return list_[(start + i) % n];
        });
  }
  uint32_t hostCount() const noexcept override { return host_count_; }
  size_t memoryBytes() const noexcept override {
    return sizeof(*this) + list_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<uint32_t> list_;
  uint32_t host_count_;
};

}  // namespace

std::unique_ptr<SelectorTable> buildTwemproxy(std::span<const HostSpec> hosts,
                                              const SelectorOptions& options) {
  if (options.modula)
    return std::make_unique<ModulaTable>(twemproxyModulaList(hosts),
                                         static_cast<uint32_t>(hosts.size()));
  // ketama: nutcracker has no knob, 160 points per server, shared by weight
  const std::vector<ContinuumPoint> continuum = twemproxyContinuum(hosts);
  std::vector<Ring::Point> points;
  points.reserve(continuum.size());
  for (const ContinuumPoint& p : continuum) points.push_back({p.value, p.host});
  return std::make_unique<selector_detail::PointRingTable<uint32_t>>(
      Ring(points, static_cast<uint32_t>(hosts.size())));
}

}  // namespace lb
