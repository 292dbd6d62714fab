// The arithmetic behind `lb analyze` (docs/analyze.md): how evenly a selector spreads
// keys over a fleet, and how many keys change owner when the last host leaves or a new one
// joins. Pure functions, data in, figures out: no printing, no argument parsing, so that the
// figures can be checked exactly on small fake tables.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "plugins/selector.h"

namespace lb {

// How the selector under analysis builds a table over a host list; nullptr when it refuses
// the hosts. Called three times per analysis (before, after removal, after addition).
using AnalyzeTableBuilder =
    std::function<std::unique_ptr<SelectorTable>(std::span<const HostSpec> hosts)>;

// Balance of the keys over the fleet before any change.
//
// Load is weight-normalised: a host's load is keys[i] / fair[i], with fair[i] = K * w[i] / W
// the keys it would own if the selector followed the weights exactly, so 1.0 is a perfect
// share whatever the weights. With equal weights this is keys[i] / mean keys, so
// max_over_mean is the plain "max keys over mean keys" and stddev_pct the plain coefficient
// of variation.
struct BalanceFigures {
  std::vector<uint64_t> keys;     // keys owned, per host, in host order
  std::vector<double> shares;     // keys[i] / K
  double max_over_mean = 0;       // max over hosts of keys[i] / fair[i]
  double stddev_pct = 0;          // 100 * sqrt(mean over hosts of (keys[i] / fair[i] - 1)^2)
};

// Key movement caused by one membership change.
//
// moved: fraction of keys whose owner changed. ideal: the least any selector can move, the
// weight share of the host that left (w_last / W) or of the host that joined
// (w_new / (W + w_new)). collateral: fraction of keys that moved between two hosts present
// both before and after the change; a consistent hash keeps it at zero.
struct MoveFigures {
  std::string backend;            // the host removed or added
  uint64_t moved_keys = 0;
  uint64_t collateral_keys = 0;
  double moved = 0;
  double ideal = 0;
  double collateral = 0;
};

struct SelectorFigures {
  std::string selector;
  std::vector<std::string> backends;   // names of the hosts before the change, in order
  uint64_t keys = 0;
  BalanceFigures balance;
  MoveFigures remove;
  MoveFigures add;
};

// One host of the scenario: its name is also its hash_key, as in a config that sets no
// hash_key.
struct AnalyzeHost {
  std::string name;
  uint32_t weight = 1;
};

// One host of a membership change: its name (owners compare by name) and what the selector
// builds from (its hash_key, which may differ from the name, and weight).
struct ChangeHost {
  std::string name;
  HostSpec spec;
};

// Analyses one selector on `hosts` (at least 2), removing the last and, separately, adding
// `added` after the last, over the keys whose hashes are `key_hashes` (at least one; hashed
// already with the selector's key hash). Uses only pick(hash, 0). Returns nullopt with
// `error` set when a table cannot be built or a table answers outside its host list.
std::optional<SelectorFigures> analyzeSelector(const std::string& selector,
                                               const AnalyzeTableBuilder& build,
                                               std::span<const AnalyzeHost> hosts,
                                               const AnalyzeHost& added,
                                               std::span<const uint64_t> key_hashes,
                                               std::string& error);

// Key movement of any one-step membership change, `before` to `after` (hosts added, removed,
// reweighted or re-keyed at once; `lb membership put|diff`), with the meanings above: moved,
// keys whose owner (by name) changed; collateral, keys that moved between two hosts present
// both before and after; ideal, the least any selector must move, the total variation
// between the two weight distributions (sum over hosts of the share they lose), which is
// w_last / W for one host leaving and w_new / (W + w_new) for one joining, as above.
// `backend` is left empty. Both lists non-empty, names unique in each. Returns nullopt with
// `error` set when a table cannot be built or answers outside its host list.
std::optional<MoveFigures> analyzeChange(const std::string& selector,
                                         const AnalyzeTableBuilder& build,
                                         std::span<const ChangeHost> before,
                                         std::span<const ChangeHost> after,
                                         std::span<const uint64_t> key_hashes,
                                         std::string& error);

// Hashes of "key:0".."key:{count-1}" under one key hash: the keys `lb analyze` and
// `lb membership` measure with.
std::vector<uint64_t> sampleKeyHashes(const KeyHash& kind, uint64_t count);

// Balance figures from keys owned per host and the hosts' weights (same length, > 0 keys in
// total). Exposed for tests of the weight-normalised arithmetic.
BalanceFigures balanceOf(std::span<const uint64_t> keys_per_host,
                         std::span<const uint32_t> weights);

// The `mod_n` baseline: hash mod N, weighted the way nginx's plain `hash $key` and HAProxy's
// map-based balancing are (hash mod total weight, each host owning `weight` consecutive
// slots; equal weights make it exactly hash mod N). Attempt k is the k-th next host in list
// order. It is what consistent hashing is measured against: almost every key moves when N
// changes.
std::unique_ptr<SelectorTable> buildModNTable(std::span<const HostSpec> hosts,
                                              const SelectorOptions& options);

// The mod_n baseline as a selector entry (XXH64 key hash), for `--selector mod_n|all`. It is
// not in the plugin registry: the proxy never routes with it.
const SelectorInfo& modNSelector();

}  // namespace lb
