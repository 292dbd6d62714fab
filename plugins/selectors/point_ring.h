// A sorted ring of hash points, shared by ring_hash (64-bit XXH64 points), ketama (32-bit CRC32
// points) and twemproxy (32-bit MD5 points): lookup = first point >= hash, wrapping past the
// last; the replica walk goes clockwise from there collecting distinct hosts. PointRingTable
// is the SelectorTable all three return.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <limits>
#include <vector>

#include "plugins/selector.h"
#include "plugins/selectors/distinct_walk.h"

namespace lb::selector_detail {

template <typename H>
class PointRing {
 public:
  struct Point {
    H hash;
    uint32_t host;
  };

  // points must already be sorted by hash (ties in the order the caller wants them kept).
  // Builder side, main thread: O(P) beyond the caller's sort.
  PointRing(const std::vector<Point>& points, uint32_t host_count)
      : host_count_(host_count) {
    hashes_.reserve(points.size());
    hosts_.reserve(points.size());
    for (const Point& p : points) {
      assert(p.host < host_count);
      hashes_.push_back(p.hash);
      hosts_.push_back(p.host);
    }
    buildIndex();
  }

  uint32_t hostCount() const noexcept { return host_count_; }
  size_t pointCount() const noexcept { return hashes_.size(); }
  H pointHash(size_t i) const noexcept { return hashes_[i]; }
  uint32_t pointHost(size_t i) const noexcept { return hosts_[i]; }

  // Index of the first point whose hash is >= hash, or 0 when hash is past the last point.
  // A binary search over the whole ring at 160k points would cost ~17 dependent cache misses;
  // the bucket index (top bits of the hash -> first point of that bucket) narrows it to a few
  // points of one or two cache lines, so the lookup costs two misses.
  size_t lookup(H hash) const noexcept {
    const size_t bucket = shift_ >= kBits ? 0 : static_cast<size_t>(hash >> shift_);
    auto first = hashes_.begin() + index_[bucket];
    auto last = hashes_.begin() + index_[bucket + 1];
    size_t pos = static_cast<size_t>(std::lower_bound(first, last, hash) - hashes_.begin());
    return pos == hashes_.size() ? 0 : pos;
  }

  // The attempt-th distinct host walking clockwise from hash's point. Walking the whole ring
  // once meets every host that has a point; a host left without any (only on bad input, such
  // as two hosts sharing a ketama hash_key) is reached after the lap, in index order, so the
  // walk always ends within pointCount() + hostCount() steps. Caller guarantees host_count > 0.
  uint32_t pick(H hash, uint32_t attempt) const noexcept {
    const size_t start = lookup(hash);
    const size_t n = hashes_.size();
    attempt %= host_count_;
    return nthDistinct(attempt, host_count_, [&](uint64_t i) noexcept -> uint32_t {
      if (i >= n) return static_cast<uint32_t>((i - n) % host_count_);
      size_t pos = start + static_cast<size_t>(i);
      return hosts_[pos >= n ? pos - n : pos];
    });
  }

  size_t memoryBytes() const noexcept {
    return hashes_.capacity() * sizeof(H) + hosts_.capacity() * sizeof(uint32_t) +
           index_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr int kBits = std::numeric_limits<H>::digits;

  // 2^b buckets with b chosen so each holds 2-4 points on average.
  void buildIndex() {
    const size_t n = hashes_.size();
    int b = n < 4 ? 0 : static_cast<int>(std::bit_width(n)) - 2;
    b = std::min(b, 24);  // 16M buckets at most (64 MiB): beyond any sane ring
    shift_ = kBits - b;
    const size_t buckets = size_t{1} << b;
    index_.assign(buckets + 1, 0);
    size_t pos = 0;
    for (size_t k = 0; k < buckets; ++k) {
      // First point whose bucket is >= k.
      while (pos < n && bucketOf(hashes_[pos]) < k) ++pos;
      index_[k] = static_cast<uint32_t>(pos);
    }
    index_[buckets] = static_cast<uint32_t>(n);
  }
  size_t bucketOf(H hash) const noexcept {
    return shift_ >= kBits ? 0 : static_cast<size_t>(hash >> shift_);
  }

  std::vector<H> hashes_;
  std::vector<uint32_t> hosts_;
  std::vector<uint32_t> index_;   // bucket k's points are [index_[k], index_[k+1])
  int shift_ = kBits;
  uint32_t host_count_;
};

// A ring as a selector table. With 32-bit points (ketama, twemproxy) the key hash is 32 bits
// too, so only the low half of `hash` is used: zero-extended for a single key, and a combined
// multi-source hash is folded to its low half.
template <typename H>
class PointRingTable final : public SelectorTable {
 public:
  explicit PointRingTable(PointRing<H> ring) : ring_(std::move(ring)) {}

  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    if (ring_.hostCount() == 0) return 0;
    return ring_.pick(static_cast<H>(hash), attempt);
  }
  uint32_t hostCount() const noexcept override { return ring_.hostCount(); }
  size_t memoryBytes() const noexcept override { return sizeof(*this) + ring_.memoryBytes(); }

 private:
  PointRing<H> ring_;
};

}  // namespace lb::selector_detail
