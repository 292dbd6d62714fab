// ketama: nginx's `hash $key consistent` ring, point for point (ngx_http_upstream_hash_module.c,
// ngx_http_upstream_init_chash and ngx_http_upstream_get_chash_peer), so that a fleet moving
// from nginx keeps its cache warm. Set each backend's hash_key to nginx's server string
// ("10.0.0.1:11211"); the address itself is never hashed, so readdressing moves no key.
//
// Points (compatible with Cache::Memcached::Fast, as nginx says): the server string splits
// into host and port (splitKetamaServer); base = crc32(host || 0x00 || port); a host of weight w
// owns 160 * w points, point j = crc32(host || 0x00 || port || LE32(point j-1)), point -1 = 0.
// nginx keeps prev_hash in a union and, on big-endian machines, stores its bytes explicitly in
// little-endian order, so the 4 bytes are LE32 everywhere. zlib's crc32(prev, buf, len)
// continues a CRC, so base is computed once per host.
// Sorted by hash; equal hashes keep only the first (nginx's dedupe after qsort). nginx's libc
// qsort on such ties is merge sort, stable in practice, so the earlier server in config order
// wins; this is the one place where the backends' order matters (1 point in ~2^32/points).
// Lookup: CRC32 of the key text (KeyHash::kCrc32), first point >= it, wrapping
// (ngx_http_upstream_find_chash_point); retries walk clockwise point by point, as nginx does
// with hp->hash++, skipping hosts already tried.
#include <zlib.h>

#include <algorithm>
#include <cassert>

#include "plugins/selectors/point_ring.h"
#include "plugins/selectors/selectors.h"

namespace lb {
namespace {

using Ring = selector_detail::PointRing<uint32_t>;
constexpr uint32_t kPointsPerWeight = 160;   // nginx's constant, not options.vnodes

// crc32 continued over len more bytes. zlib returns its initial value (0) for a null buffer,
// whatever crc is passed, and an empty string_view's data() may be null: skip empty updates.
uint32_t crcContinue(uint32_t crc, const void* data, size_t len) {
  if (len == 0) return crc;
  return static_cast<uint32_t>(
      ::crc32(crc, static_cast<const Bytef*>(data), static_cast<uInt>(len)));
}

}  // namespace

KetamaServer splitKetamaServer(std::string_view server) noexcept {
  if (server.size() >= 5) {
    bool unix_prefix = true;
    for (size_t i = 0; i < 5 && unix_prefix; ++i) {
      char c = server[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      unix_prefix = c == "unix:"[i];
    }
    if (unix_prefix) return {server.substr(5), {}};
  }
  for (size_t j = 0; j < server.size(); ++j) {
    const char c = server[server.size() - j - 1];
    if (c == ':')
      return {server.substr(0, server.size() - j - 1), server.substr(server.size() - j)};
    if (c < '0' || c > '9') break;
  }
  return {server, {}};
}

std::unique_ptr<SelectorTable> buildKetama(std::span<const HostSpec> hosts,
                                           const SelectorOptions& options) {
  (void)options;  // nginx has no knob: 160 points per unit of weight
  uint64_t total = 0;
  for (const HostSpec& h : hosts)
    total += uint64_t{kPointsPerWeight} * std::max<uint32_t>(h.weight, 1);
  assert(total <= UINT32_MAX);

  std::vector<Ring::Point> points;
  points.reserve(total);
  for (uint32_t host = 0; host < hosts.size(); ++host) {
    const KetamaServer s = splitKetamaServer(hosts[host].hash_key);
    uint32_t base = crcContinue(0, s.host.data(), s.host.size());
    base = crcContinue(base, "", 1);
    base = crcContinue(base, s.port.data(), s.port.size());
    const uint64_t n = uint64_t{kPointsPerWeight} * std::max<uint32_t>(hosts[host].weight, 1);
    uint32_t prev = 0;
    for (uint64_t j = 0; j < n; ++j) {
      const unsigned char le[4] = {
          static_cast<unsigned char>(prev), static_cast<unsigned char>(prev >> 8),
          static_cast<unsigned char>(prev >> 16), static_cast<unsigned char>(prev >> 24)};
      prev = crcContinue(base, le, sizeof(le));
      points.push_back({prev, host});
    }
  }
  // Stable: equal hashes stay in config order, then the dedupe keeps the first.
  std::stable_sort(points.begin(), points.end(),
                   [](const Ring::Point& a, const Ring::Point& b) { return a.hash < b.hash; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const Ring::Point& a, const Ring::Point& b) {
                             return a.hash == b.hash;
                           }),
               points.end());
  return std::make_unique<selector_detail::PointRingTable<uint32_t>>(
      Ring(points, static_cast<uint32_t>(hosts.size())));
}

}  // namespace lb
