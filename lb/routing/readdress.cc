#include "lb/routing/readdress.h"

#include <algorithm>

#include "lb/core/address.h"

namespace lb {

std::vector<std::string> hostNamesOf(const ClusterConfig& cluster) {
  std::vector<std::string> names;
  for (const auto& b : cluster.backends) {
    HostPort parsed;
    std::string error;
    if (!parseHostPort(b.address, &parsed, &error) || parsed.numeric) continue;
    if (std::find(names.begin(), names.end(), parsed.host) == names.end())
      names.push_back(std::move(parsed.host));
  }
  return names;
}

std::vector<AddressChange> addressChanges(const Snapshot& base, std::span<const uint32_t> clusters,
                                          const ResolvedHosts& answers) {
  std::vector<AddressChange> changes;
  for (uint32_t ci : clusters) {
    if (ci >= base.clusters.size()) continue;
    const ClusterSnapshot& c = base.clusters[ci];
    for (uint32_t bi = 0; bi < c.backends.size(); ++bi) {
      const BackendSnapshot& b = c.backends[bi];
      HostPort parsed;
      std::string error;
      if (!parseHostPort(b.config->address, &parsed, &error) || parsed.numeric) continue;
      auto it = answers.find(parsed.host);
      if (it == answers.end()) continue;
      AddressChange change{ci, bi, it->second.address, it->second.len};
      setAddressPort(&change.address, parsed.port);
      if (!sameAddress(change.address, change.address_len, b.address, b.address_len))
        changes.push_back(change);
    }
  }
  return changes;
}

namespace {

// A copy of `base` sharing everything listed in readdress.h; only the round-robin rotations
// start afresh, as after a reload.
std::shared_ptr<Snapshot> derivedFrom(const Snapshot& base) {
  auto snap = std::make_shared<Snapshot>();
  snap->config = base.config;   // every pointer below is re-aimed at this copy
  snap->generation = base.generation;
  snap->access_log = base.access_log;
  snap->clusters.reserve(base.clusters.size());
  for (size_t ci = 0; ci < base.clusters.size(); ++ci) {
    const ClusterSnapshot& from = base.clusters[ci];
    ClusterSnapshot& cs = snap->clusters.emplace_back();
    cs.config = &snap->config.clusters[ci];
    cs.selector = from.selector;
    cs.table = from.table;
    cs.bounded = from.bounded;
    cs.backends = from.backends;
    // The leaving hosts past the config's keep their settings in the shared window.
    for (size_t bi = 0; bi < cs.backends.size() && bi < cs.config->backends.size(); ++bi)
      cs.backends[bi].config = &cs.config->backends[bi];
    cs.state = from.state;   // the panic flag the health manager sets
    cs.loads = std::make_unique<ClusterLoads>(
        &cs.backends, from.loads ? from.loads->totalState() : std::make_shared<ClusterLoadState>(),
        cs.state ? &cs.state->panic : nullptr);
    cs.rotation = Rotation(from.rotation.workers());
    cs.origin = from.origin;   // same table, same membership
    cs.revision = from.revision;
    cs.fingerprint = from.fingerprint;
    cs.handover = from.handover;
    cs.handover_window_ms = from.handover_window_ms;
    cs.reads_through = from.reads_through;
  }
  snap->listeners.reserve(base.listeners.size());
  for (size_t li = 0; li < base.listeners.size(); ++li) {
    ListenerSnapshot& ls = snap->listeners.emplace_back(base.listeners[li]);
    ls.config = &snap->config.listeners[li];
  }
  return snap;
}

}  // namespace

std::shared_ptr<const Snapshot> withAddresses(const Snapshot& base,
                                              std::span<const AddressChange> changes) {
  auto snap = derivedFrom(base);
  for (const AddressChange& change : changes) {
    if (change.cluster >= snap->clusters.size()) continue;
    auto& backends = snap->clusters[change.cluster].backends;
    if (change.backend >= backends.size()) continue;
    backends[change.backend].address = change.address;
    backends[change.backend].address_len = change.address_len;
  }
  return snap;
}

int64_t leavingUntil(const Snapshot& snap) {
  int64_t until = 0;
  for (const ClusterSnapshot& c : snap.clusters)
    if (c.backends.size() > c.hostCount() && c.handover &&
        (until == 0 || c.handover->until_ms < until))
      until = c.handover->until_ms;
  return until;
}

std::shared_ptr<const Snapshot> withoutLeaving(const Snapshot& base, uint64_t generation,
                                               int64_t now_ms) {
  auto snap = derivedFrom(base);
  snap->generation = generation;
  for (ClusterSnapshot& c : snap->clusters) {
    if (c.backends.size() <= c.hostCount() || !c.handover || now_ms < c.handover->until_ms)
      continue;
    c.backends.resize(c.hostCount());
    c.handover = nullptr;   // over: no key is read through from its previous owner any more
  }
  return snap;
}

}  // namespace lb
