#include "lb/config/validate.h"

#include <algorithm>

#include "lb/config/backends.h"
#include "lb/core/address.h"
#include "plugins/builtin.h"

namespace lb {

namespace {

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Options that mean something only on a redis or memcached listener, and what such a
// listener cannot have: a written key that does nothing is an error, never silently ignored.
void checkCacheOptions(const Config& config, const ListenerConfig& l, const std::string& path,
                       WalkContext& ctx) {
  const bool cache = isCacheProtocol(l.protocol);
  const std::string proto = protocolName(l.protocol);
  auto onlyCache = [&](const std::string& key, const char* what) {
    const std::string p = path + "." + key;
    if (!cache && ctx.written(p))
      ctx.error(ctx.positionOf(p), p,
                std::string("applies only to redis and memcached listeners (") + what +
                    "); this listener has protocol = \"" + proto + "\"");
  };
  onlyCache("hash_tag", "the part of each command's key that is hashed");
  onlyCache("timeouts.response", "each command's answer; http uses timeouts.idle");
  onlyCache("limits.max_request_bytes", "the largest command");
  onlyCache("limits.max_arguments", "the most arguments or keys of one command");
  onlyCache("limits.max_in_flight", "unanswered commands per client");
  onlyCache("fanout", "commands that address every server sent to every server");
  if (l.protocol != Protocol::kRedis && ctx.written(path + ".password"))
    ctx.error(ctx.positionOf(path + ".password"), path + ".password",
              "applies only to redis listeners (clients AUTH to lb); this listener has "
              "protocol = \"" + proto + "\"");
  if (!l.hash_tag.empty()) {
    for (char c : l.hash_tag)
      if (c <= ' ' || c >= 127) {
        ctx.error(ctx.positionOf(path + ".hash_tag"), path + ".hash_tag",
                  "must be two printable characters other than a space, such as \"{}\"");
        break;
      }
  }
  if (!cache) {
    // The near cache answers redis and memcached reads; an HTTP or TCP listener's requests
    // would never use it, and accepting it there would let the operator think they do.
    if (const ClusterConfig* c = config.findCluster(l.cluster); c && c->hot_keys.near_cache) {
      const std::string p = "clusters." + c->name + ".hot_keys.near_cache";
      ctx.error(ctx.positionOf(p), p,
                "the near cache serves redis and memcached reads only, and listener '" +
                    l.name + "' (" + proto + ") sends this cluster its requests; remove it "
                    "or give that listener a cluster of its own");
    }
    return;
  }
  if (!l.hash.empty())
    ctx.error(ctx.positionOf(path + ".hash"), path + ".hash",
              "a " + proto + " listener routes each command by its own key; remove hash "
              "(set hash_tag to hash part of a key)");
  if (l.protocol == Protocol::kMemcached) {
    if (const ClusterConfig* c = config.findCluster(l.cluster); c && !c->password.empty()) {
      const std::string p = "clusters." + c->name + ".password";
      ctx.error(ctx.positionOf(p), p,
                "memcached has no AUTH, and listener '" + l.name +
                    "' (memcached) sends this cluster commands; remove it or use a "
                    "cluster of its own for redis");
    }
  }
}

void checkListeners(const Config& config, WalkContext& ctx) {
  std::vector<std::string> clusters;
  for (const auto& c : config.clusters) clusters.push_back(c.name);
  for (const auto& l : config.listeners) {
    std::string path = "listeners." + l.name;
    if (!l.cluster.empty() && !config.findCluster(l.cluster))
      ctx.error(ctx.positionOf(path + ".cluster"), path + ".cluster",
                "cluster '" + l.cluster + "' is not defined" + didYouMean(l.cluster, clusters));
    checkCacheOptions(config, l, path, ctx);
    if (l.protocol != Protocol::kTcp) continue;
    for (size_t i = 0; i < l.hash.size(); ++i) {
      const std::string& kind = l.hash[i].kind;
      if (!kind.empty() && keyPluginIsL7(kind))
        ctx.error(l.hash[i].pos, at(path + ".hash", i),
                  "'" + kind + "' needs an HTTP request, but this listener has protocol = "
                  "\"tcp\" (use source_ip or five_tuple)");
    }
    if (l.hash.empty() && !ctx.written(path + ".on_missing_key"))
      ctx.error(l.pos, path,
                "a tcp listener needs a key: set hash = [ { five_tuple = true } ] (or "
                "source_ip), or on_missing_key to choose without one");
  }
}

// Two sockets that would split one port's connections between them, including the admin one.
void checkListenAddresses(const Config& config, WalkContext& ctx) {
  struct Bound {
    std::string path;
    std::string text;
    SourcePos pos;
    sockaddr_storage addr;
  };
  std::vector<Bound> bound;
  auto add = [&](const std::string& path, const std::string& text) {
    Bound b{path, text, ctx.positionOf(path), {}};
    socklen_t len = 0;
    std::string error;
    if (parseAddress(text, &b.addr, &len, &error)) bound.push_back(std::move(b));
  };
  add("admin.listen", config.admin_listen);
  for (const auto& l : config.listeners) add("listeners." + l.name + ".listen", l.listen);
  // Report the later of two in the file, naming the earlier.
  std::stable_sort(bound.begin(), bound.end(), [](const Bound& a, const Bound& b) {
    return std::pair(a.pos.line, a.pos.column) < std::pair(b.pos.line, b.pos.column);
  });
  for (size_t i = 0; i < bound.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const sockaddr* a = reinterpret_cast<const sockaddr*>(&bound[i].addr);
      const sockaddr* b = reinterpret_cast<const sockaddr*>(&bound[j].addr);
      if (!addressesOverlap(a, b)) continue;
      std::string owner = bound[j].path.substr(0, bound[j].path.size() - 7);  // drop ".listen"
      ctx.error(bound[i].pos, bound[i].path,
                "'" + bound[i].text + "' overlaps " + owner + " ('" + bound[j].text +
                    "', line " + std::to_string(bound[j].pos.line) + ")");
      break;
    }
  }
}

// The checks on the backend list itself are shared with membership documents
// (lb/config/backends.h); what is left here concerns the cluster's own settings.
void checkSelector(const ClusterConfig& c, const std::string& path, WalkContext& ctx) {
  if (c.selector != "twemproxy" && ctx.written(path + ".twemproxy")) {
    std::string tp = path + ".twemproxy";
    // Name the key that would be ignored: `distribution` reads as a general setting, and a
    // user who wrote it on a ketama cluster should see that it is nutcracker's, not lb's.
    if (ctx.written(tp + ".distribution")) tp += ".distribution";
    ctx.error(ctx.positionOf(tp), tp,
              "applies only to selector = \"twemproxy\" (this cluster's selector is '" +
                  c.selector + "')");
  }
}

// hot_keys.spread acts on HTTP GET and HEAD only: on a cluster that only non-HTTP listeners
// serve it would be silently ignored (a TCP connection has no method that says it only
// reads; redis and memcached hot keys are for the near cache). A cluster no listener serves
// yet may be given one by a reload, so it is left alone.
void checkSpread(const Config& config, const ClusterConfig& c, const std::string& path,
                 WalkContext& ctx) {
  if (c.hot_keys.spread == 0) return;
  std::string served_by;
  for (const auto& l : config.listeners) {
    if (l.cluster != c.name) continue;
    if (l.protocol == Protocol::kHttp) return;
    if (served_by.empty()) served_by = l.name + "' has protocol = \"" + protocolName(l.protocol);
  }
  if (served_by.empty()) return;
  const std::string sp = path + ".hot_keys.spread";
  ctx.error(ctx.positionOf(sp), sp,
            "applies only to HTTP listeners (GET and HEAD of a hot key), and no listener of "
            "this cluster is one (listener '" + served_by + "\")");
}

// handover: HTTP and TCP listeners ramp moved keys over, redis and memcached listeners read
// a miss through from the previous owner (lb/routing/handover.h, lb/proxy/cache/
// handover_reads.h); copy_ttl is the read-through's alone, and refused where nothing reads
// through rather than ignored.
void checkHandover(const Config& config, const ClusterConfig& c, const std::string& path,
                   WalkContext& ctx) {
  if (!c.handover) return;
  const std::string tp = path + ".handover.copy_ttl";
  if (!ctx.written(tp)) return;
  for (const auto& l : config.listeners)
    if (l.cluster == c.name &&
        (l.protocol == Protocol::kRedis || l.protocol == Protocol::kMemcached))
      return;
  ctx.error(ctx.positionOf(tp), tp,
            "applies only to the redis and memcached read-through, and no listener of this "
            "cluster is one (HTTP and TCP listeners ramp keys over and copy nothing)");
}

// replicas: the cache protocols write each key to its first R hosts, HTTP lets any of them
// serve it; a TCP connection is one stream to one host, so there it would mean nothing.
// read = "local" reads from the replica in lb's own zone, so it needs that zone, and a
// replica to choose.
void checkReplicas(const Config& config, const ClusterConfig& c, const std::string& path,
                   WalkContext& ctx) {
  const std::string rp = path + ".replicas";
  if (c.replicas > 1)
    for (const auto& l : config.listeners)
      if (l.cluster == c.name && l.protocol == Protocol::kTcp) {
        ctx.error(ctx.positionOf(rp), rp,
                  "applies to redis, memcached and http listeners; listener '" + l.name +
                      "' is tcp, whose connection goes to one host");
        break;
      }
  if (c.read != ReplicaRead::kLocal) return;
  const std::string readp = path + ".read";
  if (c.replicas < 2)
    ctx.error(ctx.positionOf(readp), readp,
              "\"local\" chooses among a key's replicas; set replicas = 2 or more (this "
              "cluster keeps 1 copy)");
  if (config.zone.empty())
    ctx.error(ctx.positionOf(readp), readp,
              "\"local\" needs this instance's zone: set [lb] zone, or LB_ZONE in the "
              "environment");
}

// path and expect say what an HTTP check sends and accepts; on another type they would be
// silently ignored.
void checkHealth(const ClusterConfig& c, const std::string& path, WalkContext& ctx) {
  if (!c.health || c.health->type == HealthCheckType::kHttp) return;
  const std::string hpath = path + ".health";
  const bool defaulted = !ctx.written(hpath + ".type");
  for (const char* key : {"path", "expect"}) {
    const std::string p = hpath + "." + key;
    if (!ctx.written(p)) continue;
    std::string why = std::string("applies only to type = \"http\" (this cluster's checks are '") +
                      healthCheckTypeName(c.health->type) + "'" +
                      (defaulted ? ", the default for its non-http listeners; write type = "
                                   "\"http\" to check over HTTP)"
                                 : ")");
    ctx.error(ctx.positionOf(p), p, why);
  }
}

}  // namespace

