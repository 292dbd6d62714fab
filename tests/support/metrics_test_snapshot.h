// A snapshot built the way the proxy builds one (lb::buildSnapshot on a Config made in
// code), for the metrics, admin and dashboard tests: cluster "cache" with bounded loads on
// (hash_balance_factor 125, weights 1, 1, 2), cluster "plain" with them off, an HTTP
// listener "web" and a TCP listener "memcache", two workers.
#pragma once

#include <gtest/gtest.h>
#include <prometheus/metric_family.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lb/routing/snapshot.h"

namespace lb::testing {

inline Config metricsTestConfig() {
  Config c;
  ClusterConfig cache;
  cache.name = "cache";
  cache.selector = "ring_hash";
  cache.hash_balance_factor = 125;
  cache.backends = {{"cache-a", "127.0.0.1:9001", 1, "", "", {}},
                    {"cache-b", "127.0.0.1:9002", 1, "", "", {}},
                    {"cache-c", "127.0.0.1:9003", 2, "", "", {}}};
  ClusterConfig plain;
  plain.name = "plain";
  plain.selector = "ring_hash";
  plain.backends = {{"p-0", "127.0.0.1:9101", 1, "", "", {}}, {"p-1", "127.0.0.1:9102", 1, "", "", {}}};
  c.clusters = {cache, plain};
  ListenerConfig web;
  web.name = "web";
  web.listen = "127.0.0.1:8080";
  web.cluster = "cache";
  ListenerConfig mc;
  mc.name = "memcache";
  mc.listen = "127.0.0.1:11311";
  mc.protocol = Protocol::kTcp;
  mc.cluster = "plain";
  c.listeners = {web, mc};
  return c;
}

inline std::shared_ptr<const Snapshot> buildTestSnapshot(StateRegistry& registry,
                                                         Config config = metricsTestConfig()) {
  auto r = buildSnapshot(std::move(config), registry, 1);
  if (!r.ok()) {
    ADD_FAILURE() << r.errors().front().format();
    return nullptr;
  }
  return r.value();
}

inline BackendState& backendState(const Snapshot& s, const std::string& cluster,
                                  const std::string& backend) {
  for (const auto& b : s.findCluster(cluster)->backends)
    if (b.config->name == backend) return *b.state;
  throw std::runtime_error("no backend " + cluster + "/" + backend);
}

// The sample of `family` whose labels are exactly `labels`; nullptr when absent.
inline const prometheus::ClientMetric* findSample(
    const std::vector<prometheus::MetricFamily>& families, const std::string& family,
    const std::map<std::string, std::string>& labels) {
  for (const auto& f : families) {
    if (f.name != family) continue;
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> have;
      for (const auto& l : m.label) have[l.name] = l.value;
      if (have == labels) return &m;
    }
  }
  return nullptr;
}

inline const prometheus::MetricFamily* findFamily(
    const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace lb::testing
