#include "lb/app/memberships.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "lb/app/resolver.h"
#include "lb/app/worker_group.h"
#include "lb/core/log.h"
#include "lb/membership/document.h"
#include "lb/membership/membership_source.h"
#include "lb/membership/membership_tls.h"
#include "lb/membership/state_file.h"
#include "lb/routing/readdress.h"

namespace lb {

struct Memberships::Entry {
  std::string cluster;
  MembershipConfig config;
  MembershipSource* source = nullptr;
  std::shared_ptr<ClusterState> state;   // keeps the status /backends shows
  std::optional<MembershipUpdate> initial;   // the start's first update, until initialOverlay
  std::optional<bool> initial_applied;       // its verdict, told to the source at goLive
  ResolveBatch* batch = nullptr;             // names of a document being looked up
  std::string tls_files;                     // the bytes its TLS context was built from
};

namespace {

std::string pathOf(const std::string& cluster) { return "clusters." + cluster + ".membership"; }

// The bytes of a membership's TLS files (its CA, certificate and key), so that a reload
// after a certificate was renewed in place starts the watch again with the new one, as a
// cluster's connections take renewed files at a reload. "" without tls.
std::string tlsFilesOf(const MembershipConfig& m) {
  if (!m.tls.enabled) return "";
  std::string out;
  for (const std::string* path : {&m.tls.ca, &m.tls.cert, &m.tls.key}) {
    if (path->empty()) continue;
    std::ifstream in(*path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    out += *path + '\0' + bytes.str() + '\0';
  }
  return out;
}

// A document's errors in one line for the log and /backends: the first few, then a count.
std::string summary(const Errors& errors) {
  constexpr size_t kShown = 3;
  std::string s;
  for (size_t i = 0; i < errors.size() && i < kShown; ++i) s += (i ? "; " : "") + errors[i].format();
  if (errors.size() > kShown) s += "; and " + std::to_string(errors.size() - kShown) + " more";
  return s;
}

std::string documentSource(const MembershipConfig& m, int64_t revision) {
  return "etcd:" + m.key + "@" + std::to_string(revision);
}

std::vector<std::string> namesOf(const std::vector<BackendConfig>& backends) {
  ClusterConfig c;
  c.backends = backends;
  return hostNamesOf(c);
}

void writeState(const std::string& cluster, const MembershipConfig& m, int64_t revision,
                const std::vector<BackendConfig>& backends) {
  if (m.state_file.empty()) return;
  MembershipState s{cluster, m.key, revision, membershipJson(backends)};
  std::string error;
  if (!writeMembershipState(m.state_file, s, &error))
    LB_WARN("membership: cluster %s: cannot write the state file: %s", cluster.c_str(),
            error.c_str());
}

}  // namespace

Errors checkStateFileDirs(const Config& config) {
  Errors errors;
  for (const ClusterConfig& c : config.clusters) {
    if (!c.membership || c.membership->state_file.empty()) continue;
    const std::string& path = c.membership->state_file;
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      errors.push_back({config.file, c.membership->pos, pathOf(c.name) + ".state_file",
                        "'" + path + "': directory '" + dir + "' does not exist"});
  }
  return errors;
}

Memberships::Memberships(uv_loop_t* loop, WorkerGroup& server) : loop_(loop), server_(server) {}

Memberships::~Memberships() { stop(); }

void Memberships::startSource(const ClusterConfig& cluster_config, const std::string& file,
                              int64_t served) {
  const std::string& cluster = cluster_config.name;
  const MembershipConfig& config = *cluster_config.membership;
  auto e = std::make_unique<Entry>();
  e->cluster = cluster;
  e->config = config;
  e->tls_files = tlsFilesOf(config);
  e->state = server_.registry().cluster(cluster);
  MembershipStatus& st = e->state->membership;
  st.configured = true;
  st.state = sourceStateName(SourceState::kStarting);
  st.watch_up = false;
  MembershipSource::Hooks hooks;
  hooks.build = [this, cluster](const MembershipUpdate& u) { onBuild(cluster, u); };
  hooks.changed = [this, cluster] { onChanged(cluster); };
  hooks.confirmed = [this, cluster](int64_t revision) { onConfirmed(cluster, revision); };
  hooks.older = [this, cluster](int64_t revision, int64_t newest) {
    auto it = entries_.find(cluster);
    if (it == entries_.end() || stopped_) return;
    // Counted and shown as a rejection, so the alert on rejected updates fires: every
    // instance keeps the newer table, and no instance may move to the restored one by
    // itself (half the fleet would). A restart of lb takes what etcd holds then.
    reject(*it->second, revision,
           "older than revision " + std::to_string(newest) +
               " already seen: etcd was restored from an older backup or rebuilt; the table "
               "served stays (restart lb to serve what etcd holds now)",
           /*tell_source=*/false);
  };
  std::string error;
  // lb's start refused files that do not load (checkTls); a reload whose file broke since
  // cannot watch this cluster, and says so here.
  Errors tls_errors;
  auto tls = buildMembershipTls(cluster_config, file, &tls_errors);
  if (!tls_errors.empty()) {
    for (const ConfigError& te : tls_errors)
      LB_ERROR("membership: cluster %s: %s", cluster.c_str(), te.format().c_str());
  } else {
    e->source = MembershipSource::start(loop_, cluster, config, served, std::move(hooks),
                                        std::move(tls), &error);
    if (e->source == nullptr)
      LB_ERROR("membership: cluster %s: %s", cluster.c_str(), error.c_str());
  }
  entries_[cluster] = std::move(e);
  onChanged(cluster);
}

void Memberships::stopEntry(Entry& e) {
  if (e.batch != nullptr) {
    e.batch->abandon();
    e.batch = nullptr;
  }
  if (e.source != nullptr) e.source->stop();
  e.source = nullptr;
  e.state->membership.state = sourceStateName(SourceState::kStopped);
  e.state->membership.watch_up = false;
}

void Memberships::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& [name, e] : entries_) stopEntry(*e);
}