void applyHealthDefaults(Config& config, const WalkContext& ctx) {
  for (auto& c : config.clusters) {
    if (!c.health || ctx.written("clusters." + c.name + ".health.type")) continue;
    bool any = false, all_http = true;
    for (const auto& l : config.listeners) {
      if (l.cluster != c.name) continue;
      any = true;
      all_http = all_http && l.protocol == Protocol::kHttp;
    }
    c.health->type = any && all_http ? HealthCheckType::kHttp : HealthCheckType::kTcp;
  }
}

std::vector<std::string> selectorNames() {
  std::vector<std::string> names;
  for (const auto& s : allSelectors()) names.emplace_back(s.name);
  return names;
}

std::vector<std::string> keyHashNamesOf(std::string_view selector) {
  std::vector<std::string> names;
  for (std::string_view n : keyHashNames(selector)) names.emplace_back(n);
  return names;
}

std::vector<std::string> keyPluginNames() {
  std::vector<std::string> names;
  for (const auto& k : allKeyPlugins()) names.emplace_back(k.name);
  return names;
}

bool keyPluginIsL7(std::string_view name) {
  const KeyPluginInfo* k = findKeyPlugin(name);
  return k && k->l7;
}

Errors checkServes(const Config& config, Errors* warnings) {
  if (config.listeners.empty() && config.clusters.empty())
    return {{config.file, {1, 1}, "",
             "no listener and no cluster: lb would start and serve nothing (a config needs "
             "[listeners.NAME] and the [clusters.NAME] it names)"}};
  if (config.listeners.empty() && warnings != nullptr)
    warnings->push_back({config.file, config.clusters.front().pos, "",
                         "warning: no listener: lb accepts no connection until a reload adds "
                         "one ([listeners.NAME])"});
  if (warnings != nullptr)
    for (const auto& c : config.clusters)
      if (c.tls.enabled && !c.tls.verify)
        warnings->push_back({config.file, c.tls.pos, "clusters." + c.name + ".tls.verify",
                             "warning: verify = false: lb trusts any certificate its backends "
                             "show, so anyone on the path can pose as them"});
  return {};
}

void validateConfig(const Config& config, WalkContext& ctx) {
  checkListeners(config, ctx);
  checkListenAddresses(config, ctx);
  for (const auto& c : config.clusters) {
    std::string path = "clusters." + c.name;
    // A membership cluster's backends are a fallback: none means none until etcd answers.
    if (!c.membership || !c.backends.empty())
      checkBackendList(c, c.backends, {path + ".backends", path}, ctx);
    checkSelector(c, path, ctx);
    checkHealth(c, path, ctx);
    checkSpread(config, c, path, ctx);
    checkHandover(config, c, path, ctx);
    checkReplicas(config, c, path, ctx);
  }
}

}  // namespace lb
