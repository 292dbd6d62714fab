// twemproxy's key hashes; the facts (constants, byte order, signedness, truncation) come from
// twitter/twemproxy src/hashkit/nc_fnv.c, nc_md5.c, nc_crc16.c, nc_crc32.c, nc_hsieh.c,
// nc_murmur.c, nc_jenkins.c and nc_one_at_a_time.c; the code is lb's own. See the header for
// the quirks and tests/unit/plugins/selectors/twemproxy_hash_test.cc for where each golden value
// comes from.
#include "plugins/selectors/twemproxy_hash.h"

#include <nettle/md5.h>
#include <zlib.h>

#include <array>

namespace lb::twemproxy {
namespace {

// A key byte as twemproxy reads it through `const char*` on x86-64: signed, then widened.
inline uint32_t signedByte32(char c) noexcept {
  return static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(c)));
}
inline uint64_t signedByte64(char c) noexcept {
  return static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(c)));
}
inline uint32_t byteAt(std::string_view s, size_t i) noexcept {
  return static_cast<unsigned char>(s[i]);
}
inline uint32_t le32(std::string_view s, size_t i) noexcept {
  return byteAt(s, i) | byteAt(s, i + 1) << 8 | byteAt(s, i + 2) << 16 | byteAt(s, i + 3) << 24;
}
inline uint32_t le16(std::string_view s, size_t i) noexcept {
  return byteAt(s, i) | byteAt(s, i + 1) << 8;
}
inline uint32_t rotl32(uint32_t x, int k) noexcept { return (x << k) | (x >> (32 - k)); }

constexpr uint64_t kFnv64Basis = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnv64Prime = 0x100000001b3ULL;
constexpr uint32_t kFnv32Basis = 2166136261U;
constexpr uint32_t kFnv32Prime = 16777619U;

// CRC-16/XMODEM's table: polynomial 0x1021, not reflected (the table nc_crc16.c spells out,
// derived here from the polynomial).
constexpr std::array<uint16_t, 256> kCrc16Table = [] {
  std::array<uint16_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i << 8;
    for (int b = 0; b < 8; ++b) c = (c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1;
    t[i] = static_cast<uint16_t>(c);
  }
  return t;
}();

// lookup3's mix() and final() (Bob Jenkins, lookup3.c, 2006).
inline void lookup3Mix(uint32_t& a, uint32_t& b, uint32_t& c) noexcept {
  a -= c; a ^= rotl32(c, 4);  c += b;
  b -= a; b ^= rotl32(a, 6);  a += c;
  c -= b; c ^= rotl32(b, 8);  b += a;
  a -= c; a ^= rotl32(c, 16); c += b;
  b -= a; b ^= rotl32(a, 19); a += c;
  c -= b; c ^= rotl32(b, 4);  b += a;
}
inline void lookup3Final(uint32_t& a, uint32_t& b, uint32_t& c) noexcept {
  c ^= b; c -= rotl32(b, 14);
  a ^= c; a -= rotl32(c, 11);
  b ^= a; b -= rotl32(a, 25);
  c ^= b; c -= rotl32(b, 16);
  a ^= c; a -= rotl32(c, 4);
  b ^= a; b -= rotl32(a, 14);
  c ^= b; c -= rotl32(b, 24);
}

}  // namespace

std::array<uint8_t, 16> md5Digest(std::string_view s) noexcept {
  static_assert(MD5_DIGEST_SIZE == 16);
  md5_ctx ctx;
  md5_init(&ctx);
  md5_update(&ctx, s.size(), reinterpret_cast<const uint8_t*>(s.data()));
  std::array<uint8_t, 16> out;
  md5_digest(&ctx, out.size(), out.data());
  return out;
}

uint32_t md5(std::string_view s) noexcept {
  const auto d = md5Digest(s);
  return uint32_t{d[0]} | uint32_t{d[1]} << 8 | uint32_t{d[2]} << 16 | uint32_t{d[3]} << 24;
}

uint32_t oneAtATime(std::string_view s) noexcept {
  uint32_t v = 0;
  for (char c : s) {
    v += signedByte32(c);
    v += v << 10;
    v ^= v >> 6;
  }
  v += v << 3;
  v ^= v >> 11;
  v += v << 15;
  return v;
}

// The XMODEM update run in a 32-bit register that is never masked back to 16 bits: the low
// 16 bits are CRC-16/XMODEM, the high 16 keep what the shifts carried up.
uint32_t crc16(std::string_view s) noexcept {
  uint32_t crc = 0;
  for (char c : s)
    crc = (crc << 8) ^ kCrc16Table[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff];
  return crc;
}

