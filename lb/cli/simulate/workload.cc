#include "lb/cli/simulate/workload.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace lb {

namespace {

bool kept(uint64_t id, uint64_t seed, double rate) {
  if (rate >= 1) return true;
  SimRng r(id * 0x2545f4914f6cdd1dULL ^ seed);
  return r.uniform() < rate;
}

}  // namespace

SimWorkload::SimWorkload(const SimScenario& s, double key_rate) : kind_(s.popularity.kind) {
  if (kind_ == SimPopularity::Kind::kTrace) {
    std::unordered_map<std::string, uint32_t> id_of;
    std::vector<uint32_t> sequence;
    sequence.reserve(s.popularity.trace.size());
    for (const auto& k : s.popularity.trace) {
      auto [it, fresh] = id_of.try_emplace(k, static_cast<uint32_t>(names_.size()));
      if (fresh) names_.push_back(k);
      sequence.push_back(it->second);
    }
    total_keys_ = names_.size();
    std::vector<uint32_t> local(total_keys_, UINT32_MAX);
    for (uint64_t id = 0; id < total_keys_; ++id)
      if (kept(id, s.seed, key_rate)) {
        local[id] = static_cast<uint32_t>(ids_.size());
        ids_.push_back(id);
      }
    for (const uint32_t id : sequence)
      if (local[id] != UINT32_MAX) trace_.push_back(local[id]);
    mass_ = sequence.empty() ? 0
                             : static_cast<double>(trace_.size()) / static_cast<double>(sequence.size());
    return;
  }
  total_keys_ = s.keys;
  for (uint64_t id = 0; id < total_keys_; ++id)
    if (kept(id, s.seed, key_rate)) ids_.push_back(id);
  if (kind_ == SimPopularity::Kind::kUniform) {
    mass_ = static_cast<double>(ids_.size()) / static_cast<double>(total_keys_);
    return;
  }
  // Zipf: key id i has rank i + 1, weight (i + 1)^-alpha. Sampled through an alias table
  // (Walker 1977, built as Vose, "A linear algorithm for generating random numbers with a
  // given distribution", IEEE TSE 1991): O(1) a request whatever the key count.
  double all = 0;
  for (uint64_t id = 0; id < total_keys_; ++id)
    all += std::pow(static_cast<double>(id + 1), -s.popularity.alpha);
  const size_t n = ids_.size();
  std::vector<double> w(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    w[i] = std::pow(static_cast<double>(ids_[i] + 1), -s.popularity.alpha);
    sum += w[i];
  }
  std::vector<double> keep(n, 1);
  std::vector<uint32_t> alias(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    w[i] = w[i] * static_cast<double>(n) / sum;
    alias[i] = static_cast<uint32_t>(i);
    (w[i] < 1 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t lo = small.back(), hi = large.back();
    small.pop_back();
    keep[lo] = w[lo];
    alias[lo] = hi;
    w[hi] -= 1 - w[lo];
    if (w[hi] < 1) {
      large.pop_back();
      small.push_back(hi);
    }
  }
  // Columns left at 1 alias themselves, so the 2^-32 the fixed-point threshold misses is
  // harmless.
  alias_.resize(n);
  for (size_t i = 0; i < n; ++i)
    alias_[i] = {static_cast<uint32_t>(std::min(4294967295.0, keep[i] * 4294967296.0)), alias[i]};
  mass_ = sum / all;
}

uint32_t SimWorkload::next(SimRng& rng) {
  switch (kind_) {
    case SimPopularity::Kind::kUniform:
      return rng.below(static_cast<uint32_t>(ids_.size()));
    case SimPopularity::Kind::kZipf: {
      const uint64_t r = rng.next();
      const auto i = static_cast<uint32_t>(((r & 0xffffffffULL) * alias_.size()) >> 32);
      return static_cast<uint32_t>(r >> 32) < alias_[i].keep ? i : alias_[i].alias;
    }
    case SimPopularity::Kind::kTrace: {
      const uint32_t k = trace_[trace_pos_];
      trace_pos_ = (trace_pos_ + 1) % trace_.size();
      return k;
    }
  }
  return 0;
}

std::string SimWorkload::keyText(uint64_t id) const {
  return kind_ == SimPopularity::Kind::kTrace ? names_[id] : "key:" + std::to_string(id);
}

std::vector<uint64_t> SimWorkload::sampledHashes(const KeyHash& h) const {
  std::vector<uint64_t> out;
  out.reserve(ids_.size());
  for (const uint64_t id : ids_) out.push_back(hashKeyBytes(h, keyText(id)));
  return out;
}

std::vector<uint64_t> SimWorkload::allHashes(const KeyHash& h) const {
  std::vector<uint64_t> out;
  out.reserve(total_keys_);
  for (uint64_t id = 0; id < total_keys_; ++id) out.push_back(hashKeyBytes(h, keyText(id)));
  return out;
}

}  // namespace lb
