// The request stream of `lb simulate`: which keys are simulated (spatial sampling, as SHARDS
// does: Waldspurger et al., "Efficient MRC Construction with SHARDS", FAST 2015) and the
// popularity each request draws from (Zipf, uniform, or a recorded trace replayed in order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lb/core/hash.h"
#include "lb/cli/simulate/scenario.h"

namespace lb {

// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): small, fast, and deterministic per seed.
class SimRng {
 public:
  explicit SimRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((next() >> 32) * n >> 32); }

 private:
  uint64_t state_;
};

class SimWorkload {
 public:
  // Keeps each key with probability key_rate (by a hash of its id and the seed, so every
  // selector sees the same keys).
  SimWorkload(const SimScenario& s, double key_rate);

  uint64_t totalKeys() const { return total_keys_; }
  uint32_t sampledKeys() const { return static_cast<uint32_t>(ids_.size()); }
  // Share of all requests that go to sampled keys (exact, from the popularity model).
  double requestMass() const { return mass_; }
  // The next request's sampled key, 0..sampledKeys()-1.
  uint32_t next(SimRng& rng);
  // The text of key `id` (0..totalKeys()-1): "key:ID", or the trace's key.
  std::string keyText(uint64_t id) const;
  // Hashes of the sampled keys, and of every key, under a selector's key hash.
  std::vector<uint64_t> sampledHashes(const KeyHash& h) const;
  std::vector<uint64_t> allHashes(const KeyHash& h) const;

 private:
  SimPopularity::Kind kind_;
  uint64_t total_keys_ = 0;
  std::vector<uint64_t> ids_;          // sampled key ids
  // Zipf: Walker's alias table over the sampled keys, one 64-bit draw and one cache line a
  // request: column i keeps key i when the draw's high half is below `keep`, else takes
  // `alias`.
  struct AliasColumn {
    uint32_t keep;
    uint32_t alias;
  };
  std::vector<AliasColumn> alias_;
  std::vector<uint32_t> trace_;        // trace: sampled requests in order (local ids)
  std::vector<std::string> names_;     // trace: distinct keys by id
  size_t trace_pos_ = 0;
  double mass_ = 1;
};

}  // namespace lb
