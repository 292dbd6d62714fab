#include "lb/admin/hotkeys_route.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "lb/admin/routes.h"

namespace lb {

namespace {

constexpr const char* kJson = "application/json";

void appendDouble(std::string& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, ec == std::errc() ? end : buf);
}

void appendHex(std::string& out, uint64_t v) {
  char hex[24];
  snprintf(hex, sizeof hex, "\"%016llx\"", static_cast<unsigned long long>(v));
  out += hex;
}

void appendKey(std::string& o, const ClusterSnapshot& c, const HotKey& k) {
  o += "{\"key\":";
  appendJsonString(o, k.key);
  o += ",\"hash_hex\":";
  appendHex(o, k.hash);
  o += ",\"rps\":";
  appendDouble(o, k.rps);
  o += ",\"rps_lower\":";
  appendDouble(o, k.rps_lower);
  o += ",\"share\":";
  appendDouble(o, k.share);
  o += ",\"hot\":";
  o += k.hot ? "true" : "false";
  const bool routable = c.table && c.table->hostCount() > 0 && c.loads;
  const uint32_t owner = routable ? c.hostAt(k.hash, 0) : 0;
  o += ",\"owner\":";
  if (routable)
    appendJsonString(o, c.backends[owner].config->name);
  else
    o += "null";
  o += ",\"serving\":[";
  if (routable) {
    // A hot key's GETs and HEADs go to any of its first hot_keys.spread usable hosts
    // (plugins/selectors/hot_spread.h picks among the same ones); else where the pick sends
    // them (below).
    const uint32_t spread = k.hot ? c.config->hot_keys.spread : 0;
    if (spread >= 2) {
      SpreadSet set;
      const uint32_t listed = c.spreadSetOf(k.hash, spread, &set);
      for (uint32_t i = 0; i < listed; ++i) {
        if (i > 0) o += ',';
        appendJsonString(o, c.backends[set[i].host].config->name);
      }
    } else {
      // Where the key's requests go now: its owner while usable, and the host a request
      // would go to next when that is another (a bounded-load spill past an owner at its
      // cap, or the failover past a down owner). Nothing is reserved: this only looks.
      Pick next;
      c.pick(k.hash, PickContext{}, &next);
      const bool owner_serves = c.loads->usable(owner) || next.host == owner;
      if (owner_serves) appendJsonString(o, c.backends[owner].config->name);
      if (next.host != owner) {
        if (owner_serves) o += ',';
        appendJsonString(o, c.backends[next.host].config->name);
      }
    }
  }
  o += "],\"hot_since\":";
  if (k.hot && k.hot_since_ms > 0)
    appendRfc3339(o, static_cast<double>(k.hot_since_ms) / 1000.0);
  else
    o += "null";
  o += '}';
}

void appendCluster(std::string& o, const ClusterSnapshot& c) {
  o += "{\"cluster\":";
  appendJsonString(o, c.config->name);
  static const HotSet kEmpty;
  const HotSet& set = c.state ? c.state->hot_keys.tracker().hotSet() : kEmpty;
  o += ",\"window_s\":";
  appendDouble(o, set.window_s);
  o += ",\"floor_rps\":";
  appendDouble(o, set.floor_rps);
  o += ",\"total_rps\":";
  appendDouble(o, set.total_rps);
  o += ",\"summary_size\":" + std::to_string(set.summary_size);
  o += ",\"keys\":[";
  for (size_t i = 0; i < set.keys.size(); ++i) {
    if (i > 0) o += ',';
    appendKey(o, c, set.keys[i]);
  }
  o += "]}";
}

}  // namespace

AdminResponse hotKeysResponse(const Snapshot& snap, std::string_view query) {
  AdminResponse r;
  r.content_type = kJson;
  auto params = parseQuery(query);
  if (!params) {
    r.status = 400;
    r.body = "{\"error\":\"malformed query string\"}\n";
    return r;
  }
  std::string& o = r.body;
  auto it = params->find("cluster");
  if (it == params->end()) {
    o = "{\"clusters\":[";
    for (size_t i = 0; i < snap.clusters.size(); ++i) {
      if (i > 0) o += ',';
      appendCluster(o, snap.clusters[i]);
    }
    o += "]}\n";
    return r;
  }
  const ClusterSnapshot* c = snap.findCluster(it->second);
  if (c == nullptr) {
    r.status = 404;
    o = "{\"error\":";
    appendJsonString(o, "unknown cluster '" + it->second + "'");
    o += ",\"clusters\":[";
    for (size_t i = 0; i < snap.clusters.size(); ++i) {
      if (i > 0) o += ',';
      appendJsonString(o, snap.clusters[i].config->name);
    }
    o += "]}\n";
    return r;
  }
  appendCluster(o, *c);
  o += '\n';
  return r;
}

}  // namespace lb
