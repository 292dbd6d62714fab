// From a cluster's config to its selector table: the one place that turns backends into
// HostSpecs (hash_key defaulting to name), shared by the proxy's snapshots and `lb analyze`.
#pragma once

#include <memory>
#include <vector>

#include "lb/config/config.h"
#include "plugins/builtin.h"

namespace lb {

inline std::vector<HostSpec> hostSpecsOf(const ClusterConfig& cluster) {
  std::vector<HostSpec> hosts;
  hosts.reserve(cluster.backends.size());
  for (const auto& b : cluster.backends)
    hosts.push_back({b.hash_key.empty() ? b.name : b.hash_key, b.weight});
  return hosts;
}

inline SelectorOptions selectorOptionsOf(const ClusterConfig& cluster) {
  return {cluster.vnodes, cluster.table_size};
}

}  // namespace lb
