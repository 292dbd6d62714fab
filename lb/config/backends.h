// One cluster's backend list: the rules each backend and the list as a whole follow, in one
// place for the two ways a list reaches lb: a cluster's TOML `backends` (loader.cc,
// validate.cc) and a membership document from etcd or a file (lb/membership/document.h).
// Both readers call these, so a list valid in one form is valid in the other, with the same
// messages. Errors go through a WalkContext: its `positions` (key path -> line:column, filled
// by whichever reader walked the text) say where each offending value was written and
// whether an optional key (hash_key, weight) was written at all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lb/config/config.h"
#include "lb/config/walker.h"

namespace lb {

// 1000: a weight ratio beyond that is a typo, and keeps ring sizes in range. Weight 0 is not
// "drained": a backend that should take no keys is removed from the list.
inline constexpr int64_t kMinBackendWeight = 1;
inline constexpr int64_t kMaxBackendWeight = 1000;

// Listener, cluster and backend names end up in metric labels and key paths: letters,
// digits, '_', '-' and the characters of `extra`, 1 to 64 of them.
bool isPlainName(std::string_view name, std::string_view extra);

// Why a backend's value is not acceptable, or "" when it is. The readers call these once the
// value has the right type, and report the message at the value.
std::string backendNameProblem(const std::string& name);
std::string backendAddressProblem(const std::string& address);   // host:port; names allowed
std::string backendHashKeyProblem(const std::string& hash_key);
// A zone name: a failure domain's label ("us-east-1a", "rack-7"), 1 to 64 of letters, digits,
// '_', '-' and '.'. Also the rule for [lb] zone and LB_ZONE.
std::string zoneNameProblem(const std::string& zone);

// Distinct zones a cluster may name: the zone-aware walk keeps the zones it has used in one
// 64-bit word (lb/routing/zone_order.h). Real fleets have 2 to 6.
inline constexpr size_t kMaxZones = 64;
// Copies of a key a cluster may keep (`replicas`): each write goes to every one of them.
inline constexpr int64_t kMaxReplicas = 8;

// One entry of a TOML `backends` array, read into *b with the rules above (a table with
// name, address, optional weight and hash_key; anything else is an unknown key). `path` is
// the entry's key path ("clusters.cache.backends[2]"). The loader's readCluster uses it.
void readTomlBackend(WalkContext& ctx, const toml::node& node, const std::string& path,
                     BackendConfig* b);

// A TOML file that holds only a backend list, `backends = [ ... ]` at its top level (a form
// `lb membership put` accepts besides JSON), read and checked under `settings` as that
// cluster's own list would be (checkBackendList, paths "backends[i]..."). Every error at
// once, at file:line:col, in file order.
Result<std::vector<BackendConfig>> loadBackendListToml(const std::string& text,
                                                       const std::string& file,
                                                       const ClusterConfig& settings);

// Where checkBackendList reports. `backends` is the list's key path ("clusters.cache.backends"
// in TOML, "backends" in a document); entries are `backends`[i]. `cluster` is the key path of
// the cluster's own settings when they are in the same text ("clusters.cache"): a backend
// count too large for maglev.table_size, or a ring too large for ring_hash.vnodes, is then
// reported at that setting. "" when the settings are elsewhere (a document checked against
// lb's config): those errors go to `backends` and say which setting of the cluster they meet.
struct BackendListPaths {
  std::string backends;
  std::string cluster;
};

// The checks on a whole list under `settings` (the cluster's selector, vnodes, table_size,
// twemproxy distribution, replicas; settings.backends is ignored): an empty list that was
// written ("lists no backends"), duplicate names and hash_keys (a hash_key defaults to the
// name), jump's lack of weights, ketama's host:port hash_keys, twemproxy's name length,
// maglev's table size against the count, the ring's total points, more replicas than
// backends, and more than kMaxZones zones. Each backend's own values have
// been checked by its reader; a value that failed keeps its default here.
void checkBackendList(const ClusterConfig& settings, const std::vector<BackendConfig>& backends,
                      const BackendListPaths& paths, WalkContext& ctx);

}  // namespace lb
