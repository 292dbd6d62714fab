#include "lb/config/membership_table.h"

#include <string>

#include "lb/config/tls_table.h"
#include "lb/core/address.h"

namespace lb {

namespace {

// A key's longest useful form: etcd's default request limit is 1.5 MiB, and a key is a path.
constexpr size_t kMaxKeyBytes = 4096;
// Beyond a minute a fleet change waits longer than any operator would; 0 applies each
// revision as it comes.
constexpr Duration kMaxApplyInterval{60000};
// A Range every 100 ms would be load on etcd, not reconciliation.
constexpr Duration kMinReconcile{100};

}  // namespace

std::string etcdUrlProblem(std::string_view url) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  const bool tls = url.substr(0, kHttps.size()) == kHttps;
  if (!tls && url.substr(0, kHttp.size()) != kHttp)
    return "'" + std::string(url) + "' is not an etcd client URL (write http://host:port or "
           "https://host:port, e.g. http://127.0.0.1:2379)";
  std::string_view rest = url.substr(tls ? kHttps.size() : kHttp.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos)
    return "'" + std::string(url) + "': an etcd client URL has no path (write http://host:port)";
  // etcd's client port when none is written, as etcdctl assumes it.
  std::string hostport(rest);
  const bool bracketed = !hostport.empty() && hostport[0] == '[';
  if (bracketed ? hostport.find("]:") == std::string::npos
                : hostport.find(':') == std::string::npos)
    hostport += ":2379";
  HostPort parsed;
  std::string error;
  if (!parseHostPort(hostport, &parsed, &error)) return "'" + std::string(url) + "': " + error;
  // Names would need a lookup each time lb connects; the main loop resolves only backends.
  if (!parsed.numeric)
    return "'" + std::string(url) + "': the etcd host must be an IP address (write e.g. "
           "http://127.0.0.1:2379)";
  return "";
}

void readMembership(WalkContext& ctx, const toml::table& table, const std::string& path,
                    MembershipConfig* m) {
  TableWalker w(ctx, table, path);
  m->pos = w.pos();
  if (const toml::array* a = w.array("etcd", true)) {
    if (a->empty()) w.errorAt("etcd", "lists no endpoint (write e.g. [\"http://127.0.0.1:2379\"])");
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& n = *a->get(i);
      const std::string p = path + ".etcd[" + std::to_string(i) + "]";
      if (!n.is_string()) {
        ctx.error(posOf(n), p, "must be a string (an http:// URL), got " + typeName(n));
        continue;
      }
      std::string url = n.as_string()->get();
      if (std::string why = etcdUrlProblem(url); !why.empty()) {
        ctx.error(posOf(n), p, why);
        continue;
      }
      m->etcd.push_back(std::move(url));
    }
  }
  if (w.string("key", &m->key, true)) {
    if (m->key.empty())
      w.errorAt("key", "must not be empty (the etcd key holding the membership document)");
    else if (m->key.size() > kMaxKeyBytes)
      w.errorAt("key", "must be at most " + std::to_string(kMaxKeyBytes) + " bytes");
  }
  w.integer("max_remove_percent", 1, 100, &m->max_remove_percent);
  if (w.duration("min_apply_interval", Duration{0}, &m->min_apply_interval) &&
      m->min_apply_interval > kMaxApplyInterval)
    w.errorAt("min_apply_interval", "must be at most " + formatDuration(kMaxApplyInterval) +
                                        ", got " + formatDuration(m->min_apply_interval));
  w.duration("reconcile_interval", kMinReconcile, &m->reconcile_interval);
  if (w.string("state_file", &m->state_file) && m->state_file.empty())
    w.errorAt("state_file", "must not be empty (leave it out for no state file)");
  // The same table as a cluster's own `tls`, read by the same reader: one set of rules for
  // every client certificate lb holds.
  if (const toml::table* t = w.subtable("tls")) {
    readClusterTls(ctx, *t, path + ".tls", &m->tls);
    bool https = false;
    for (const auto& url : m->etcd) https = https || url.rfind("https://", 0) == 0;
    if (!https && !m->etcd.empty())
      w.errorAt("tls", "is set but every etcd URL is http:// (write https://host:port)");
  }
  const bool user = w.string("user", &m->user);
  const bool password = w.string("password", &m->password);
  if (user && m->user.empty()) w.errorAt("user", "must not be empty (leave it out for none)");
  if (user && !password) w.errorAt("user", "needs its password too: password = \"...\"");
  if (password && !user) w.errorAt("password", "needs its user too: user = \"...\"");
  w.checkUnknownKeys();
}

}  // namespace lb
