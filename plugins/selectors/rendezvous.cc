// rendezvous: weighted highest-random-weight hashing (Thaler & Ravishankar, "Using Name-Based
// Mappings to Increase Hit Rates", IEEE/ACM ToN 1998), with the logarithmic weighting of
// Schindelhauer & Schomaker ("Weighted Distributed Hash Tables", SPAA 2005) that makes a host's
// share exactly w / W:
//   seed(K)      = XXH64(K, seed 0)                       (per host, at build time)
//   x(key, K)    = XXH64(8 little-endian bytes of the key hash, seed(K))
//   u            = (top 53 bits of x + 0.5) / 2^53        (in (0, 1), never 0 or 1)
//   score        = -w / ln(u)
// The owner is the host of highest score; attempt k is the host of (k+1)-th highest score.
// Ties (equal double scores) fall to the larger x, then the larger seed, then the smaller index.
// When all weights are equal, ordering by score is ordering by x (u and -1/ln(u) both increase
// with x), so the table skips the logarithm: the same order, minus the float rounding.
//
// Removing a host moves only its own keys: every other host's score for a key is unchanged.
// Pick costs O(hosts) hashes (Envoy and HAProxy have no rendezvous for this reason); it suits
// small clusters and retries, and the benchmark shows where it stops being cheap.
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>

#include "lb/core/hash.h"
#include "plugins/selectors/distinct_walk.h"
#include "plugins/selectors/selectors.h"

namespace lb {
namespace {

struct Score {
  double score;
  uint64_t x;
  uint64_t seed;
  uint32_t host;
};

// Strict total order: a ranks before b.
inline bool before(const Score& a, const Score& b) noexcept {
  if (a.score != b.score) return a.score > b.score;
  if (a.x != b.x) return a.x > b.x;
  if (a.seed != b.seed) return a.seed > b.seed;
  return a.host < b.host;
}

class RendezvousTable final : public SelectorTable {
 public:
  RendezvousTable(std::vector<uint64_t> seeds, std::vector<double> weights, bool uniform)
      : seeds_(std::move(seeds)), weights_(std::move(weights)), uniform_(uniform) {}

  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    const uint32_t n = hostCount();
    if (n == 0) return 0;
    attempt %= n;
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(hash >> (8 * i));
    if (attempt < selector_detail::kSmallWalk) return topK(bytes, attempt);
    return kthByRepeatedMax(bytes, attempt);
  }
  uint32_t hostCount() const noexcept override { return static_cast<uint32_t>(seeds_.size()); }
  size_t memoryBytes() const noexcept override {
    return sizeof(*this) + seeds_.capacity() * sizeof(uint64_t) +
           weights_.capacity() * sizeof(double);
  }

 private:
  Score scoreOf(const unsigned char* bytes, uint32_t host) const noexcept {
    const uint64_t x = XXH64(bytes, 8, seeds_[host]);
    double score = 0;
    if (!uniform_) {
      const double u = (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53;
      score = -weights_[host] / std::log(u);
    }
    return {score, x, seeds_[host], host};
  }

  // Partial selection of the attempt+1 best in a sorted stack array (insertion; attempt < 16).
  uint32_t topK(const unsigned char* bytes, uint32_t attempt) const noexcept {
    std::array<Score, selector_detail::kSmallWalk> best;
    uint32_t kept = 0;
    const uint32_t want = attempt + 1;
    for (uint32_t h = 0; h < seeds_.size(); ++h) {
      const Score s = scoreOf(bytes, h);
      if (kept == want && !before(s, best[kept - 1])) continue;
      uint32_t pos = kept < want ? kept++ : kept - 1;
      while (pos > 0 && before(s, best[pos - 1])) {
        best[pos] = best[pos - 1];
        --pos;
      }
      best[pos] = s;
    }
    return best[attempt].host;
  }

  // Large attempts without memory: attempt+1 passes, each finding the best host ranked after
  // the previous pass's. O(hosts * attempt); only long replica walks get here.
  uint32_t kthByRepeatedMax(const unsigned char* bytes, uint32_t attempt) const noexcept {
    Score prev{};
    for (uint32_t k = 0;; ++k) {
      Score cur{};
      bool have = false;
      for (uint32_t h = 0; h < seeds_.size(); ++h) {
        const Score s = scoreOf(bytes, h);
        if (k > 0 && !before(prev, s)) continue;
        if (!have || before(s, cur)) {
          cur = s;
          have = true;
        }
      }
      if (k == attempt) return cur.host;
      prev = cur;
    }
  }

  std::vector<uint64_t> seeds_;
  std::vector<double> weights_;
  bool uniform_;
};

}  // namespace

std::unique_ptr<SelectorTable> buildRendezvous(std::span<const HostSpec> hosts,
                                               const SelectorOptions& options) {
  (void)options;
  std::vector<uint64_t> seeds;
  std::vector<double> weights;
  bool uniform = true;
  for (const HostSpec& h : hosts) {
    seeds.push_back(xxh64(h.hash_key, 0));
    weights.push_back(static_cast<double>(std::max<uint32_t>(h.weight, 1)));
    uniform = uniform && std::max<uint32_t>(h.weight, 1) == std::max<uint32_t>(hosts[0].weight, 1);
  }
  return std::make_unique<RendezvousTable>(std::move(seeds), std::move(weights), uniform);
}

}  // namespace lb
