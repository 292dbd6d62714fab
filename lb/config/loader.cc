// Reads a TOML file into lb::Config (lb/config/config.h) following docs/config.md: parse
// the whole file, walk every section with a TableWalker that records each problem with its
// file:line:column and key path, run the cross-reference checks (config_validate.cc), and
// fail once with every error in file order.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "lb/core/address.h"
#include "lb/config/backends.h"
#include "lb/config/config.h"
#include "lb/config/hot_keys_table.h"
#include "lb/config/membership_table.h"
#include "lb/config/tls_table.h"
#include "lb/config/validate.h"
#include "lb/config/walker.h"

namespace lb {

const char* healthCheckTypeName(HealthCheckType t) noexcept {
  switch (t) {
    case HealthCheckType::kHttp: return "http";
    case HealthCheckType::kTcp: return "tcp";
    case HealthCheckType::kRedis: return "redis";
    case HealthCheckType::kMemcached: return "memcached";
  }
  return "tcp";
}

const ClusterConfig* Config::findCluster(const std::string& name) const {
  for (const auto& c : clusters)
    if (c.name == name) return &c;
  return nullptr;
}

const ListenerConfig* Config::findListener(const std::string& name) const {
  for (const auto& l : listeners)
    if (l.name == name) return &l;
  return nullptr;
}

const ListenerConfig* Config::cacheListenerOf(const std::string& cluster) const {
  for (const auto& l : listeners)
    if (l.cluster == cluster && isCacheProtocol(l.protocol)) return &l;
  return nullptr;
}

namespace {

// A config larger than this is a mistake (a log file passed as --config), not a fleet.
constexpr size_t kMaxFileBytes = 16 << 20;
// Envoy's upper bound for a Maglev table; far beyond what any fleet needs.
constexpr int64_t kMaxTableSize = 5000011;
// handover.window: a day is far past any cache's refill; longer is a typo.
constexpr Duration kMaxHandoverWindow{24LL * 3600 * 1000};
// handover.copy_ttl: memcached reads an exptime over 30 days as a Unix time.
constexpr Duration kMaxCopyTtl{30LL * 24 * 3600 * 1000};

bool isPrime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

// RFC 9110 token characters: what a header field name or a cookie name may hold.
bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                  std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Listen addresses (listeners and admin) are numeric: a name can stand for several addresses
// (localhost is 127.0.0.1 and often ::1 too) and lb would bind only one of them, and the
// overlap check between listeners needs the numbers at load time.
void checkListenAddress(TableWalker& w, std::string_view key, const std::string& text) {
  HostPort parsed;
  std::string error;
  if (!parseHostPort(text, &parsed, &error)) {
    w.errorAt(key, error);
  } else if (!parsed.numeric) {
    const std::string port = std::to_string(parsed.port);
    w.errorAt(key, "'" + text + "': a listen address is numeric (a name can stand for several "
                   "addresses, and lb binds one): write e.g. 127.0.0.1:" + port + ", [::1]:" +
                   port + " or 0.0.0.0:" + port);
  }
}

// The instance's zone: [lb] zone when written, else LB_ZONE from the environment, so that one
// config file serves a fleet whose instances each know their zone (as Envoy's
// --service-zone does beside its bootstrap file).
void readZone(WalkContext& ctx, TableWalker* w, Config* c) {
  if (w != nullptr && w->string("zone", &c->zone)) {
    if (std::string why = zoneNameProblem(c->zone); !why.empty()) w->errorAt("zone", why);
    return;
  }
  const char* env = getenv("LB_ZONE");
  if (env == nullptr) return;
  c->zone = env;
  if (std::string why = zoneNameProblem(c->zone); !why.empty())
    ctx.error({}, "LB_ZONE", "(from the environment, as [lb] zone is not set) " + why);
}

void readLb(WalkContext& ctx, TableWalker& root, Config* c) {
  const toml::table* t = root.subtable("lb");
  if (!t) {
    readZone(ctx, nullptr, c);
    return;
  }
  TableWalker w(ctx, *t, "lb");
  readZone(ctx, &w, c);
  w.integer("workers", 0, 1024, &c->workers);
  w.enumeration<LogLevel>("log_level",
                          {{"error", LogLevel::kError}, {"warn", LogLevel::kWarn},
                           {"info", LogLevel::kInfo}, {"debug", LogLevel::kDebug}},
                          &c->log_level);
  w.string("access_log", &c->access_log);
  w.duration("drain_timeout", Duration{0}, &c->drain_timeout);
  w.checkUnknownKeys();
}

void readAdmin(WalkContext& ctx, TableWalker& root, Config* c) {
  const toml::table* t = root.subtable("admin");
  if (!t) return;
  TableWalker w(ctx, *t, "admin");
  if (w.string("listen", &c->admin_listen)) checkListenAddress(w, "listen", c->admin_listen);
  w.checkUnknownKeys();
}

// One entry of `hash = [...]`: exactly one key source, plus `terminal` and (cookie) `ttl`.
void readHashEntry(WalkContext& ctx, const toml::node& node, const std::string& path,
                   HashPolicy* h) {
  h->pos = posOf(node);
  const toml::table* t = node.as_table();
  if (!t) {
    ctx.error(posOf(node), path,
              "must be a table such as { header = \"x-cache-key\" }, got " + typeName(node));
    return;
  }
  TableWalker w(ctx, *t, path);
  std::vector<std::string> kinds;
  const std::vector<std::string> names = keyPluginNames();
  for (const auto& name : names)
    if (w.get(name)) kinds.push_back(name);
  w.boolean("terminal", &h->terminal);
  // An entry whose only keys are unknown gets just the unknown-key errors: their
  // did-you-mean says more than "needs one key source" would.
  bool only_unknown = !t->empty() && std::none_of(t->begin(), t->end(), [](const auto& kv) {
    return kv.first.str() == "terminal" || kv.first.str() == "ttl";
  });
  if (kinds.empty()) {
    if (!only_unknown) {
      std::string list;
      for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
      w.error("needs one key source: " + list);
    }
  } else if (kinds.size() > 1) {
    w.error("has both '" + kinds[0] + "' and '" + kinds[1] + "'; write one key source per entry");
  } else {
    h->kind = kinds[0];
    const toml::node& arg = *t->get(h->kind);
    bool takes_name = h->kind == "header" || h->kind == "cookie" || h->kind == "query";
    if (takes_name) {
      if (!arg.is_string()) {
        w.errorAt(h->kind, "must be a string (the " + h->kind + " name), got " + typeName(arg));
      } else {
        h->name = arg.as_string()->get();
        if (h->name.empty())
          w.errorAt(h->kind, "must not be empty");
        else if (h->kind != "query" && !isToken(h->name))
          w.errorAt(h->kind, "'" + h->name + "' is not a valid " + h->kind + " name");
      }
    } else if (!arg.is_boolean() || !arg.as_boolean()->get()) {
      w.errorAt(h->kind, "must be true (remove the entry to stop using it), got " +
                             (arg.is_boolean() ? std::string("false") : typeName(arg)));
    }
  }
  // Judged by the keys written, so that a second key source is not also blamed on `ttl`.
  if (std::find(kinds.begin(), kinds.end(), "cookie") != kinds.end()) {
    w.duration("ttl", Duration{0}, &h->ttl);
  } else if (t->contains("ttl")) {
    w.get("ttl");
    w.errorAt("ttl", "applies only to cookie entries");
  }
  w.checkUnknownKeys();
}

void readListener(WalkContext& ctx, const toml::key& key, const toml::node& node,
                  ListenerConfig* l) {
  l->name = std::string(key.str());
  std::string path = "listeners." + l->name;
  l->pos = posOf(node);
  if (!isPlainName(l->name, ""))
    ctx.error(posOf(key), path,
              "'" + l->name + "' is not a valid listener name (use letters, digits, '_' and "
              "'-', at most 64)");
  const toml::table* t = node.as_table();
  if (!t) {
    ctx.error(posOf(node), path, "must be a table ([listeners." + l->name + "]), got " +
                                     typeName(node));
    return;
  }
  TableWalker w(ctx, *t, path);
  if (w.string("listen", &l->listen, true)) checkListenAddress(w, "listen", l->listen);
  w.enumeration<Protocol>("protocol",
                          {{"http", Protocol::kHttp},
                           {"tcp", Protocol::kTcp},
                           {"redis", Protocol::kRedis},
                           {"memcached", Protocol::kMemcached}},
                          &l->protocol);
  if (w.string("cluster", &l->cluster, true) && l->cluster.empty())
    w.errorAt("cluster", "must not be empty");
  if (const toml::array* a = w.array("hash")) {
    for (size_t i = 0; i < a->size(); ++i) {
      HashPolicy h;
      readHashEntry(ctx, *a->get(i), path + ".hash[" + std::to_string(i) + "]", &h);
      l->hash.push_back(std::move(h));
    }
  }
  w.boolean("combine", &l->combine);
  w.boolean("fanout", &l->fanout);
  w.enumeration<OnMissingKey>("on_missing_key",
                              {{"random", OnMissingKey::kRandom},
                               {"round_robin", OnMissingKey::kRoundRobin},
                               {"reject", OnMissingKey::kReject}},
                              &l->on_missing_key);
  if (const toml::table* tt = w.subtable("timeouts")) {
    TableWalker tw(ctx, *tt, path + ".timeouts");
    tw.duration("connect", Duration{1}, &l->timeouts.connect);
    tw.duration("header", Duration{1}, &l->timeouts.header);
    tw.duration("idle", Duration{1}, &l->timeouts.idle);
    tw.duration("response", Duration{1}, &l->timeouts.response);
    tw.checkUnknownKeys();
  }
  if (const toml::table* lt = w.subtable("limits")) {
    TableWalker lw(ctx, *lt, path + ".limits");
    // Below 1 KiB ordinary browsers' requests fail; above 1 MiB a header is an attack.
    lw.integer("max_header_bytes", 1024, 1 << 20, &l->limits.max_header_bytes);
    lw.integer("max_connections", 1, 10000000, &l->limits.max_connections);
    // A command of 1 KiB holds any key with room to spare; 1 GiB is past Redis' own 512 MiB
    // bulk strings. Redis allows up to 1M arguments per command (proto-max-multibulk-len).
    lw.integer("max_request_bytes", 1024, 1 << 30, &l->limits.max_request_bytes);
    lw.integer("max_arguments", 16, 1 << 20, &l->limits.max_arguments);
    lw.integer("max_in_flight", 1, 65536, &l->limits.max_in_flight);
    lw.checkUnknownKeys();
  }
  if (const toml::table* ht = w.subtable("h2")) {
    TableWalker hw(ctx, *ht, path + ".h2");
    l->h2.pos = hw.pos();
    if (l->protocol != Protocol::kHttp)
      hw.error("is for http listeners (HTTP/2 to clients); this listener speaks " +
               std::string(protocolName(l->protocol)));
    // RFC 9113 §6.5.2: fewer than 100 streams "limits parallelism"; past 1000 one connection
    // holds more upstream connections than a client deserves. A window below 16 KiB is below
    // one DATA frame; past 16 MiB a stream buffers more than lb would hold for any client.
    // A request's fields are kept in one 64 KiB block (lb/proxy/h2/h2_stream.h), as an
    // HTTP/1.1 head is (limits.max_header_bytes, at most a block).
    hw.integer("max_concurrent_streams", 1, 1000, &l->h2.max_concurrent_streams);
    uint64_t v = 0;
    if (hw.bytes("initial_window", 16 << 10, 16 << 20, "", &v))
      l->h2.initial_window = static_cast<uint32_t>(v);
    if (hw.bytes("max_header_list", 1 << 10, 64 << 10, "", &v))
      l->h2.max_header_list = static_cast<uint32_t>(v);
    hw.enumeration<H2Cleartext>("cleartext",
                                {{"detect", H2Cleartext::kDetect}, {"only", H2Cleartext::kOnly}},
                                &l->h2.cleartext);
    hw.checkUnknownKeys();
  }
  if (w.string("hash_tag", &l->hash_tag) && l->hash_tag.size() != 2)
    w.errorAt("hash_tag", "must be two characters, an opening and a closing one such as \"{}\", "
                          "got '" + l->hash_tag + "'");
  if (w.string("password", &l->password) && l->password.empty())
    w.errorAt("password", "must not be empty (leave it out for no AUTH)");
  if (const toml::table* tt = w.subtable("tls")) readListenerTls(ctx, *tt, path + ".tls", l);
  w.checkUnknownKeys();
}

// `health = { type, path, expect, interval, timeout, rise, fall }`. The type's default and
// the checks that depend on it (path and expect are http's) come later, once the listeners
// in front of the cluster are known (validate.cc).
void readHealth(WalkContext& ctx, const toml::table& t, const std::string& path,
                HealthConfig* h) {
  TableWalker w(ctx, t, path);
  w.enumeration<HealthCheckType>("type",
                                 {{"http", HealthCheckType::kHttp},
                                  {"tcp", HealthCheckType::kTcp},
                                  {"redis", HealthCheckType::kRedis},
                                  {"memcached", HealthCheckType::kMemcached}},
                                 &h->type);
  std::string target;
  if (w.string("path", &target)) {
    // It goes on the request line as written: an origin-form target, no spaces or controls.
    bool plain = !target.empty() && target.size() <= 1024 && target[0] == '/' &&
                 std::none_of(target.begin(), target.end(), [](char c) {
                   return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
                 });
    if (plain)
      h->path = target;
    else
      w.errorAt("path", "must be a request path starting with '/' (no spaces, at most 1024 "
                        "bytes), got '" + target + "'");
  }
  w.integer("expect", 100, 599, &h->expect);
  // 10 ms: a check every few milliseconds would be load, not health.
  const bool interval_ok = w.duration("interval", Duration{10}, &h->interval);
  const bool timeout_ok = w.duration("timeout", Duration{1}, &h->timeout);
  if ((interval_ok || w.get("interval") == nullptr) && timeout_ok && h->timeout > h->interval)
    // One check at a time per backend: the next starts only once this one has ended.
    w.errorAt("timeout", "must not be longer than interval (" + formatDuration(h->interval) +
                             "), got " + formatDuration(h->timeout));
  w.integer("rise", 1, 100, &h->rise);
  w.integer("fall", 1, 100, &h->fall);
  w.checkUnknownKeys();
}

// `outlier = { consecutive_failures, base_ejection, max_ejection, max_ejected_percent }`.
void readOutlier(WalkContext& ctx, const toml::table& t, const std::string& path,
                 OutlierConfig* o) {
  TableWalker w(ctx, t, path);
  w.integer("consecutive_failures", 1, 1000, &o->consecutive_failures);
  const bool base_ok = w.duration("base_ejection", Duration{10}, &o->base_ejection);
  const bool max_ok = w.duration("max_ejection", Duration{10}, &o->max_ejection);
  if ((base_ok || w.get("base_ejection") == nullptr) && max_ok &&
      o->max_ejection < o->base_ejection)
    w.errorAt("max_ejection", "must not be shorter than base_ejection (" +
                                  formatDuration(o->base_ejection) + "), got " +
                                  formatDuration(o->max_ejection));
  w.integer("max_ejected_percent", 1, 100, &o->max_ejected_percent);
  w.checkUnknownKeys();
}

void readCluster(WalkContext& ctx, const toml::key& key, const toml::node& node,
                 ClusterConfig* c) {
  c->name = std::string(key.str());
  std::string path = "clusters." + c->name;
  c->pos = posOf(node);
  if (!isPlainName(c->name, ""))
    ctx.error(posOf(key), path,
              "'" + c->name + "' is not a valid cluster name (use letters, digits, '_' and "
              "'-', at most 64)");
  const toml::table* t = node.as_table();
  if (!t) {
    ctx.error(posOf(node), path, "must be a table ([clusters." + c->name + "]), got " +
                                     typeName(node));
    return;
  }
  TableWalker w(ctx, *t, path);
  std::string selector;
  if (w.string("selector", &selector)) {
    std::vector<std::string> names = selectorNames();
    if (std::find(names.begin(), names.end(), selector) != names.end())
      c->selector = selector;
    else
      w.errorAt("selector", TableWalker::notOneOf(selector, names));
  }
  int64_t factor = 0;
  if (w.integer("hash_balance_factor", 0, 100000, &factor)) {
    if (factor > 0 && factor <= 100)
      w.errorAt("hash_balance_factor",
                "must be 0 (off) or > 100 (percent of the mean load), got " +
                    std::to_string(factor));
    else
      c->hash_balance_factor = static_cast<uint32_t>(factor);
  }
  w.integer("retries", 0, 100, &c->retries);
  w.integer("replicas", 1, kMaxReplicas, &c->replicas);
  w.enumeration<ReplicaRead>("read", {{"primary", ReplicaRead::kPrimary},
                                      {"local", ReplicaRead::kLocal}},
                             &c->read);
  // Below a second a fleet's DNS would see lb as a flood; HAProxy's `hold valid` defaults to
  // 10s, and nginx's `resolver valid=` is usually set in seconds to minutes.
  if (w.duration("resolve_interval", Duration{0}, &c->resolve_interval) &&
      c->resolve_interval.count() > 0 && c->resolve_interval < Duration{1000})
    w.errorAt("resolve_interval", "must be 0 (off) or at least 1s, got " +
                                      formatDuration(c->resolve_interval));
  if (w.string("password", &c->password) && c->password.empty())
    w.errorAt("password", "must not be empty (leave it out for no AUTH)");
  // twemproxy's server_connections; more than a few only spreads one worker's commands
  // over more sockets.
  w.integer("server_connections", 1, 64, &c->server_connections);
  if (const toml::table* mt = w.subtable("maglev")) {
    TableWalker mw(ctx, *mt, path + ".maglev");
    int64_t size = 0;
    if (mw.integer("table_size", 1, kMaxTableSize, &size)) {
      if (isPrime(size))
        c->table_size = static_cast<uint64_t>(size);
      else
        // Maglev's permutations need a prime table size (NSDI 2016, §3.4).
        mw.errorAt("table_size", "table size " + std::to_string(size) +
                                     " is not prime (e.g. 251, 4099, 65537, 655373)");
    }
    mw.checkUnknownKeys();
  }
  if (const toml::table* rt = w.subtable("ring_hash")) {
    TableWalker rw(ctx, *rt, path + ".ring_hash");
    rw.integer("vnodes", 1, 10000, &c->vnodes);
    rw.checkUnknownKeys();
  }
  if (const toml::table* tt = w.subtable("twemproxy")) {
    TableWalker tw(ctx, *tt, path + ".twemproxy");
    std::string hash;
    if (tw.string("hash", &hash)) {
      const std::vector<std::string> names = keyHashNamesOf("twemproxy");
      if (std::find(names.begin(), names.end(), hash) != names.end())
        c->twemproxy_hash = hash;
      else
        tw.errorAt("hash", TableWalker::notOneOf(hash, names));
    }
    // nutcracker's distribution: key (conf_set_distribution); its third, random, places no
    // key anywhere in particular, so there is nothing to stay compatible with.
    std::string distribution;
    if (tw.string("distribution", &distribution)) {
      const std::vector<std::string> dists = {"ketama", "modula"};
      if (std::find(dists.begin(), dists.end(), distribution) != dists.end())
        c->twemproxy_distribution = distribution;
      else
        tw.errorAt("distribution", TableWalker::notOneOf(distribution, dists));
    }
    tw.checkUnknownKeys();
  }
  w.integer("panic_threshold", 0, 100, &c->panic_threshold);
  if (const toml::table* ht = w.subtable("health"))
    readHealth(ctx, *ht, path + ".health", &c->health.emplace());
  if (const toml::table* ot = w.subtable("outlier"))
    readOutlier(ctx, *ot, path + ".outlier", &c->outlier.emplace());
  if (const toml::table* mt = w.subtable("membership"))
    readMembership(ctx, *mt, path + ".membership", &c->membership.emplace());
  if (const toml::table* ht = w.subtable("hot_keys"))
    readHotKeys(ctx, *ht, path + ".hot_keys", &c->hot_keys);
  if (const toml::table* ht = w.subtable("handover")) {
    TableWalker hw(ctx, *ht, path + ".handover");
    HandoverConfig& h = c->handover.emplace();
    h.pos = hw.pos();
    if (hw.duration("window", Duration{0}, &h.window) && h.window > kMaxHandoverWindow)
      hw.errorAt("window", "must be at most 24h, got " + formatDuration(h.window));
    if (hw.duration("copy_ttl", Duration{1000}, &h.copy_ttl) && h.copy_ttl > kMaxCopyTtl)
      hw.errorAt("copy_ttl", "must be at most 720h (30 days: memcached reads a longer "
                             "exptime as a date), got " + formatDuration(h.copy_ttl));
    hw.checkUnknownKeys();
  }
  if (const toml::table* tt = w.subtable("tls")) readClusterTls(ctx, *tt, path + ".tls", &c->tls);
  // With a membership the file's backends are only the fallback, so they may be left out.
  if (const toml::array* a = w.array("backends", !t->contains("membership"))) {
    for (size_t i = 0; i < a->size(); ++i) {
      BackendConfig b;
      readTomlBackend(ctx, *a->get(i), path + ".backends[" + std::to_string(i) + "]", &b);
      c->backends.push_back(std::move(b));
    }
  }
  w.checkUnknownKeys();
}

// [listeners.NAME] and [clusters.NAME]: a table of named tables, kept in file order.
template <typename T, typename Read>
void readNamed(WalkContext& ctx, TableWalker& root, std::string_view section,
               std::vector<T>* out, Read read) {
  const toml::table* t = root.subtable(section);
  if (!t) return;
  for (auto&& [key, node] : *t) {
    T item;
    read(ctx, key, node, &item);
    out->push_back(std::move(item));
  }
  // toml++ keeps keys sorted; the file order is what users expect to see everywhere.
  std::stable_sort(out->begin(), out->end(), [](const T& a, const T& b) {
    return std::pair(a.pos.line, a.pos.column) < std::pair(b.pos.line, b.pos.column);
  });
}

// Asks `resolver` about every distinct backend host name at once and reports each backend
// whose name did not resolve at its address. Runs on a config whose other values may be wrong,
// so that one `lb --check` reports everything.
void resolveBackendNames(const Config& config, NameResolver& resolver, WalkContext& ctx) {
  struct Use {
    std::string path;
    size_t name;   // index into names
  };
  std::vector<std::string> names;
  std::vector<Use> uses;
  for (const auto& c : config.clusters) {
    for (size_t i = 0; i < c.backends.size(); ++i) {
      HostPort parsed;
      std::string error;
      if (!parseHostPort(c.backends[i].address, &parsed, &error) || parsed.numeric) continue;
      auto it = std::find(names.begin(), names.end(), parsed.host);
      uses.push_back({"clusters." + c.name + ".backends[" + std::to_string(i) + "].address",
                      static_cast<size_t>(it - names.begin())});
      if (it == names.end()) names.push_back(parsed.host);
    }
  }
  if (names.empty()) return;
  const std::vector<std::string> why = resolver.resolve(names);
  for (const Use& u : uses) {
    if (u.name >= why.size() || why[u.name].empty()) continue;
    ctx.error(ctx.positionOf(u.path), u.path,
              "cannot resolve '" + names[u.name] + "': " + why[u.name]);
  }
}

bool errorBefore(const ConfigError& a, const ConfigError& b) {
  // Errors without a position (none today) sort last.
  auto key = [](const ConfigError& e) {
    return std::pair(e.pos.line == 0 ? UINT32_MAX : e.pos.line, e.pos.column);
  };
  return key(a) < key(b);
}

}  // namespace

Result<Config> loadConfigString(const std::string& text, const std::string& file,
                                NameResolver* resolver) {
  WalkContext ctx;
  ctx.file = file;
  std::optional<toml::table> parsed = parseTomlText(text, ctx);
  if (!parsed) return std::move(ctx.errors);
  toml::table& root = *parsed;
  Config config;
  config.file = file;
  TableWalker w(ctx, root, "");
  readLb(ctx, w, &config);
  readAdmin(ctx, w, &config);
  readNamed(ctx, w, "listeners", &config.listeners, readListener);
  readNamed(ctx, w, "clusters", &config.clusters, readCluster);
  w.checkUnknownKeys();
  applyHealthDefaults(config, ctx);
  validateConfig(config, ctx);
  if (resolver != nullptr) resolveBackendNames(config, *resolver, ctx);
  if (!ctx.errors.empty()) {
    std::stable_sort(ctx.errors.begin(), ctx.errors.end(), errorBefore);
    return std::move(ctx.errors);
  }
  return config;
}

Result<Config> loadConfigFile(const std::string& path, NameResolver* resolver) {
  Result<std::string> text = readConfigFile(path);
  if (!text.ok()) return text.errors();
  return loadConfigString(text.value(), path, resolver);
}

Result<std::string> readConfigFile(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return Errors{{path, {}, "", std::string("cannot open: ") + strerror(errno)}};
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
    if (text.size() > kMaxFileBytes) {
      fclose(f);
      return Errors{{path, {}, "", "larger than 16 MiB; is this really a config file?"}};
    }
  }
  bool failed = ferror(f);
  int err = errno;
  fclose(f);
  if (failed) return Errors{{path, {}, "", std::string("cannot read: ") + strerror(err)}};
  return text;
}

}  // namespace lb
