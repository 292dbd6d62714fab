// Key and point hashing through well-kept libraries: xxHash (libxxhash) and zlib's crc32; the
// choice of the hash a cluster's keys go through; hash tags.
#pragma once

#include <xxhash.h>
#include <zlib.h>

#include <cstdint>
#include <string_view>

namespace lb {

inline uint64_t xxh64(std::string_view s, uint64_t seed = 0) noexcept {
  return XXH64(s.data(), s.size(), seed);
}

inline uint32_t crc32Of(std::string_view s) noexcept {
  return static_cast<uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

// How key bytes become the hash a selector table's pick() takes: a name (as a config or a log
// spells it), the function, and the width of its values (what `lb analyze` and the keyspace
// shares sample; a 32-bit hash never reaches the upper half of a 64-bit range). A plain value,
// copied freely; two are equal when they name one function.
//
// Who chooses: each selector registers a default (plugins/builtin.cc): XXH64, or CRC32 for
// ketama so that a key lands where nginx puts it; a cluster of selector twemproxy names one of
// twemproxy's with `twemproxy.hash` (plugins/selectors/twemproxy_hash.h). The cluster's
// choice is its SelectorInfo's key_hash (selectorOf in lb/routing/cluster_table.h), which
// every protocol applies to each key with hashKeyBytes.
struct KeyHash {
  using Function = uint64_t (*)(std::string_view bytes) noexcept;
  std::string_view name;
  Function function = nullptr;
  uint8_t bits = 64;   // values are < 2^bits

  static const KeyHash kXxh64;
  static const KeyHash kCrc32;

  friend bool operator==(const KeyHash& a, const KeyHash& b) noexcept {
    return a.function == b.function;
  }
};

namespace hash_detail {
inline uint64_t xxh64Key(std::string_view s) noexcept { return xxh64(s); }
inline uint64_t crc32Key(std::string_view s) noexcept { return crc32Of(s); }
}  // namespace hash_detail

inline constexpr KeyHash KeyHash::kXxh64{"xxh64", &hash_detail::xxh64Key, 64};
inline constexpr KeyHash KeyHash::kCrc32{"crc32", &hash_detail::crc32Key, 32};

// Hot path: one indirect call, no allocation.
inline uint64_t hashKeyBytes(const KeyHash& h, std::string_view s) noexcept {
  return h.function(s);
}

// The part of `key` that a hash tag selects, as twemproxy (hash_tag, nc_server.c
// server_pool_idx) and Redis Cluster do: with tag "{}", the bytes between the first '{' and
// the first '}' after it, when there is at least one; otherwise the whole key. A tag that is
// not exactly two characters (no tag configured) selects the whole key.
//   "user:{42}:name" -> "42";  "user:{}:name", "user:{42", "user:42" -> the whole key.
inline std::string_view keyWithinHashTag(std::string_view key, std::string_view tag) noexcept {
  if (tag.size() != 2) return key;
  const size_t open = key.find(tag[0]);
  if (open == std::string_view::npos) return key;
  const size_t close = key.find(tag[1], open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// Envoy's hash policy combination: h = rotl(h, 1) ^ next.
inline uint64_t combineKeyHash(uint64_t h, uint64_t next) noexcept {
  return ((h << 1) | (h >> 63)) ^ next;
}

}  // namespace lb
