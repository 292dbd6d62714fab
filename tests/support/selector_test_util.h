// Helpers shared by the selector tests: host lists, key hashes, a fixed-seed PRNG, and owner
// maps compared by hash_key (indices shift when a host is removed; identities do not).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lb/core/hash.h"
#include "plugins/builtin.h"
#include "plugins/selector.h"

namespace lb::test {

// SplitMix64 with a fixed seed: reproducible "random" inputs, the same in every run.
class Prng {
 public:
  explicit Prng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t s_;
};

// hosts "<prefix>0" .. "<prefix>{n-1}", weight 1.
inline std::vector<HostSpec> makeHosts(uint32_t n, const std::string& prefix = "host-") {
  std::vector<HostSpec> hosts;
  for (uint32_t i = 0; i < n; ++i) hosts.push_back({prefix + std::to_string(i), 1});
  return hosts;
}

// The hash of key text "key:<i>" as the selector's listener would compute it.
inline uint64_t keyHash(KeyHash kind, uint64_t i) {
  return hashKeyBytes(kind, "key:" + std::to_string(i));
}

inline std::unique_ptr<SelectorTable> build(const SelectorInfo& info,
                                            const std::vector<HostSpec>& hosts,
                                            const SelectorOptions& options = {}) {
  return info.build(hosts, options);
}

// Owner hash_key of each of keys "key:0" .. "key:{count-1}".
inline std::vector<std::string> ownerKeys(const SelectorInfo& info,
                                          const std::vector<HostSpec>& hosts, uint32_t count) {
  auto table = build(info, hosts);
  std::vector<std::string> out;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i)
    out.push_back(hosts[table->pick(keyHash(info.key_hash, i), 0)].hash_key);
  return out;
}

// How the owners of the same keys changed between two host lists.
struct Movement {
  uint32_t moved = 0;        // owner changed
  uint32_t collateral = 0;   // moved between two hosts present before and after
  uint32_t to_host = 0;      // moved onto `host`
  uint32_t from_host = 0;    // moved off `host`
};

inline Movement movement(const std::vector<std::string>& before,
                         const std::vector<std::string>& after, const std::string& host) {
  Movement m;
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i]) continue;
    ++m.moved;
    if (after[i] == host) ++m.to_host;
    else if (before[i] == host) ++m.from_host;
    else ++m.collateral;
  }
  return m;
}

inline const SelectorInfo& selector(std::string_view name) {
  const SelectorInfo* info = findSelector(name);
  if (info == nullptr) std::abort();
  return *info;
}

}  // namespace lb::test
