// `lb analyze`: the command-line driver. Parsing lives in analyze_options, the arithmetic in
// analyze_report, the printing in analyze_format; this file wires them to the selector
// registry and the config loader and owns the exit codes:
//   0 success, 1 the config file has errors, 2 usage error, unknown cluster or selector, or a
//   table that cannot be built.
#include "lb/cli/analyze/analyze.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "lb/cli/analyze/analyze_format.h"
#include "lb/cli/analyze/analyze_options.h"
#include "lb/cli/analyze/report.h"
#include "lb/routing/cluster_table.h"
#include "lb/routing/snapshot.h"
#include "lb/routing/zone_order.h"
#include "lb/config/config.h"
#include "lb/core/hash.h"
#include "plugins/builtin.h"

namespace lb {

namespace {

constexpr int kExitConfig = 1;
constexpr int kExitUsage = 2;
constexpr uint64_t kZoneReportKeys = 100000;

int fail(const std::string& message) {
  fprintf(stderr, "lb analyze: %s\n", message.c_str());
  return kExitUsage;
}

std::string registeredNames() {
  std::string names = "all, " + std::string(modNSelector().name);
  for (const auto& s : allSelectors()) names += ", " + std::string(s.name);
  return names;
}

// The selectors named by --selector, mod_n first for "all" so the baseline heads the table.
std::vector<const SelectorInfo*> chosenSelectors(const std::string& name) {
  std::vector<const SelectorInfo*> out;
  if (name == "all") {
    out.push_back(&modNSelector());
    for (const auto& s : allSelectors()) out.push_back(&s);
  } else if (name == modNSelector().name) {
    out.push_back(&modNSelector());
  } else if (const SelectorInfo* s = findSelector(name)) {
    out.push_back(s);
  }
  return out;
}

int simulate(const AnalyzeOptions& o) {
  const auto selectors = chosenSelectors(o.selector);
  if (selectors.empty())
    return fail("unknown selector '" + o.selector + "' (known: " + registeredNames() + ")");

  std::vector<AnalyzeHost> hosts;
  for (uint32_t i = 0; i < o.backends; ++i)
    hosts.push_back({"b" + std::to_string(i), o.weights.empty() ? 1 : o.weights[i]});
  const AnalyzeHost added{"b" + std::to_string(o.backends), 1};

  // Hash the keys once per key hash, not once per selector.
  std::vector<std::pair<KeyHash, std::vector<uint64_t>>> hashes;
  std::vector<SelectorFigures> figures;
  for (const SelectorInfo* s : selectors) {
    auto it = std::find_if(hashes.begin(), hashes.end(),
                           [&](const auto& e) { return e.first == s->key_hash; });
    if (it == hashes.end())
      it = hashes.insert(hashes.end(), {s->key_hash, sampleKeyHashes(s->key_hash, o.keys)});
    const std::vector<uint64_t>& h = it->second;
    const SelectorOptions options = o.selector_options;
    const SelectorBuilder builder = s->build;
    std::string error;
    auto f = analyzeSelector(
        std::string(s->name),
        [&](std::span<const HostSpec> specs) { return builder(specs, options); }, hosts, added,
        h, error);
    if (!f) return fail(error);
    figures.push_back(std::move(*f));
  }
  const std::string out =
      o.format == AnalyzeOptions::Format::kJson ? analyzeJson(figures) : analyzeText(figures);
  fputs(out.c_str(), stdout);
  return 0;
}

// The share of keys whose first `replicas` hosts of `table` stand in as many distinct zones as
// they can (min(replicas, zones)).
double distinctZoneShare(const SelectorTable& table, const std::vector<uint8_t>& zone_of,
                         uint32_t zones, uint32_t replicas, const std::vector<uint64_t>& hashes) {
  const uint32_t want = std::min(replicas, zones);
  uint64_t good = 0;
  for (uint64_t h : hashes) {
    uint64_t used = 0;
    for (uint32_t a = 0; a < replicas; ++a) used |= uint64_t{1} << zone_of[table.pick(h, a)];
    good += static_cast<uint32_t>(__builtin_popcountll(used)) == want;
  }
  return hashes.empty() ? 0.0 : static_cast<double>(good) / static_cast<double>(hashes.size());
}

// `lb analyze --config F --cluster C` without --key: what the zone-aware order does to this
// cluster. Its owners are the selector's (primaries_moved is counted, and 0 by construction);
// its replicas stand in distinct zones where the selector's order often puts two in one.
int zoneReport(const ClusterConfig& cluster, const SelectorInfo& info,
               const SelectorTable& table) {
  uint32_t zones = 0;
  const std::vector<uint8_t> zone_of = zoneIndices(cluster.backends, &zones);
  const auto* zoned = dynamic_cast<const ZoneOrderTable*>(&table);
  const SelectorTable& plain = zoned != nullptr ? zoned->inner() : table;
  const std::vector<uint64_t> hashes = sampleKeyHashes(info.key_hash, kZoneReportKeys);
  uint64_t moved = 0;
  for (uint64_t h : hashes) moved += table.pick(h, 0) != plain.pick(h, 0);
  const uint32_t replicas = std::max<uint32_t>(cluster.replicas, 2);
  std::string out = "{\"cluster\": " + jsonString(cluster.name) +
                    ", \"selector\": " + jsonString(cluster.selector) +
                    ", \"backends\": " + std::to_string(cluster.backends.size()) +
                    ", \"zones\": {";
  for (uint32_t z = 0; z < zones; ++z) {
    size_t first = 0, count = 0;
    for (size_t i = 0; i < zone_of.size(); ++i)
      if (zone_of[i] == z && count++ == 0) first = i;
    out += (z > 0 ? ", " : "") + jsonString(cluster.backends[first].zone) + ": " +
           std::to_string(count);
  }
  out += "}, \"replicas\": " + std::to_string(cluster.replicas) +
         ", \"keys\": " + std::to_string(hashes.size()) +
         ", \"primaries_moved\": " + std::to_string(moved) +
         ", \"distinct_zones\": {\"first\": " + std::to_string(replicas) +
         ", \"zone_order\": " + fixedDecimal(distinctZoneShare(table, zone_of, zones, replicas, hashes), 4) +
         ", \"selector_order\": " + fixedDecimal(distinctZoneShare(plain, zone_of, zones, replicas, hashes), 4) +
         "}}\n";
  fputs(out.c_str(), stdout);
  return 0;
}

int showKeys(const AnalyzeOptions& o) {
  auto config = loadConfigFile(o.config_file);
  if (!config.ok()) {
    for (const auto& e : config.errors()) fprintf(stderr, "%s\n", e.format().c_str());
    return kExitConfig;
  }
  const ClusterConfig* cluster = config->findCluster(o.cluster);
  if (!cluster) {
    std::string known;
    for (const auto& c : config->clusters) known += (known.empty() ? "" : ", ") + c.name;
    return fail(o.config_file + ": no cluster '" + o.cluster + "' (clusters: " +
                (known.empty() ? "none" : known) + ")");
  }
  const SelectorInfo* info = selectorOf(*cluster);
  if (!info)
    return fail("cluster '" + cluster->name + "': unknown selector '" + cluster->selector + "'");
  if (cluster->backends.empty()) return fail("cluster '" + cluster->name + "' has no backends");
  const size_t hosts = cluster->backends.size();
  // The cluster as the proxy routes it, without live state: its preference orders.
  ClusterSnapshot routed;
  routed.config = cluster;
  routed.selector = info;
  routed.table = buildClusterTable(*cluster, *info);
  if (!routed.table || routed.hostCount() != hosts)
    return fail("cluster '" + cluster->name + "': " + cluster->selector +
                " cannot build a table over its backends");
  if (o.show_keys.empty()) return zoneReport(*cluster, *info, *routed.table);

  // A cache key hashes as its listener hashes it: the hash tag of --listener, else of the
  // cluster's first redis or memcached listener.
  const ListenerConfig* listener = nullptr;
  if (!o.listener.empty()) {
    listener = config->findListener(o.listener);
    if (listener == nullptr) return fail(o.config_file + ": no listener '" + o.listener + "'");
    if (listener->cluster != cluster->name)
      return fail("listener '" + o.listener + "' routes to cluster '" + listener->cluster +
                  "', not '" + cluster->name + "'");
  } else {
    listener = config->cacheListenerOf(cluster->name);
  }
  const std::string_view tag = listener != nullptr ? std::string_view(listener->hash_tag) : "";

  const bool zoned = std::any_of(cluster->backends.begin(), cluster->backends.end(),
                                 [](const BackendConfig& b) { return !b.zone.empty(); });
  std::vector<std::string> order(hosts), zones;
  for (const auto& key : o.show_keys) {
    const std::string_view hashed = keyWithinHashTag(key, tag);
    const uint64_t hash = hashKeyBytes(info->key_hash, hashed);
    zones.clear();
    for (uint32_t a = 0; a < order.size(); ++a) {
      const uint32_t host = routed.hostAt(hash, a);
      if (host >= hosts) return fail(cluster->selector + ": pick outside the table");
      order[a] = cluster->backends[host].name;
      if (zoned) zones.push_back(cluster->backends[host].zone);
    }
    fputs(preferenceLine(key, hashed.size() != key.size() ? hashed : std::string_view(), hash,
                         order, zones)
              .c_str(),
          stdout);
  }
  return 0;
}

}  // namespace

int runAnalyze(int argc, char** argv) {
  std::string error;
  const auto options = parseAnalyzeArgs(std::span<char* const>(argv, static_cast<size_t>(argc)), error);
  if (!options) {
    fprintf(stderr, "lb analyze: %s\n%s", error.c_str(), analyzeUsage());
    return kExitUsage;
  }
  if (options->help) {
    fputs(analyzeUsage(), stdout);
    return 0;
  }
  return options->mode == AnalyzeOptions::Mode::kConfig ? showKeys(*options)
                                                         : simulate(*options);
}

}  // namespace lb