// The standard CRC-32 through zlib; libmemcached keeps only bits 16..30 of it.
uint32_t crc32(std::string_view s) noexcept { return (crc32a(s) >> 16) & 0x7fff; }
uint32_t crc32a(std::string_view s) noexcept { return crc32Of(s); }

uint32_t fnv1_64(std::string_view s) noexcept {
  uint64_t h = kFnv64Basis;
  for (char c : s) {
    h *= kFnv64Prime;
    h ^= signedByte64(c);
  }
  return static_cast<uint32_t>(h);
}

// In 32 bits with truncated constants, as nc_fnv.c writes it (the low half of FNV-1a 64).
uint32_t fnv1a_64(std::string_view s) noexcept {
  uint32_t h = static_cast<uint32_t>(kFnv64Basis);
  for (char c : s) {
    h ^= signedByte32(c);
    h *= static_cast<uint32_t>(kFnv64Prime);
  }
  return h;
}

uint32_t fnv1_32(std::string_view s) noexcept {
  uint32_t h = kFnv32Basis;
  for (char c : s) {
    h *= kFnv32Prime;
    h ^= signedByte32(c);
  }
  return h;
}

uint32_t fnv1a_32(std::string_view s) noexcept {
  uint32_t h = kFnv32Basis;
  for (char c : s) {
    h ^= signedByte32(c);
    h *= kFnv32Prime;
  }
  return h;
}

// Paul Hsieh's SuperFastHash over little-endian 16-bit pairs, started from 0 as twemproxy
// (and libmemcached) do.
uint32_t hsieh(std::string_view s) noexcept {
  if (s.empty()) return 0;
  uint32_t h = 0;
  size_t i = 0;
  for (size_t blocks = s.size() / 4; blocks > 0; --blocks, i += 4) {
    h += le16(s, i);
    const uint32_t tmp = (le16(s, i + 2) << 11) ^ h;
    h = (h << 16) ^ tmp;
    h += h >> 11;
  }
  switch (s.size() & 3) {
    case 3:
      h += le16(s, i);
      h ^= h << 16;
      h ^= signedByte32(s[i + 2]) << 18;   // read through a signed char in twemproxy
      h += h >> 11;
      break;
    case 2:
      h += le16(s, i);
      h ^= h << 11;
      h += h >> 17;
      break;
    case 1:
      h += byteAt(s, i);
      h ^= h << 10;
      h += h >> 1;
      break;
    default:
      break;
  }
  h ^= h << 3;
  h += h >> 5;
  h ^= h << 4;
  h += h >> 17;
  h ^= h << 25;
  h += h >> 6;
  return h;
}

// MurmurHash2 (Austin Appleby), 4-byte little-endian blocks.
uint32_t murmurHash2(std::string_view s, uint32_t seed) noexcept {
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  uint32_t h = seed ^ static_cast<uint32_t>(s.size());
  size_t i = 0;
  for (; s.size() - i >= 4; i += 4) {
    uint32_t k = le32(s, i);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (s.size() - i) {
    case 3:
      h ^= byteAt(s, i + 2) << 16;
      [[fallthrough]];
    case 2:
      h ^= byteAt(s, i + 1) << 8;
      [[fallthrough]];
    case 1:
      h ^= byteAt(s, i);
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

uint32_t murmur(std::string_view s) noexcept {
  return murmurHash2(s, 0xdeadbeefU * static_cast<uint32_t>(s.size()));
}

// lookup3's hashlittle, byte by byte: on a little-endian machine its word-at-a-time paths give
// the same value, which is what makes twemproxy's alignment-dependent reads agree.
uint32_t lookup3HashLittle(std::string_view s, uint32_t initval) noexcept {
  uint32_t a, b, c;
  a = b = c = 0xdeadbeefU + static_cast<uint32_t>(s.size()) + initval;
  size_t i = 0;
  size_t left = s.size();
  for (; left > 12; left -= 12, i += 12) {
    a += le32(s, i);
    b += le32(s, i + 4);
    c += le32(s, i + 8);
    lookup3Mix(a, b, c);
  }
  if (left == 0) return c;   // zero-length tails need no final mixing
  // The last 1..12 bytes, zero-padded, as three little-endian words.
  uint32_t w[3] = {0, 0, 0};
  for (size_t j = 0; j < left; ++j) w[j / 4] |= byteAt(s, i + j) << (8 * (j % 4));
  a += w[0];
  b += w[1];
  c += w[2];
  lookup3Final(a, b, c);
  return c;
}

uint32_t jenkins(std::string_view s) noexcept { return lookup3HashLittle(s, 13); }

const KeyHash* findKeyHash(std::string_view name) noexcept {
  for (const KeyHash& h : kKeyHashes)
    if (h.name == name) return &h;
  return nullptr;
}

}  // namespace lb::twemproxy