void Memberships::onChanged(const std::string& cluster) {
  auto it = entries_.find(cluster);
  if (it == entries_.end() || it->second->source == nullptr) return;
  const SourceStatus& s = it->second->source->status();
  MembershipStatus& st = it->second->state->membership;
  st.state = sourceStateName(s.state);
  st.endpoint = s.endpoint;
  st.watch_up = s.watch_up;
  st.last_sync = s.last_sync;
}

void Memberships::onConfirmed(const std::string& cluster, int64_t revision) {
  if (!live_ || stopped_ || lifecycle_ == nullptr) return;
  std::shared_ptr<const Snapshot> snap = server_.snapshot();
  const ClusterSnapshot* c = snap ? snap->findCluster(cluster) : nullptr;
  if (c == nullptr || c->origin != MembershipOrigin::kStateFile || c->revision != revision) return;
  // The same backends, built again (the same table: no key moves, state kept) under etcd's name.
  BackendOrigins origins;
  for (const ClusterSnapshot& x : snap->clusters) origins[x.config->name] = {x.origin, x.revision};
  origins[cluster] = {MembershipOrigin::kEtcd, revision};
  Errors errors;
  if (lifecycle_->applyConfig(snap->config, resolvedHostsOf(*snap), origins, &errors))
    LB_INFO("membership: cluster %s: etcd holds revision %lld, the one served from the state "
            "file: serving it as etcd's",
            cluster.c_str(), static_cast<long long>(revision));
}

void Memberships::startAndWait(const Config& config, Duration wait) {
  for (const ClusterConfig& c : config.clusters)
    if (c.membership) startSource(c, config.file, 0);
  if (entries_.empty()) return;
  auto settled = [this] {
    return std::all_of(entries_.begin(), entries_.end(), [](const auto& kv) {
      return kv.second->source == nullptr || kv.second->source->settled();
    });
  };
  uv_timer_t timer;
  bool expired = false;
  uv_timer_init(loop_, &timer);
  timer.data = &expired;
  uv_timer_start(&timer, [](uv_timer_t* t) { *static_cast<bool*>(t->data) = true; },
                 static_cast<uint64_t>(wait.count()), 0);
  while (!expired && !settled()) uv_run(loop_, UV_RUN_ONCE);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
  uv_run(loop_, UV_RUN_NOWAIT);   // the timer's close
  if (!settled())
    LB_WARN("membership: etcd did not answer within %lld ms; starting without it",
            static_cast<long long>(wait.count()));
}

