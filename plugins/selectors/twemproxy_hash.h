// twemproxy's key hashes (the `hash:` of a nutcracker pool), value for value as nutcracker
// 0.5.0 computes them on x86-64 (twitter/twemproxy src/hashkit/nc_*.c), so that a key meets
// lb's twemproxy continuum (plugins/selectors/twemproxy.cc) with the hash nutcracker gave it.
//
// Every function returns twemproxy's uint32_t. Quirks kept on purpose, because they decide
// where keys live:
//   - fnv1a_64 runs FNV-1a in 32 bits with FNV-64's basis and prime cut to 32 bits
//     (0x84222325, 0x1b3), which is FNV-1a 64 truncated to its low half (xor and product
//     modulo 2^32 see only low bits); fnv1_64 is FNV-1 64 truncated.
//   - the FNV family, one_at_a_time and the third tail byte of hsieh read the key through a
//     `char`, which is signed on x86-64: a byte >= 0x80 enters sign-extended (0xff as
//     0xffffffff). nutcracker built where char is unsigned (arm64) hashes such keys
//     differently; lb follows the x86-64 build, the one nearly every fleet runs.
//   - crc32 is libmemcached's: bits 16..30 of the standard CRC-32 (values < 2^15, so with
//     ketama every key falls in the first 2^15 of the 2^32 continuum, as in nutcracker);
//     crc32a is the standard CRC-32. crc16 is 0.5.0's: CRC-16/XMODEM's update in a 32-bit
//     register never masked to 16 bits (later twemproxy releases changed it to CRC-16/ARC).
//   - murmur is MurmurHash2 with seed 0xdeadbeef * length; jenkins is Bob Jenkins' lookup3
//     hashlittle with initval 13; hsieh is SuperFastHash started from 0 instead of the length.
// MD5 comes from nettle (nettle-dev), never hand-written.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "lb/core/hash.h"

namespace lb::twemproxy {

// The 16-byte MD5 digest of s (RFC 1321), through nettle. Also the continuum's point hash.
std::array<uint8_t, 16> md5Digest(std::string_view s) noexcept;

uint32_t oneAtATime(std::string_view s) noexcept;
uint32_t md5(std::string_view s) noexcept;        // digest bytes 0..3, little-endian
uint32_t crc16(std::string_view s) noexcept;
uint32_t crc32(std::string_view s) noexcept;
uint32_t crc32a(std::string_view s) noexcept;
uint32_t fnv1_64(std::string_view s) noexcept;
uint32_t fnv1a_64(std::string_view s) noexcept;
uint32_t fnv1_32(std::string_view s) noexcept;
uint32_t fnv1a_32(std::string_view s) noexcept;
uint32_t hsieh(std::string_view s) noexcept;
uint32_t murmur(std::string_view s) noexcept;
uint32_t jenkins(std::string_view s) noexcept;

// The general algorithms behind murmur and jenkins, with their seeds exposed, so that tests
// can pin them to their authors' published verification values.
uint32_t murmurHash2(std::string_view s, uint32_t seed) noexcept;
uint32_t lookup3HashLittle(std::string_view s, uint32_t initval) noexcept;

// nutcracker's server_pool_hash over one of the above: an empty key hashes to 0, whatever the
// hash (a pool of one server also gets 0, which lb need not copy: any hash picks that server).
template <uint32_t (*F)(std::string_view) noexcept>
uint64_t poolHash(std::string_view s) noexcept {
  return s.empty() ? 0 : F(s);
}

// Every hash above as a KeyHash named as nutcracker.yml spells it, fnv1a_64 (twemproxy's
// default) first. 32 bits wide, except crc32 (15). Constant data, so that the
// plugin registry stays free of static initialisers.
inline constexpr std::array<KeyHash, 12> kKeyHashes = {{
    {"fnv1a_64", &poolHash<fnv1a_64>, 32},
    {"fnv1_64", &poolHash<fnv1_64>, 32},
    {"fnv1a_32", &poolHash<fnv1a_32>, 32},
    {"fnv1_32", &poolHash<fnv1_32>, 32},
    {"md5", &poolHash<md5>, 32},
    {"murmur", &poolHash<murmur>, 32},
    {"crc32a", &poolHash<crc32a>, 32},
    {"crc32", &poolHash<crc32>, 15},
    {"crc16", &poolHash<crc16>, 32},
    {"one_at_a_time", &poolHash<oneAtATime>, 32},
    {"jenkins", &poolHash<jenkins>, 32},
    {"hsieh", &poolHash<hsieh>, 32},
}};

// nullptr when twemproxy has no hash of that name.
const KeyHash* findKeyHash(std::string_view name) noexcept;

}  // namespace lb::twemproxy
