// Key and point hashing through well-kept libraries: xxHash (libxxhash) and zlib's crc32.
#pragma once

#include <xxhash.h>
#include <zlib.h>

#include <cstdint>
#include <string_view>

namespace lb {

// How key bytes become a hash: XXH64 by default, CRC32 for ketama so that the same key text
// lands where nginx would put it. Each selector names the one it needs.
enum class KeyHash { kXxh64, kCrc32 };

inline uint64_t xxh64(std::string_view s, uint64_t seed = 0) noexcept {
  return XXH64(s.data(), s.size(), seed);
}

inline uint32_t crc32Of(std::string_view s) noexcept {
  return static_cast<uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

inline uint64_t hashKeyBytes(KeyHash h, std::string_view s) noexcept {
  return h == KeyHash::kCrc32 ? crc32Of(s) : xxh64(s);
}

// Envoy's hash policy combination: h = rotl(h, 1) ^ next.
inline uint64_t combineKeyHash(uint64_t h, uint64_t next) noexcept {
  return ((h << 1) | (h >> 63)) ^ next;
}

}  // namespace lb