void Memberships::initialOverlay(Config& config, BackendOrigins& origins, ResolvedHosts& hosts) {
  BlockingResolver resolver;
  // The names of `backends` not yet in `hosts`, looked up; false with *why for the first
  // that does not resolve.
  auto resolve = [&](const std::vector<BackendConfig>& backends, std::string* why) {
    std::vector<std::string> names;
    for (std::string& n : namesOf(backends))
      if (!hosts.count(n)) names.push_back(std::move(n));
    if (names.empty()) return true;
    const std::vector<std::string> failed = resolver.resolve(names);
    for (size_t i = 0; i < names.size(); ++i)
      if (i < failed.size() && !failed[i].empty()) {
        *why = "cannot resolve '" + names[i] + "': " + failed[i];
        return false;
      }
    for (const auto& [name, address] : resolver.hosts()) hosts.emplace(name, address);
    return true;
  };
  for (ClusterConfig& c : config.clusters) {
    auto it = entries_.find(c.name);
    if (!c.membership || it == entries_.end()) continue;
    Entry& e = *it->second;
    const MembershipConfig& m = *c.membership;
    if (e.initial) {
      const MembershipUpdate u = std::move(*e.initial);
      e.initial.reset();
      e.initial_applied = false;
      std::string why;
      if (u.deleted) {
        reject(e, u.revision, "key deleted", false);
      } else if (auto doc = parseMembershipDocument(u.document, documentSource(m, u.revision), c);
                 !doc.ok()) {
        reject(e, u.revision, summary(doc.errors()), false);
      } else if (!resolve(doc.value().backends, &why)) {
        reject(e, u.revision, why, false);
      } else {
        c.backends = std::move(doc.value().backends);
        origins[c.name] = {MembershipOrigin::kEtcd, u.revision};
        e.initial_applied = true;
        ++e.state->membership.applied;
        writeState(c.name, m, u.revision, c.backends);
        LB_INFO("membership: cluster %s: applied revision %lld (%zu backends) at start",
                c.name.c_str(), static_cast<long long>(u.revision), c.backends.size());
        continue;
      }
    }
    if (!m.state_file.empty()) {
      auto state = readMembershipState(m.state_file);
      std::string why;
      if (!state.ok()) {
        why = summary(state.errors());
      } else if (state.value().cluster != c.name || state.value().key != m.key) {
        why = "it holds cluster '" + state.value().cluster + "', key '" + state.value().key + "'";
      } else if (auto doc = parseMembershipDocument(state.value().document, m.state_file, c);
                 !doc.ok()) {
        why = summary(doc.errors());
      } else if (resolve(doc.value().backends, &why)) {
        c.backends = std::move(doc.value().backends);
        origins[c.name] = {MembershipOrigin::kStateFile, state.value().revision};
        if (e.source != nullptr) e.source->setServed(state.value().revision);
        LB_WARN("membership: cluster %s: starting on the state file %s (revision %lld, %zu "
                "backends) until etcd answers",
                c.name.c_str(), m.state_file.c_str(),
                static_cast<long long>(state.value().revision), c.backends.size());
        continue;
      }
      LB_WARN("membership: cluster %s: not starting on the state file %s: %s", c.name.c_str(),
              m.state_file.c_str(), why.c_str());
    }
    if (!c.backends.empty())
      LB_WARN("membership: cluster %s: starting on the file's %zu backends until etcd answers",
              c.name.c_str(), c.backends.size());
    else
      LB_WARN("membership: cluster %s: no membership yet: it serves nothing until etcd answers",
              c.name.c_str());
  }
}

void Memberships::goLive(Lifecycle* lifecycle) {
  lifecycle_ = lifecycle;
  live_ = true;
  for (auto& [name, e] : entries_) {
    if (e->source == nullptr || !e->initial_applied) continue;
    const bool applied = *e->initial_applied;
    e->initial_applied.reset();
    e->source->done(applied);   // may hand over the next update at once
  }
}

MembershipHooks Memberships::hooks() {
  MembershipHooks h;
  h.overlay = [this](Config& c, BackendOrigins& o, ResolvedHosts& hosts) {
    return overlay(c, o, hosts);
  };
  h.reloaded = [this](const Snapshot& s) { reloaded(s); };
  h.stop = [this] { stop(); };
  return h;
}

