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
#include "lb/config/config.h"
#include "lb/core/hash.h"
#include "plugins/builtin.h"

namespace lb {

namespace {

constexpr int kExitConfig = 1;
constexpr int kExitUsage = 2;

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
  const auto specs = hostSpecsOf(*cluster);
  // The cluster as the proxy routes it, without live state: its preference orders.
  ClusterSnapshot routed;
  routed.config = cluster;
  routed.selector = info;
  routed.table = info->build(specs, selectorOptionsOf(*cluster));
  if (!routed.table || routed.hostCount() != specs.size())
    return fail("cluster '" + cluster->name + "': " + cluster->selector +
                " cannot build a table over its backends");

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

  std::vector<std::string> order(specs.size());
  for (const auto& key : o.show_keys) {
    const std::string_view hashed = keyWithinHashTag(key, tag);
    const uint64_t hash = hashKeyBytes(info->key_hash, hashed);
    for (uint32_t a = 0; a < order.size(); ++a) {
      const uint32_t host = routed.hostAt(hash, a);
      if (host >= specs.size()) return fail(cluster->selector + ": pick outside the table");
      order[a] = cluster->backends[host].name;
    }
    fputs(preferenceLine(key, hashed.size() != key.size() ? hashed : std::string_view(), hash,
                         order)
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
