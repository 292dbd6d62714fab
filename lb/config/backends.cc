#include "lb/config/backends.h"

#include <algorithm>
#include <utility>

#include "lb/core/address.h"

namespace lb {

namespace {

constexpr size_t kMaxNameLength = 64;
// A ring larger than this costs more memory than any fleet justifies (Envoy caps its ring at
// 8M entries); it almost always means a stray zero in vnodes or a weight.
constexpr uint64_t kMaxRingPoints = 10000000;
// Points per unit of weight in nginx's `hash ... consistent` (ngx_http_upstream_hash_module).
constexpr uint64_t kKetamaPointsPerWeight = 160;
// Points per server in nutcracker's continuum, shared out by weight (nc_ketama.c).
constexpr uint64_t kTwemproxyPointsPerServer = 160;
// nutcracker formats each point's name "NAME-i" into an 86-byte buffer and hashes as many
// bytes as the name would need: a longer name hashes bytes it never wrote. Names up to 64
// bytes leave room for i's digits with any ring lb accepts.
constexpr size_t kTwemproxyMaxName = 64;

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Where a problem caused by one of the cluster's settings is reported, and the note that names
// the setting when it is not in the same text.
struct SettingSite {
  std::string path;
  std::string note;
};

SettingSite settingSite(const ClusterConfig& settings, const BackendListPaths& paths,
                        const std::string& key) {
  if (!paths.cluster.empty()) return {paths.cluster + "." + key, ""};
  const uint64_t value = key == "maglev.table_size" ? settings.table_size
                         : key == "replicas"        ? settings.replicas
                                                    : settings.vnodes;
  return {paths.backends,
          " (cluster '" + settings.name + "' has " + key + " = " + std::to_string(value) + ")"};
}

// Each key lives on its first `replicas` hosts, so a list shorter than that cannot hold a key
// as often as the cluster promises; and the zone-aware walk keeps its used zones in a word.
void checkReplicasAndZones(const ClusterConfig& c, const std::vector<BackendConfig>& backends,
                           const BackendListPaths& paths, WalkContext& ctx) {
  if (c.replicas > backends.size()) {
    SettingSite site = settingSite(c, paths, "replicas");
    ctx.error(ctx.positionOf(site.path), site.path,
              "replicas = " + std::to_string(c.replicas) + " is more than the " +
                  std::to_string(backends.size()) + " backends" + site.note);
  }
  std::vector<std::string_view> zones;
  for (size_t i = 0; i < backends.size(); ++i) {
    const std::string& z = backends[i].zone;
    if (std::find(zones.begin(), zones.end(), z) != zones.end()) continue;
    zones.push_back(z);
    if (zones.size() > kMaxZones) {
      const std::string p = at(paths.backends, i) + ".zone";
      ctx.error(ctx.positionOf(p), p,
                "zone '" + z + "' is the cluster's " + std::to_string(zones.size()) +
                    "th distinct zone (at most " + std::to_string(kMaxZones) + ")");
      return;
    }
  }
}

void checkDuplicates(const std::vector<BackendConfig>& backends, const std::string& bpath,
                     WalkContext& ctx) {
  for (size_t i = 0; i < backends.size(); ++i) {
    const BackendConfig& b = backends[i];
    std::string p = at(bpath, i);
    bool own_key = ctx.written(p + ".hash_key");
    const std::string& key = own_key ? b.hash_key : b.name;
    for (size_t j = 0; j < i; ++j) {
      const BackendConfig& e = backends[j];
      if (!b.name.empty() && b.name == e.name) {
        ctx.error(ctx.positionOf(p + ".name"), p + ".name",
                  "backend name '" + b.name + "' is already used by " + at("backends", j));
        break;
      }
      const std::string& other = e.hash_key.empty() ? e.name : e.hash_key;
      if (!key.empty() && key == other) {
        // Two hosts with one identity would share every position in every table.
        std::string what = own_key ? ".hash_key" : ".name";
        ctx.error(ctx.positionOf(p + what), p + what,
                  "hash_key '" + key + "' is already the hash_key of " + at("backends", j) +
                      (own_key ? "" : " (a backend's hash_key defaults to its name)"));
        break;
      }
    }
  }
}

void checkSelectorRules(const ClusterConfig& c, const std::vector<BackendConfig>& backends,
                        const BackendListPaths& paths, WalkContext& ctx) {
  const std::string& bpath = paths.backends;
  uint64_t total_weight = 0;
  for (const auto& b : backends) total_weight += b.weight;
  if (c.selector == "maglev" && c.table_size < backends.size()) {
    SettingSite site = settingSite(c, paths, "maglev.table_size");
    ctx.error(ctx.positionOf(site.path), site.path,
              "table size " + std::to_string(c.table_size) + " is smaller than the " +
                  std::to_string(backends.size()) + " backends" + site.note);
  }
  if (c.selector == "jump") {
    for (size_t i = 0; i < backends.size(); ++i) {
      std::string p = at(bpath, i) + ".weight";
      if (backends[i].weight != 1)
        ctx.error(ctx.positionOf(p), p,
                  "jump has no weights (shards are numbered); remove weight or use rendezvous");
    }
  }
  if (c.selector == "ketama") {
    for (size_t i = 0; i < backends.size(); ++i) {
      const BackendConfig& b = backends[i];
      const std::string& key = b.hash_key.empty() ? b.name : b.hash_key;
      std::string p = at(bpath, i) + ".hash_key";
      if (!key.empty() && key.find(':') == std::string::npos)
        ctx.error(ctx.positionOf(p), p,
                  "ketama places hosts by nginx's server string host:port; set hash_key = \"" +
                      (b.address.empty() ? std::string("10.0.0.1:11211") : b.address) +
                      "\" (got '" + key + "')");
    }
  }
  if (c.selector == "twemproxy") {
    for (size_t i = 0; i < backends.size(); ++i) {
      const BackendConfig& b = backends[i];
      const std::string& key = b.hash_key.empty() ? b.name : b.hash_key;
      std::string p = at(bpath, i) + ".hash_key";
      if (key.size() > kTwemproxyMaxName)
        ctx.error(ctx.positionOf(p), p,
                  "twemproxy names points NAME-i in a fixed buffer; a hash_key of " +
                      std::to_string(key.size()) + " bytes is longer than " +
                      std::to_string(kTwemproxyMaxName));
    }
  }
  uint64_t points = 0;
  SettingSite site{bpath, ""};
  if (c.selector == "ring_hash") {
    points = uint64_t{c.vnodes} * total_weight;
    site = settingSite(c, paths, "ring_hash.vnodes");
  } else if (c.selector == "ketama") {
    points = kKetamaPointsPerWeight * total_weight;
  } else if (c.selector == "twemproxy" && c.twemproxy_distribution == "modula") {
    points = total_weight;   // nc_modula.c: one point per unit of weight
  } else if (c.selector == "twemproxy") {
    points = kTwemproxyPointsPerServer * backends.size();
  }
  if (points > kMaxRingPoints)
    ctx.error(ctx.positionOf(site.path), site.path,
              "the ring would hold " + std::to_string(points) + " points (at most " +
                  std::to_string(kMaxRingPoints) + "); lower vnodes or the weights" + site.note);
}

}  // namespace

bool isPlainName(std::string_view name, std::string_view extra) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || extra.find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string backendNameProblem(const std::string& name) {
  // Backend names may also hold '.' and ':' (host names, "10.0.0.1:11211").
  if (isPlainName(name, ".:")) return "";
  return "'" + name + "' is not a valid backend name (use letters, digits, '_', '-', '.' and "
         "':', at most 64)";
}

std::string backendAddressProblem(const std::string& address) {
  // A host name is allowed; whether it resolves is the NameResolver's question (config.h).
  HostPort parsed;
  std::string error;
  if (!parseHostPort(address, &parsed, &error)) return error;
  return "";
}

std::string backendHashKeyProblem(const std::string& hash_key) {
  return hash_key.empty() ? "must not be empty (leave it out to use the name)" : "";
}

std::string zoneNameProblem(const std::string& zone) {
  if (zone.empty()) return "must not be empty (leave it out for no zone)";
  if (isPlainName(zone, ".")) return "";
  if (zone.size() > kMaxNameLength)
    return "a zone name of " + std::to_string(zone.size()) + " bytes is longer than " +
           std::to_string(kMaxNameLength);
  return "'" + zone + "' is not a valid zone name (use letters, digits, '_', '-' and '.')";
}

void readTomlBackend(WalkContext& ctx, const toml::node& node, const std::string& path,
                 BackendConfig* b) {
  b->pos = posOf(node);
  const toml::table* t = node.as_table();
  if (!t) {
    ctx.error(posOf(node), path,
              "must be a table such as { name = \"cache-a\", address = \"127.0.0.1:9001\" }, "
              "got " + typeName(node));
    return;
  }
  TableWalker w(ctx, *t, path);
  // The value rules are shared with membership documents (lb/config/backends.h).
  auto check = [&](std::string_view key, const std::string& problem) {
    if (!problem.empty()) w.errorAt(key, problem);
  };
  if (w.string("name", &b->name, true)) check("name", backendNameProblem(b->name));
  if (w.string("address", &b->address, true)) check("address", backendAddressProblem(b->address));
  w.integer("weight", kMinBackendWeight, kMaxBackendWeight, &b->weight);
  if (w.string("hash_key", &b->hash_key)) check("hash_key", backendHashKeyProblem(b->hash_key));
  if (w.string("zone", &b->zone)) check("zone", zoneNameProblem(b->zone));
  w.checkUnknownKeys();
}

Result<std::vector<BackendConfig>> loadBackendListToml(const std::string& text,
                                                       const std::string& file,
                                                       const ClusterConfig& settings) {
  WalkContext ctx;
  ctx.file = file;
  std::optional<toml::table> parsed = parseTomlText(text, ctx);
  if (!parsed) return std::move(ctx.errors);
  toml::table& root = *parsed;
  std::vector<BackendConfig> backends;
  TableWalker w(ctx, root, "");
  if (const toml::array* a = w.array("backends", true)) {
    for (size_t i = 0; i < a->size(); ++i) {
      BackendConfig b;
      readTomlBackend(ctx, *a->get(i), "backends[" + std::to_string(i) + "]", &b);
      backends.push_back(std::move(b));
    }
    checkBackendList(settings, backends, {"backends", ""}, ctx);
  }
  w.checkUnknownKeys();
  if (!ctx.errors.empty()) {
    std::stable_sort(ctx.errors.begin(), ctx.errors.end(),
                     [](const ConfigError& a, const ConfigError& b) {
                       auto key = [](const ConfigError& e) {
                         return std::pair(e.pos.line == 0 ? UINT32_MAX : e.pos.line,
                                          e.pos.column);
                       };
                       return key(a) < key(b);
                     });
    return std::move(ctx.errors);
  }
  return backends;
}

void checkBackendList(const ClusterConfig& settings, const std::vector<BackendConfig>& backends,
                      const BackendListPaths& paths, WalkContext& ctx) {
  if (backends.empty()) {
    if (ctx.written(paths.backends))
      ctx.error(ctx.positionOf(paths.backends), paths.backends, "lists no backends");
    return;
  }
  checkDuplicates(backends, paths.backends, ctx);
  checkSelectorRules(settings, backends, paths, ctx);
  checkReplicasAndZones(settings, backends, paths, ctx);
}

}  // namespace lb
