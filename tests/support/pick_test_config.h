// The config the pick tests build their snapshot from: one rendezvous cluster "c" of
// `backends` hosts b0, b1, ... on 127.0.0.1:9001 and up (never connected to), and one
// listener "l" in front of it. Each test sets what it is about (retries, bounded loads,
// on_missing_key) on top.
#pragma once

#include <cstddef>
#include <string>

#include "lb/config/config.h"

namespace lb {

inline Config pickTestConfig(size_t backends) {
  Config c;
  ClusterConfig cluster;
  cluster.name = "c";
  cluster.selector = "rendezvous";
  for (size_t i = 0; i < backends; ++i)
    cluster.backends.push_back({"b" + std::to_string(i),
                                "127.0.0.1:" + std::to_string(9001 + i), 1, "", "", {}});
  c.clusters.push_back(cluster);
  ListenerConfig l;
  l.name = "l";
  l.listen = "127.0.0.1:8080";
  l.cluster = "c";
  c.listeners.push_back(l);
  return c;
}

}  // namespace lb
