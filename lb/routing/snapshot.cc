#include "lb/routing/snapshot.h"

#include <algorithm>

#include "lb/core/address.h"
#include "lb/core/hash.h"
#include "lb/core/log_sink.h"
#include "lb/routing/cluster_table.h"
#include "lb/routing/zone_order.h"
#include "plugins/builtin.h"

#include "plugins/keys/key_chain.h"

namespace lb {

uint64_t ClusterLoads::load(uint32_t host) const noexcept {
  int64_t v = (*backends_)[host].state->live.load(std::memory_order_relaxed);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

// One counter kept in step by BackendState (as HAProxy keeps a running total, without its
// lock). Summing the hosts instead was O(hosts) per pick: 1,000 scattered cache lines at
// the fleet sizes lb is for. It can dip below zero for an instant between the two relaxed
// updates of a release; that reads as zero.
uint64_t ClusterLoads::totalLoad() const noexcept {
  int64_t v = total_->live.load(std::memory_order_relaxed);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

bool ClusterLoads::tryReserve(uint32_t host, uint64_t cap) const noexcept {
  return (*backends_)[host].state->tryAddLive(cap);
}

bool ClusterLoads::usable(uint32_t host) const noexcept {
  return (*backends_)[host].state->healthy.load(std::memory_order_relaxed) ||
         (panic_ != nullptr && panic_->load(std::memory_order_relaxed));
}

const ClusterSnapshot* Snapshot::findCluster(const std::string& name) const {
  for (const auto& c : clusters)
    if (c.config->name == name) return &c;
  return nullptr;
}

const ListenerSnapshot* Snapshot::findListener(const std::string& name) const {
  for (const auto& l : listeners)
    if (l.config->name == name) return &l;
  return nullptr;
}

std::shared_ptr<BackendState> StateRegistry::backend(const std::string& cluster,
                                                     const std::string& name) {
  auto& slot = backends_[{cluster, name}];
  if (auto live = slot.lock()) return live;
  auto fresh = std::make_shared<BackendState>(cluster, name, workers_, clusterLoad(cluster));
  slot = fresh;
  return fresh;
}

std::shared_ptr<ClusterLoadState> StateRegistry::clusterLoad(const std::string& cluster) {
  auto& slot = cluster_loads_[cluster];
  if (auto live = slot.lock()) return live;
  auto fresh = std::make_shared<ClusterLoadState>();
  slot = fresh;
  return fresh;
}

std::shared_ptr<ClusterState> StateRegistry::cluster(const std::string& name) {
  auto& slot = clusters_[name];
  if (auto live = slot.lock()) return live;
  auto fresh = std::make_shared<ClusterState>(name, workers_);
  slot = fresh;
  return fresh;
}

std::shared_ptr<ListenerState> StateRegistry::listener(const std::string& name) {
  auto& slot = listeners_[name];
  if (auto live = slot.lock()) return live;
  auto fresh = std::make_shared<ListenerState>(name, workers_);
  slot = fresh;
  return fresh;
}

std::vector<double> keyspaceShares(const SelectorTable& table, const KeyHash& key_hash) {
  constexpr uint64_t kSamples = 1 << 16;
  std::vector<double> shares(table.hostCount(), 0.0);
  if (shares.empty()) return shares;
  // A hash narrower than the sample count (twemproxy's crc32) is walked value by value.
  const int bits = key_hash.bits >= 64 ? 64 : key_hash.bits;
  const uint64_t samples = bits < 16 ? uint64_t{1} << bits : kSamples;
  const uint64_t step = bits == 64 ? (~0ull / kSamples) + 1 : (uint64_t{1} << bits) / samples;
  for (uint64_t i = 0; i < samples; ++i) {
    // The midpoint of each sample's interval, so the first sample is not pinned to hash 0.
    uint64_t h = i * step + step / 2;
    shares[table.pick(h, 0)] += 1.0 / static_cast<double>(samples);
  }
  return shares;
}

uint64_t tableFingerprint(const ClusterConfig& cluster, const SelectorTable* table,
                          const KeyHash& key_hash) {
  if (table == nullptr || table->hostCount() == 0) return 0;
  // Each field ends with a NUL, so that "ab","c" and "a","bc" hash apart.
  std::string bytes;
  bytes.reserve(cluster.backends.size() * 48 + kFingerprintSamples * 4);
  auto field = [&bytes](std::string_view s) {
    bytes.append(s);
    bytes.push_back('\0');
  };
  for (const BackendConfig& b : cluster.backends) {
    field(b.name);
    field(b.address);
    field(std::to_string(b.weight));
    field(b.hash_key.empty() ? b.name : b.hash_key);
    // A zone changes the preference order past the owner. Marked by a byte no name holds, and
    // absent without a zone, so fingerprints of zoneless clusters stay what they were.
    if (!b.zone.empty()) {
      bytes.push_back('\1');
      field(b.zone);
    }
  }
  // The owners, as keyspaceShares samples them: the midpoint of each of N equal intervals.
  const int bits = key_hash.bits >= 64 ? 64 : key_hash.bits;
  const uint64_t step =
      bits == 64 ? (~0ull / kFingerprintSamples) + 1
                 : std::max<uint64_t>((uint64_t{1} << bits) / kFingerprintSamples, 1);
  for (uint64_t i = 0; i < kFingerprintSamples; ++i) {
    const uint32_t owner = table->pick(i * step + step / 2, 0);
    for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>(owner >> (8 * k)));
  }
  return xxh64(bytes) & ((uint64_t{1} << 48) - 1);
}

ResolvedHosts resolvedHostsOf(const Snapshot& snap) {
  ResolvedHosts hosts;
  for (const ClusterSnapshot& c : snap.clusters)
    for (const BackendSnapshot& b : c.backends) {
      HostPort parsed;
      std::string error;
      if (b.config == nullptr || !parseHostPort(b.config->address, &parsed, &error) ||
          parsed.numeric || hosts.count(parsed.host))
        continue;
      ResolvedAddress& a = hosts[parsed.host];
      a.address = b.address;
      a.len = b.address_len;
      setAddressPort(&a.address, 0);
    }
  return hosts;
}

namespace {

// The backend's socket address: its numeric address, or its host name's answer in `hosts`.
bool backendAddress(const BackendConfig& b, const ResolvedHosts* hosts, BackendSnapshot* out,
                    std::string* why) {
  HostPort parsed;
  if (!parseHostPort(b.address, &parsed, why)) return false;
  if (parsed.numeric) {
    out->address = parsed.address;
    out->address_len = parsed.address_len;
    return true;
  }
  auto it = hosts ? hosts->find(parsed.host) : ResolvedHosts::const_iterator();
  if (!hosts || it == hosts->end()) {
    *why = "'" + parsed.host + "' was not resolved";
    return false;
  }
  out->address = it->second.address;
  out->address_len = it->second.len;
  setAddressPort(&out->address, parsed.port);
  return true;
}

}  // namespace

namespace {
ListenerTlsBuilder tls_builder = nullptr;
ClusterTlsBuilder cluster_tls_builder = nullptr;
}  // namespace

void setListenerTlsBuilder(ListenerTlsBuilder builder) { tls_builder = builder; }
void setClusterTlsBuilder(ClusterTlsBuilder builder) { cluster_tls_builder = builder; }

namespace {

// A cluster that reads through keeps the backends a change removed as leaving hosts past the
// table's (lb/routing/handover.h): each named in `w`'s leaving list, found in the snapshot
// `was` (among its members, or its own leaving hosts when a window is carried), keeps its
// address and state, and the window's previous owners are re-aimed at it. Main thread.
void keepLeaving(const ClusterSnapshot& was, StateRegistry& registry,
                 const std::shared_ptr<const TlsClientContext>& tls, HandoverWindow& w,
                 ClusterSnapshot* cs) {
  std::vector<const BackendSnapshot*> kept;
  for (const std::string& name : w.leaving)
    for (const BackendSnapshot& b : was.backends)
      if (b.config->name == name) {
        kept.push_back(&b);
        break;
      }
  if (kept.empty()) return;
  const uint32_t hosts = cs->hostCount();
  w.leaving_backends.reserve(kept.size());   // the configs below point into it
  for (const BackendSnapshot* b : kept) w.leaving_backends.push_back(*b->config);
  for (size_t j = 0; j < kept.size(); ++j) {
    BackendSnapshot& b = cs->backends.emplace_back();
    b.config = &w.leaving_backends[j];
    b.state = registry.backend(cs->config->name, b.config->name);
    b.address = kept[j]->address;
    b.address_len = kept[j]->address_len;
    b.tls = tls;
    const uint32_t host = hosts + static_cast<uint32_t>(j);
    for (size_t i = 0; i < w.previous_names.size(); ++i)
      if (w.previous_names[i] == b.config->name) w.to_current[i] = host;
  }
}

}  // namespace

Result<std::shared_ptr<const Snapshot>> buildSnapshot(Config config, StateRegistry& registry,
                                                      uint64_t generation,
                                                      const ResolvedHosts* resolved,
                                                      const BackendOrigins* origins,
                                                      const Snapshot* previous) {
  auto snap = std::make_shared<Snapshot>();
  snap->config = std::move(config);
  snap->generation = generation;
  Errors errors;
  const std::string& file = snap->config.file;

  snap->clusters.reserve(snap->config.clusters.size());
  for (const auto& cc : snap->config.clusters) {
    ClusterSnapshot& cs = snap->clusters.emplace_back();
    cs.config = &cc;
    cs.state = registry.cluster(cc.name);
    int64_t changed_at_ms = 0;
    if (origins != nullptr)
      if (auto it = origins->find(cc.name); it != origins->end()) {
        cs.origin = it->second.source;
        cs.revision = it->second.revision;
        changed_at_ms = it->second.changed_at_ms;
      }
    cs.selector = selectorOf(cc);
    if (cs.selector == nullptr) {
      errors.push_back({file, cc.pos, "clusters." + cc.name + ".selector",
                        "unknown selector '" + cc.selector + "'"});
      continue;
    }
    std::shared_ptr<const TlsClientContext> tls;
    if (cc.tls.enabled) {
      if (cluster_tls_builder == nullptr)
        errors.push_back({file, cc.tls.pos, "clusters." + cc.name + ".tls",
                          "TLS is not available in this build"});
      else
        tls = cluster_tls_builder(cc, file, registry.workers(), &errors);
    }
    auto hosts = hostSpecsOf(cc);
    // A cluster written without backends is valid: its listeners answer 503. No table then.
    if (hosts.empty()) {
      cs.loads = std::make_unique<ClusterLoads>(&cs.backends, registry.clusterLoad(cc.name),
                                                &cs.state->panic);
      continue;
    }
    cs.table = buildClusterTable(cc, *cs.selector);
    if (cc.hash_balance_factor > 0) cs.bounded.emplace(hosts, cc.hash_balance_factor);
    cs.backends.resize(cc.backends.size());
    std::vector<double> shares = keyspaceShares(*cs.table, cs.selector->key_hash);
    for (size_t i = 0; i < cc.backends.size(); ++i) {
      BackendSnapshot& b = cs.backends[i];
      b.config = &cc.backends[i];
      b.state = registry.backend(cc.name, b.config->name);
      b.keyspace_share = shares[i];
      b.tls = tls;
      const std::string& zone = snap->config.zone;
      b.local_zone = !zone.empty() && b.config->zone == zone;
      b.other_zone = !zone.empty() && !b.config->zone.empty() && b.config->zone != zone;
      cs.local_first = cs.local_first || (b.local_zone && cc.read == ReplicaRead::kLocal);
      std::string why;
      if (!backendAddress(*b.config, resolved, &b, &why))
        errors.push_back({file, b.config->pos,
                          "clusters." + cc.name + ".backends[" + std::to_string(i) + "].address",
                          why});
    }
    cs.loads = std::make_unique<ClusterLoads>(&cs.backends, registry.clusterLoad(cc.name),
                                              &cs.state->panic);
    cs.rotation = Rotation(registry.workers());
    cs.fingerprint = tableFingerprint(cc, cs.table.get(), cs.selector->key_hash);
    cs.handover_window_ms = cc.handover ? cc.handover->window.count() : 0;
    cs.replicas = cc.replicas;
    if (cs.replicas < 2) cs.local_first = false;
    for (const ListenerConfig& l : snap->config.listeners)
      if (l.cluster == cc.name &&
          (l.protocol == Protocol::kRedis || l.protocol == Protocol::kMemcached))
        cs.reads_through = true;
    const ClusterSnapshot* was = previous ? previous->findCluster(cc.name) : nullptr;
    // Across a change of selector the old table's owners are not the same keys' owners.
    if (was != nullptr && was->selector == cs.selector && cc.handover) {
      std::vector<std::string> was_names, names;
      for (uint32_t i = 0; i < was->hostCount(); ++i)
        was_names.push_back(was->backends[i].config->name);
      for (const BackendConfig& b : cc.backends) names.push_back(b.name);
      auto window = handoverAcross(was->table, was_names, was->fingerprint, was->handover,
                                   *cs.table, names, cs.selector->key_hash.bits, wallClockMs(),
                                   cc.handover->window.count(), changed_at_ms);
      if (window != nullptr && cs.reads_through) keepLeaving(*was, registry, tls, *window, &cs);
      cs.handover = std::move(window);
    }
  }

  snap->listeners.reserve(snap->config.listeners.size());
  for (const auto& lc : snap->config.listeners) {
    ListenerSnapshot& ls = snap->listeners.emplace_back();
    ls.config = &lc;
    ls.state = registry.listener(lc.name);
    bool found = false;
    for (uint32_t i = 0; i < snap->config.clusters.size(); ++i)
      if (snap->config.clusters[i].name == lc.cluster) {
        ls.cluster = i;
        found = true;
      }
    if (!found)
      errors.push_back({file, lc.pos, "listeners." + lc.name + ".cluster",
                        "cluster '" + lc.cluster + "' is not defined"});
    std::string why;
    if (!parseAddress(lc.listen, &ls.listen_address, &ls.listen_address_len, &why))
      errors.push_back({file, lc.pos, "listeners." + lc.name + ".listen", why});
    if (lc.tls.enabled) {
      if (tls_builder == nullptr)
        errors.push_back({file, lc.tls.pos, "listeners." + lc.name + ".tls",
                          "TLS is not available in this build"});
      else
        ls.tls = tls_builder(lc, file, &ls.tls_expiry, &errors);
    }
    if (!lc.hash.empty()) {
      auto chain = KeyChain::build(lc.hash, protocolName(lc.protocol), file, "listeners." + lc.name + ".hash",
                                   lc.combine ? KeyChain::Mode::kCombine : KeyChain::Mode::kFirst);
      if (chain.ok())
        ls.keys = std::make_shared<const KeyChain>(std::move(chain.value()));
      else
        errors.insert(errors.end(), chain.errors().begin(), chain.errors().end());
    }
  }
  if (errors.empty()) {
    std::string error;
    snap->access_log = AccessLogSink::open(snap->config.access_log, &error);
    if (!error.empty()) errors.push_back({file, {}, "lb.access_log", error});
  }
  if (!errors.empty()) return errors;
  return std::shared_ptr<const Snapshot>(std::move(snap));
}

}  // namespace lb