void Memberships::reject(Entry& e, int64_t revision, const std::string& reason,
                         bool tell_source) {
  MembershipStatus& st = e.state->membership;
  ++st.rejected;
  st.last_rejected_revision = revision;
  st.last_rejected_reason = reason;
  LB_WARN("membership: cluster %s: rejected revision %lld: %s", e.cluster.c_str(),
          static_cast<long long>(revision), reason.c_str());
  if (tell_source && e.source != nullptr) e.source->done(false);
}

void Memberships::onBuild(const std::string& cluster, const MembershipUpdate& u) {
  auto it = entries_.find(cluster);
  if (it == entries_.end() || stopped_) return;
  Entry& e = *it->second;
  if (!live_) {   // the start's first answer: judged by initialOverlay
    e.initial = u;
    return;
  }
  std::shared_ptr<const Snapshot> snap = server_.snapshot();
  const ClusterSnapshot* c = snap ? snap->findCluster(cluster) : nullptr;
  if (c == nullptr || !c->config->membership) {
    if (e.source != nullptr) e.source->done(false);
    return;
  }
  if (u.deleted) return reject(e, u.revision, "key deleted");
  auto doc = parseMembershipDocument(u.document, documentSource(e.config, u.revision), *c->config);
  if (!doc.ok()) return reject(e, u.revision, summary(doc.errors()));
  // The file's backends are a fallback, not a membership the fleet agreed on: a first
  // membership may replace them whole.
  static const std::vector<BackendConfig> kNone;
  const std::vector<BackendConfig>& current =
      c->origin == MembershipOrigin::kFile ? kNone : c->config->backends;
  if (std::string why = checkRemoval(current, doc.value().backends, e.config.max_remove_percent);
      !why.empty())
    return reject(e, u.revision, why);
  // Names the running snapshot already connects to keep their address (re-resolution moves
  // them, lb/app/dns_refresh.h); new ones are looked up without blocking the loop.
  const ResolvedHosts known = resolvedHostsOf(*snap);
  std::vector<std::string> names;
  for (std::string& n : namesOf(doc.value().backends))
    if (!known.count(n)) names.push_back(std::move(n));
  std::vector<BackendConfig> backends = std::move(doc.value().backends);
  const int64_t changed_at_ms = doc.value().changed_at_ms;
  if (names.empty())
    return finishApply(cluster, u.revision, changed_at_ms, std::move(backends), {});
  const int64_t revision = u.revision;
  e.batch = ResolveBatch::start(
      loop_, std::move(names), kResolveWait,
      [this, cluster, revision, changed_at_ms, backends = std::move(backends)](
          const std::vector<std::string>& asked, const std::vector<ResolveAnswer>& answers) {
        auto it = entries_.find(cluster);
        if (it == entries_.end()) return;
        it->second->batch = nullptr;
        for (size_t i = 0; i < asked.size(); ++i)
          if (answers[i].status != 0)
            return reject(*it->second, revision,
                          "cannot resolve '" + asked[i] + "': " +
                              resolveErrorText(answers[i].status));
        ResolvedHosts resolved;
        for (size_t i = 0; i < asked.size(); ++i) resolved[asked[i]] = answers[i].address;
        finishApply(cluster, revision, changed_at_ms, backends, resolved);
      });
}

