// jump: Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014), over the
// hosts in config order, numbered 0 .. n-1: no table at all, O(ln n) per pick, and perfectly
// even shares. It is meant for numbered shards, and its contract is narrower than the rings':
//  - Only removing the LAST host (or adding one at the end) keeps every other key in place;
//    removing host i from the middle renumbers hosts i+1.. and remaps most keys. Use it when
//    the fleet grows and shrinks at the end (shard-0 .. shard-N), or use ring_hash / maglev.
//  - Reordering the backends remaps keys: the position in the list IS the identity here, the
//    one exception to "hash_key, never the position" (hash_key is not used).
//  - Weights are not supported: the config loader rejects weight != 1 for jump, and this table
//    ignores weights.
// Preference order for attempt k > 0, the distinct hosts of the stream
//   i = 0              jumpHash(hash, n)                      (the owner)
//   1 <= i < R         jumpHash(rehash(hash, i), n), R = 2n + 32  (SplitMix64 rehash: a failed
//                      host's keys spread over the whole fleet)
//   i >= R             (owner + 1 + (i - R)) % n               (bounded tail: the hosts the
//                      rehashes missed, in order after the owner, so the walk always ends)
#include "plugins/selectors/distinct_walk.h"
#include "plugins/selectors/selectors.h"

namespace lb {

uint32_t jumpHash(uint64_t key, uint32_t buckets) noexcept {
  // The paper's Figure 1: a linear congruential step per jump; the next bucket where the key
  // would move is (b + 1) / r for r uniform in (0, 1], so the loop runs O(ln buckets) times.
  int64_t b = -1;
  int64_t j = 0;
  while (j < static_cast<int64_t>(buckets)) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>(static_cast<double>(b + 1) *
                             (static_cast<double>(int64_t{1} << 31) /
                              static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<uint32_t>(b);
}

namespace {

using selector_detail::nthDistinct;
using selector_detail::rehash;

class JumpTable final : public SelectorTable {
 public:
  explicit JumpTable(uint32_t host_count)
      : host_count_(host_count), rehash_probes_(2 * uint64_t{host_count} + 32) {}

  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    if (host_count_ == 0) return 0;
    const uint32_t owner = jumpHash(hash, host_count_);
    if (attempt == 0) return owner;
    attempt %= host_count_;
    return nthDistinct(attempt, host_count_, [&](uint64_t i) noexcept -> uint32_t {
      if (i == 0) return owner;
      if (i < rehash_probes_) return jumpHash(rehash(hash, i), host_count_);
      return static_cast<uint32_t>((owner + 1 + (i - rehash_probes_)) % host_count_);
    });
  }
  uint32_t hostCount() const noexcept override { return host_count_; }
  size_t memoryBytes() const noexcept override { return sizeof(*this); }

 private:
  uint32_t host_count_;
  uint64_t rehash_probes_;
};

}  // namespace

std::unique_ptr<SelectorTable> buildJump(std::span<const HostSpec> hosts,
                                         const SelectorOptions& options) {
  (void)options;
  return std::make_unique<JumpTable>(static_cast<uint32_t>(hosts.size()));
}

}  // namespace lb
