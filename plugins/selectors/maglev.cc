// maglev: the lookup table of Eisenbud et al., "Maglev: A Fast and Reliable Software Network
// Load Balancer" (NSDI 2016), §3.4, weighted as Envoy's maglev load balancer does it. The pick
// is one table read, O(1), at the price of a little collateral movement when membership changes
// (the paper's Figure 12: about 1-2% of keys at M = 65537 for a 100-host fleet).
//
// Population: hosts sorted by hash_key (so reordering the config file moves no key); host K has
//   offset = XXH64(K, seed 0) % M,  skip = XXH64(K, seed 1) % (M - 1) + 1,
// the paper's h1/h2 with Envoy's seeds; its permutation is offset + j * skip (mod M), which
// visits every slot when M is prime. Hosts take turns filling their next free preferred slot;
// weight decides how often a host takes a turn (buildMaglevTable). Default M = 65537 (prime,
// and Envoy's default): with 100 hosts each owns ~655 slots, so shares stay within ~0.2%.
//
// Pick, attempt 0: table[hash % M]. Preference order for attempt k > 0 (the replica walk), the
// distinct hosts of this stream of slots:
//   i = 0                   hash % M                              (the owner)
//   1 <= i < R              rehash(hash, i) % M, R = 2 * hosts + 32  (SplitMix64 rehash: the
//                           next hosts are drawn at random in proportion to their slots, so a
//                           failed host's keys spread over the fleet instead of its neighbour)
//   R <= i < R + M          (hash + 1 + (i - R)) % M                 (one lap of the table: every
//                           host with a slot is met, deterministically)
//   i >= R + M              host (i - R - M) % hosts                 (hosts with no slot at all,
//                           only when M < hosts, i.e. bad input)
// The rehash prefix is bounded so that even the last hosts of a large attempt are reached in
// bounded time; retries (attempt 1-2) almost always end within the first few rehashes.
#include <algorithm>
#include <cassert>
#include <numeric>

#include "lb/core/hash.h"
#include "plugins/selectors/distinct_walk.h"
#include "plugins/selectors/selectors.h"

