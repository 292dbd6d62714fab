#include "lb/cli/analyze/report.h"

#include <algorithm>
#include <cmath>

#include "lb/routing/snapshot.h"

namespace lb {

namespace {

// Hash mod total weight, host i owning slots [cumulative[i-1], cumulative[i]).
class ModNTable final : public SelectorTable {
 public:
  explicit ModNTable(std::span<const HostSpec> hosts) {
    cumulative_.reserve(hosts.size());
    uint64_t total = 0;
    for (const auto& h : hosts) {
      total += h.weight;
      cumulative_.push_back(total);
    }
  }

  uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept override {
    const uint64_t slot = hash % cumulative_.back();
    const auto owner = static_cast<uint32_t>(
        std::upper_bound(cumulative_.begin(), cumulative_.end(), slot) - cumulative_.begin());
    return static_cast<uint32_t>((uint64_t{owner} + attempt) % cumulative_.size());
  }
  uint32_t hostCount() const noexcept override {
    return static_cast<uint32_t>(cumulative_.size());
  }
  size_t memoryBytes() const noexcept override {
    return sizeof(*this) + cumulative_.capacity() * sizeof(uint64_t);
  }

 private:
  std::vector<uint64_t> cumulative_;
};

std::vector<HostSpec> specsOf(std::span<const AnalyzeHost> hosts) {
  std::vector<HostSpec> specs;
  specs.reserve(hosts.size());
  for (const auto& h : hosts) specs.push_back({h.name, h.weight});
  return specs;
}

// Builds and checks that the table covers exactly `hosts`, so owners can index per-host
// arrays: a cluster without live state, whose hostAt(hash, 0) is each key's owner as the
// proxy's pick walks it.
std::optional<ClusterSnapshot> buildChecked(const std::string& selector,
                                            const AnalyzeTableBuilder& build,
                                            std::span<const HostSpec> hosts,
                                            std::string& error) {
  std::optional<ClusterSnapshot> routed(std::in_place);
  routed->table = build(hosts);
  if (!routed->table) {
    error = selector + ": cannot build a table over " + std::to_string(hosts.size()) + " hosts";
    return std::nullopt;
  }
  if (routed->hostCount() != hosts.size()) {
    error = selector + ": table built over " + std::to_string(hosts.size()) + " hosts reports " +
            std::to_string(routed->hostCount());
    return std::nullopt;
  }
  return routed;
}

MoveFigures moveFigures(std::string backend, uint64_t moved, uint64_t collateral,
                        double ideal, uint64_t keys) {
  MoveFigures m;
  m.backend = std::move(backend);
  m.moved_keys = moved;
  m.collateral_keys = collateral;
  m.moved = static_cast<double>(moved) / static_cast<double>(keys);
  m.collateral = static_cast<double>(collateral) / static_cast<double>(keys);
  m.ideal = ideal;
  return m;
}

}  // namespace

BalanceFigures balanceOf(std::span<const uint64_t> keys_per_host,
                         std::span<const uint32_t> weights) {
  BalanceFigures b;
  b.keys.assign(keys_per_host.begin(), keys_per_host.end());
  uint64_t total_keys = 0;
  uint64_t total_weight = 0;
  for (size_t i = 0; i < keys_per_host.size(); ++i) {
    total_keys += keys_per_host[i];
    total_weight += weights[i];
  }
  if (total_keys == 0 || total_weight == 0) return b;
  // Worked example: weights 1,1,2 (W = 4) and 1000 keys split 250/240/510. Fair shares are
  // 250/250/500, loads 1.00/0.96/1.02: max_over_mean 1.02, stddev_pct
  // 100 * sqrt((0 + 0.0016 + 0.0004) / 3) = 2.58.
  double max_load = 0;
  double sum_sq = 0;
  for (size_t i = 0; i < keys_per_host.size(); ++i) {
    const double keys = static_cast<double>(keys_per_host[i]);
    b.shares.push_back(keys / static_cast<double>(total_keys));
    const double fair = static_cast<double>(total_keys) * weights[i] /
                        static_cast<double>(total_weight);
    const double load = keys / fair;
    max_load = std::max(max_load, load);
    sum_sq += (load - 1) * (load - 1);
  }
  b.max_over_mean = max_load;
  b.stddev_pct = 100 * std::sqrt(sum_sq / static_cast<double>(keys_per_host.size()));
  return b;
}

std::optional<SelectorFigures> analyzeSelector(const std::string& selector,
                                               const AnalyzeTableBuilder& build,
                                               std::span<const AnalyzeHost> hosts,
                                               const AnalyzeHost& added,
                                               std::span<const uint64_t> key_hashes,
                                               std::string& error) {
  if (hosts.size() < 2 || key_hashes.empty()) {
    error = selector + ": need at least 2 hosts and 1 key";
    return std::nullopt;
  }
  // The three host lists are prefixes of one another, so a host keeps its index in all three
  // tables and owners compare as plain indices.
  std::vector<HostSpec> grown = specsOf(hosts);
  grown.push_back({added.name, added.weight});
  const auto n = static_cast<uint32_t>(hosts.size());
  const std::span<const HostSpec> before(grown.data(), n);
  const std::span<const HostSpec> shrunk(grown.data(), n - 1);

  auto base = buildChecked(selector, build, before, error);
  if (!base) return std::nullopt;
  auto removed = buildChecked(selector, build, shrunk, error);
  if (!removed) return std::nullopt;
  auto grew = buildChecked(selector, build, grown, error);
  if (!grew) return std::nullopt;

  std::vector<uint64_t> owned(n, 0);
  uint64_t rm_moved = 0, rm_collateral = 0, add_moved = 0, add_collateral = 0;
  const uint32_t last = n - 1;
  for (const uint64_t h : key_hashes) {
    const uint32_t o = base->hostAt(h, 0);
    const uint32_t r = removed->hostAt(h, 0);
    const uint32_t a = grew->hostAt(h, 0);
    if (o >= n || r >= n - 1 || a >= n + 1) {
      error = selector + ": pick returned a host index outside the table";
      return std::nullopt;
    }
    ++owned[o];
    // Removal: every key of the removed host must move; one that moved from a host still
    // present is collateral damage.
    if (r != o) {
      ++rm_moved;
      if (o != last) ++rm_collateral;
    }
    // Addition: only keys taken by the new host need to move.
    if (a != o) {
      ++add_moved;
      if (a != n) ++add_collateral;
    }
  }

  uint64_t total_weight = 0;
  std::vector<uint32_t> weights;
  SelectorFigures f;
  f.selector = selector;
  f.keys = key_hashes.size();
  for (const auto& h : hosts) {
    f.backends.push_back(h.name);
    weights.push_back(h.weight);
    total_weight += h.weight;
  }
  f.balance = balanceOf(owned, weights);
  const double w_last = hosts.back().weight;
  const double w_new = added.weight;
  const double w = static_cast<double>(total_weight);
  f.remove = moveFigures(hosts.back().name, rm_moved, rm_collateral, w_last / w, f.keys);
  f.add = moveFigures(added.name, add_moved, add_collateral, w_new / (w + w_new), f.keys);
  return f;
}

std::optional<MoveFigures> analyzeChange(const std::string& selector,
                                         const AnalyzeTableBuilder& build,
                                         std::span<const ChangeHost> before,
                                         std::span<const ChangeHost> after,
                                         std::span<const uint64_t> key_hashes,
                                         std::string& error) {
  if (before.empty() || after.empty() || key_hashes.empty()) {
    error = selector + ": need hosts before and after, and 1 key";
    return std::nullopt;
  }
  std::vector<HostSpec> old_specs, new_specs;
  for (const auto& h : before) old_specs.push_back(h.spec);
  for (const auto& h : after) new_specs.push_back(h.spec);
  auto old_table = buildChecked(selector, build, old_specs, error);
  if (!old_table) return std::nullopt;
  auto new_table = buildChecked(selector, build, new_specs, error);
  if (!new_table) return std::nullopt;

  // The lists need not be prefixes of each other: owners compare by name, through each
  // host's index in the other list (-1 when it is not there).
  auto indexIn = [](std::span<const ChangeHost> list, const std::string& name) {
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].name == name) return static_cast<int64_t>(i);
    return int64_t{-1};
  };
  std::vector<int64_t> old_in_new, new_in_old;
  for (const auto& h : before) old_in_new.push_back(indexIn(after, h.name));
  for (const auto& h : after) new_in_old.push_back(indexIn(before, h.name));

  uint64_t moved = 0, collateral = 0;
  for (const uint64_t h : key_hashes) {
    const uint32_t o = old_table->hostAt(h, 0);
    const uint32_t n = new_table->hostAt(h, 0);
    if (o >= before.size() || n >= after.size()) {
      error = selector + ": pick returned a host index outside the table";
      return std::nullopt;
    }
    if (old_in_new[o] == static_cast<int64_t>(n)) continue;
    ++moved;
    // Between two hosts that are in both lists: a move no change of membership called for.
    if (old_in_new[o] >= 0 && new_in_old[n] >= 0) ++collateral;
  }

  double w_before = 0, w_after = 0;
  for (const auto& h : before) w_before += h.spec.weight;
  for (const auto& h : after) w_after += h.spec.weight;
  double ideal = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const double share = before[i].spec.weight / w_before;
    const double share_after =
        old_in_new[i] >= 0 ? after[static_cast<size_t>(old_in_new[i])].spec.weight / w_after : 0;
    if (share > share_after) ideal += share - share_after;
  }
  return moveFigures("", moved, collateral, ideal, key_hashes.size());
}

std::vector<uint64_t> sampleKeyHashes(const KeyHash& kind, uint64_t count) {
  std::vector<uint64_t> hashes;
  hashes.reserve(count);
  std::string key;
  for (uint64_t i = 0; i < count; ++i) {
    key = "key:" + std::to_string(i);
    hashes.push_back(hashKeyBytes(kind, key));
  }
  return hashes;
}

std::unique_ptr<SelectorTable> buildModNTable(std::span<const HostSpec> hosts,
                                              const SelectorOptions&) {
  if (hosts.empty()) return nullptr;
  for (const auto& h : hosts)
    if (h.weight == 0) return nullptr;
  return std::make_unique<ModNTable>(hosts);
}

const SelectorInfo& modNSelector() {
  static const SelectorInfo kModN{"mod_n", &buildModNTable, KeyHash::kXxh64};
  return kModN;
}

}  // namespace lb
