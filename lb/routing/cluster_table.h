// From a cluster's config to its selector table: the one place that turns backends into
// HostSpecs (hash_key defaulting to name) and resolves the selector with the cluster's key
// hash, shared by the proxy's snapshots and `lb analyze`.
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

// The cluster's selector as its keys meet it: the registered plugin with the key hash the
// cluster chose (twemproxy.hash for selector twemproxy; the plugin's own otherwise). Its
// key_hash is what every protocol applies to a key (hashKeyBytes, lb/core/hash.h). nullptr
// when the config names an unknown selector or key hash (validation has rejected both).
inline const SelectorInfo* selectorOf(const ClusterConfig& cluster) {
  return findSelector(cluster.selector,
                      cluster.selector == "twemproxy" ? std::string_view(cluster.twemproxy_hash)
                                                      : std::string_view());
}

inline SelectorOptions selectorOptionsOf(const ClusterConfig& cluster) {
  return {cluster.vnodes, cluster.table_size, cluster.twemproxy_distribution == "modula"};
}

}  // namespace lb