namespace lb {
namespace {

using selector_detail::FastMod;
using selector_detail::nthDistinct;
using selector_detail::rehash;

constexpr uint32_t kEmpty = UINT32_MAX;

// Trial division: O(sqrt(M)), ~128 steps at 65537; for the debug assertion only.
[[maybe_unused]] bool isPrime(uint64_t m) {
  if (m < 2) return false;
  for (uint64_t d = 2; d * d <= m; ++d)
    if (m % d == 0) return false;
  return true;
}

class MaglevTable final : public SelectorTable {
 public:
  MaglevTable(std::vector<uint32_t> table, uint32_t host_count)
      : table_(std::move(table)), mod_(table_.size() < 2 ? 2 : table_.size()),
        host_count_(host_count), rehash_probes_(2 * uint64_t{host_count} + 32) {}

  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    if (host_count_ == 0 || table_.empty()) return 0;
    const uint64_t slot = mod_(hash);
    if (attempt == 0) return table_[slot];
    attempt %= host_count_;
    const uint64_t m = table_.size();
    return nthDistinct(attempt, host_count_, [&](uint64_t i) noexcept -> uint32_t {
      if (i == 0) return table_[slot];
      if (i < rehash_probes_) return table_[mod_(rehash(hash, i))];
      i -= rehash_probes_;
      if (i < m) {
        uint64_t s = slot + 1 + i;
        return table_[s >= m ? s - m : s];
      }
      return static_cast<uint32_t>((i - m) % host_count_);
    });
  }
  uint32_t hostCount() const noexcept override { return host_count_; }
  size_t memoryBytes() const noexcept override {
    return sizeof(*this) + table_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<uint32_t> table_;   // slot -> host index (into the builder's HostSpec list)
  FastMod mod_;
  uint32_t host_count_;
  uint64_t rehash_probes_;
};

}  // namespace

std::vector<uint32_t> buildMaglevTable(std::span<const MaglevEntry> entries, uint64_t table_size) {
  assert(table_size >= entries.size());
  const uint64_t m = table_size;
  if (entries.empty() || m == 0) return {};
  uint32_t max_weight = 0;
  for (const MaglevEntry& e : entries) {
    assert(e.offset < m && e.skip >= 1 && e.skip < std::max<uint64_t>(m, 2) && e.weight >= 1);
    max_weight = std::max(max_weight, std::max<uint32_t>(e.weight, 1));
  }

  struct State {
    uint64_t next;     // this host's next preferred slot: offset + j * skip (mod M)
    uint64_t skip;
    uint64_t target;   // turns taken so far * max_weight
  };
  std::vector<State> state;
  state.reserve(entries.size());
  for (const MaglevEntry& e : entries)
    state.push_back({e.offset % m, std::max<uint64_t>(e.skip % m, 1), 0});

  std::vector<uint32_t> table(m, kEmpty);
  uint64_t filled = 0;
  // Worked example (the paper's Table 1, M = 7): B0 (offset 3, skip 4) prefers 3 0 4 1 5 2 6,
  // B1 (0, 2) prefers 0 2 4 6 1 3 5, B2 (3, 1) prefers 3 4 5 6 0 1 2. Round 1: B0 takes 3, B1
  // takes 0, B2 finds 3 taken and takes 4. Round 2: B0 skips 0 and 4, takes 1; B1 takes 2; B2
  // takes 5. Round 3: B0 skips 5 and 2, takes 6: table = B1 B0 B1 B0 B2 B2 B0.
  for (uint64_t round = 1; filled < m; ++round) {
    for (size_t i = 0; i < entries.size() && filled < m; ++i) {
      State& s = state[i];
      // A host of weight w takes its k-th turn once round * w >= k * max_weight: the heaviest
      // host takes a turn every round, one of a third of its weight every third round.
      if (round * std::max<uint32_t>(entries[i].weight, 1) < s.target) continue;
      s.target += max_weight;
      // With M prime the permutation meets a free slot within M steps. A non-prime M (bad
      // input) can trap it in a cycle of taken slots: after M steps, probe linearly instead.
      uint64_t steps = 0;
      while (table[s.next] != kEmpty && steps < m) {
        s.next += s.skip;
        if (s.next >= m) s.next -= m;
        ++steps;
      }
      uint64_t slot = s.next;
      while (table[slot] != kEmpty) slot = slot + 1 == m ? 0 : slot + 1;
      table[slot] = static_cast<uint32_t>(i);
      ++filled;
      s.next += s.skip;
      if (s.next >= m) s.next -= m;
    }
  }
  return table;
}

std::unique_ptr<SelectorTable> buildMaglev(std::span<const HostSpec> hosts,
                                           const SelectorOptions& options) {
  assert(options.table_size >= hosts.size() && isPrime(options.table_size));
  const uint64_t m = std::max<uint64_t>(options.table_size, 2);
  // Population order = hash_key order, so the table depends on the set of hosts only.
  std::vector<uint32_t> order(hosts.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return hosts[a].hash_key < hosts[b].hash_key; });
  std::vector<MaglevEntry> entries;
  entries.reserve(hosts.size());
  for (uint32_t h : order) {
    const std::string& key = hosts[h].hash_key;
    entries.push_back({xxh64(key, 0) % m, xxh64(key, 1) % (m - 1) + 1,
                       std::max<uint32_t>(hosts[h].weight, 1)});
  }
  std::vector<uint32_t> table = buildMaglevTable(entries, m);
  for (uint32_t& slot : table) slot = order[slot];
  return std::make_unique<MaglevTable>(std::move(table), static_cast<uint32_t>(hosts.size()));
}

}  // namespace lb