void Memberships::finishApply(const std::string& cluster, int64_t revision, int64_t changed_at_ms,
                              std::vector<BackendConfig> backends, const ResolvedHosts& answers) {
  auto it = entries_.find(cluster);
  if (it == entries_.end() || stopped_ || lifecycle_ == nullptr) return;
  Entry& e = *it->second;
  std::shared_ptr<const Snapshot> snap = server_.snapshot();
  Config config = snap->config;
  BackendOrigins origins;
  for (const ClusterSnapshot& c : snap->clusters)
    origins[c.config->name] = {c.origin, c.revision};
  auto cc = std::find_if(config.clusters.begin(), config.clusters.end(),
                         [&](const ClusterConfig& c) { return c.name == cluster; });
  if (cc == config.clusters.end()) return reject(e, revision, "the cluster is gone (reload)");
  cc->backends = backends;
  origins[cluster] = {MembershipOrigin::kEtcd, revision, changed_at_ms};
  ResolvedHosts hosts = resolvedHostsOf(*snap);
  for (const auto& [name, address] : answers) hosts[name] = address;
  Errors errors;
  if (!lifecycle_->applyConfig(std::move(config), hosts, origins, &errors))
    return reject(e, revision, summary(errors));
  const ClusterSnapshot* now = server_.snapshot()->findCluster(cluster);
  ++e.state->membership.applied;
  LB_INFO("membership: cluster %s: applied revision %lld (%zu backends, fingerprint %016llx)",
          cluster.c_str(), static_cast<long long>(revision), backends.size(),
          static_cast<unsigned long long>(now ? now->fingerprint : 0));
  writeState(cluster, e.config, revision, backends);
  if (e.source != nullptr) e.source->done(true);
}

Errors Memberships::overlay(Config& config, BackendOrigins& origins, ResolvedHosts& hosts) {
  Errors errors;
  std::shared_ptr<const Snapshot> running = server_.snapshot();
  if (!running) return errors;
  ResolvedHosts known;
  bool known_filled = false;
  for (ClusterConfig& c : config.clusters) {
    if (!c.membership) continue;
    const ClusterSnapshot* rc = running->findCluster(c.name);
    if (rc == nullptr || rc->origin == MembershipOrigin::kFile || !rc->config->membership ||
        rc->config->membership->key != c.membership->key)
      continue;
    // The new settings judge the membership as they would judge it from etcd: a reload to
    // selector jump, say, refuses weights the running membership has.
    if (auto doc = parseMembershipDocument(membershipJson(rc->config->backends),
                                           documentSource(*c.membership, rc->revision), c);
        !doc.ok()) {
      errors.push_back({config.file, c.membership->pos, pathOf(c.name),
                        "the membership it serves (revision " + std::to_string(rc->revision) +
                            ") would not pass the new settings: " + summary(doc.errors())});
      continue;
    }
    c.backends = rc->config->backends;
    origins[c.name] = {rc->origin, rc->revision};
    if (!known_filled) {
      known = resolvedHostsOf(*running);
      known_filled = true;
    }
    for (const std::string& n : namesOf(c.backends))
      if (!hosts.count(n))
        if (auto k = known.find(n); k != known.end()) hosts.emplace(n, k->second);
  }
  return errors;
}

void Memberships::reloaded(const Snapshot& snapshot) {
  if (stopped_) return;
  // Refusing the reload for it would keep an older config for a file written only later.
  for (const ConfigError& e : checkStateFileDirs(snapshot.config))
    LB_WARN("reload: %s (the state file will not be written)", e.format().c_str());
  for (auto it = entries_.begin(); it != entries_.end();) {
    const ClusterSnapshot* c = snapshot.findCluster(it->first);
    const MembershipConfig* m = c && c->config->membership ? &*c->config->membership : nullptr;
    const MembershipConfig& was = it->second->config;
    // New TLS settings, renewed TLS files or new credentials make a new client.
    const bool same = m && it->second->source && m->etcd == was.etcd && m->key == was.key &&
                      m->user == was.user && m->password == was.password &&
                      m->tls.enabled == was.tls.enabled && m->tls.ca == was.tls.ca &&
                      m->tls.verify == was.tls.verify &&
                      m->tls.server_name == was.tls.server_name && m->tls.cert == was.tls.cert &&
                      m->tls.key == was.tls.key && m->tls.min_version == was.tls.min_version &&
                      tlsFilesOf(*m) == it->second->tls_files;
    if (same) {
      it->second->config = *m;
      it->second->source->reconfigure(*m);
      ++it;
      continue;
    }
    LB_INFO("membership: cluster %s: %s", it->first.c_str(),
            m ? "etcd endpoints, key, tls or user changed: watching again"
              : "membership removed: stopping");
    stopEntry(*it->second);
    if (!m) it->second->state->membership.configured = false;
    it = entries_.erase(it);
  }
  for (const ClusterSnapshot& c : snapshot.clusters)
    if (c.config->membership && !entries_.count(c.config->name))
      startSource(*c.config, snapshot.config.file, c.revision);
}

}  // namespace lb
