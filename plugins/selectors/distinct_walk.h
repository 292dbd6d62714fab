// Shared machinery of the selector tables: the "k-th distinct host" walk that turns a stream of
// candidate hosts into a preference order without allocating, a rehash mixer for the walks of
// Maglev and jump, and an exact division-free `x % d` for Maglev's O(1) pick.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>

namespace lb::selector_detail {

// SplitMix64's finalizer (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014) over hash + i * golden ratio: the i-th rehash of a key hash. Used where a
// selector has no natural "next" position (Maglev, jump). Fixed constants, no seed: the same
// key walks the same way in every process.
inline uint64_t rehash(uint64_t hash, uint64_t i) noexcept {
  uint64_t z = hash + i * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// x % d for a fixed d >= 2 without a division (Lemire, Kaser, Kurz, "Faster Remainder by Direct
// Computation", 2019): four multiplications instead of a 64-bit div of 25-90 cycles, exact for
// every 64-bit x. The result is identical to x % d; tests check it against the operator.
class FastMod {
 public:
  FastMod() = default;
  explicit FastMod(uint64_t d) noexcept : d_(d), m_(~static_cast<unsigned __int128>(0) / d + 1) {
    assert(d >= 2);
  }
  uint64_t operator()(uint64_t x) const noexcept {
    using U = unsigned __int128;
    const U low = m_ * x;   // the fractional part of x / d, scaled by 2^128
    const U bottom = (U{static_cast<uint64_t>(low)} * d_) >> 64;
    const U top = U{static_cast<uint64_t>(low >> 64)} * d_;
    return static_cast<uint64_t>((bottom + top) >> 64);   // (low * d) >> 128
  }
  uint64_t divisor() const noexcept { return d_; }

 private:
  uint64_t d_ = 2;
  unsigned __int128 m_ = 0;
};

// Up to this many distinct hosts the walk remembers them in a small stack array (a linear scan
// of at most 16 entries beats any set); retries and bounded-load spills stay here.
inline constexpr uint32_t kSmallWalk = 16;
// Past that, a stack bitset of this many hosts (8 KiB, zeroed only as far as host_count).
inline constexpr uint32_t kBitsetHosts = 65536;

// Where the bitset does not fit: for each candidate, rescan the walk so far for it. Quadratic in
// the walk's length but allocation-free; only attempts >= 16 on clusters above 65536 hosts get
// here.
template <typename Candidate>
[[gnu::noinline]] uint32_t nthDistinctRescan(uint32_t attempt, Candidate& candidate) noexcept {
  uint32_t found = 0;
  for (uint64_t i = 0;; ++i) {
    uint32_t h = candidate(i);
    bool seen = false;
    for (uint64_t j = 0; j < i && !seen; ++j) seen = candidate(j) == h;
    if (seen) continue;
    if (found == attempt) return h;
    ++found;
  }
}

template <typename Candidate>
[[gnu::noinline]] uint32_t nthDistinctBitset(uint32_t attempt, uint32_t host_count,
                                             Candidate& candidate) noexcept {
  std::array<uint64_t, kBitsetHosts / 64> seen;
  const uint32_t words = (host_count + 63) / 64;
  for (uint32_t w = 0; w < words; ++w) seen[w] = 0;
  uint32_t found = 0;
  for (uint64_t i = 0;; ++i) {
    uint32_t h = candidate(i);
    uint64_t bit = uint64_t{1} << (h % 64);
    if (seen[h / 64] & bit) continue;
    if (found == attempt) return h;
    seen[h / 64] |= bit;
    ++found;
  }
}

// Returns the attempt-th distinct host (0-based) of the stream candidate(0), candidate(1), ...
// Contract: attempt < host_count, and the stream yields every host in [0, host_count) within a
// bounded number of steps (each caller documents why its stream does); otherwise this would not
// return. Allocation-free; O(steps * min(attempt, 16)) for small attempts.
template <typename Candidate>
uint32_t nthDistinct(uint32_t attempt, uint32_t host_count, Candidate&& candidate) noexcept {
  assert(attempt < host_count);
  if (attempt == 0) return candidate(0);
  if (attempt < kSmallWalk) {
    std::array<uint32_t, kSmallWalk> seen;
    uint32_t found = 0;
    for (uint64_t i = 0;; ++i) {
      uint32_t h = candidate(i);
      bool dup = false;
      for (uint32_t j = 0; j < found && !dup; ++j) dup = seen[j] == h;
      if (dup) continue;
      if (found == attempt) return h;
      seen[found++] = h;
    }
  }
  if (host_count <= kBitsetHosts) return nthDistinctBitset(attempt, host_count, candidate);
  return nthDistinctRescan(attempt, candidate);
}

}  // namespace lb::selector_detail
