#include "lb/admin/routes.h"

#include <charconv>
#include <cstdio>
#include <ctime>
#include <vector>

#include "lb/core/address.h"
#include "lb/core/hash.h"

namespace lb {

namespace {

constexpr const char* kJson = "application/json";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or 0 when the bytes there are not one.
size_t utf8Length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;   // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;   // above U+10FFFF
    return 4;
  }
  return 0;
}

void appendNumber(std::string& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, ec == std::errc() ? end : buf);
}

void appendNumber(std::string& out, uint64_t v) { out += std::to_string(v); }

AdminResponse jsonError(int status, const std::string& message) {
  AdminResponse r;
  r.status = status;
  r.content_type = kJson;
  r.body = "{\"error\":";
  appendJsonString(r.body, message);
  r.body += "}\n";
  return r;
}

// A backend's health fields of /backends: "health" (up, down, ejected), "reason" (the last
// health event's, null before any), "last_check" (null before the first: {"result", "at" in
// seconds since the epoch, "latency_ms"}), "ejections" and "ejection_ms" (the current or
// last ejection's length, 0 before any).
void appendHealth(std::string& o, const HealthRecord& h) {
  o += ",\"health\":";
  appendJsonString(o, healthStatusName(h.status));
  o += ",\"reason\":";
  if (h.reason.empty())
    o += "null";
  else
    appendJsonString(o, h.reason);
  o += ",\"last_check\":";
  if (!h.checked) {
    o += "null";
  } else {
    o += "{\"result\":";
    appendJsonString(o, checkResultName(h.last_result));
    o += ",\"at\":";
    appendNumber(o, h.last_check_at);
    o += ",\"latency_ms\":";
    appendNumber(o, h.last_check_seconds * 1000);
    o += '}';
  }
  o += ",\"ejections\":";
  appendNumber(o, h.ejections.get());
  o += ",\"ejection_ms\":";
  appendNumber(o, h.ejection_ms);
}

// The fingerprint as /backends and /ring print it: 16 hex digits (its top 16 bits are 0).
void appendFingerprint(std::string& o, uint64_t fingerprint) {
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fingerprint));
  o += '"';
  o += hex;
  o += '"';
}

// A cluster's "handover" of /backends: null, or the open window (lb/routing/handover.h):
// since and until (RFC 3339), the previous table's fingerprint, the share of the key space
// whose owner changed, the share of those already moved, and the backends leaving.
void appendHandover(std::string& o, const ClusterSnapshot& c) {
  o += ",\"handover\":";
  const HandoverWindow* w = c.handover.get();
  const int64_t now = wallClockMs();
  if (w == nullptr || now >= w->until_ms) {
    o += "null";
    return;
  }
  o += "{\"since\":";
  appendRfc3339(o, static_cast<double>(w->since_ms) / 1000.0);
  o += ",\"until\":";
  appendRfc3339(o, static_cast<double>(w->until_ms) / 1000.0);
  o += ",\"from_fingerprint\":";
  appendFingerprint(o, w->from_fingerprint);
  o += ",\"moved_ratio\":";
  appendNumber(o, w->moved_ratio);
  o += ",\"ramp_ratio\":";
  appendNumber(o, w->rampRatioAt(now));
  o += ",\"leaving\":[";
  for (size_t i = 0; i < w->leaving.size(); ++i) {
    if (i) o += ',';
    appendJsonString(o, w->leaving[i]);
  }
  o += "]}";
}

// A cluster's "membership" of /backends: where its backends came from, the revision and
// fingerprint it serves, and for a membership cluster what its source is doing.
void appendMembership(std::string& o, const ClusterSnapshot& c) {
  o += ",\"membership\":{\"source\":";
  appendJsonString(o, membershipOriginName(c.origin));
  o += ",\"revision\":" + std::to_string(c.revision);
  o += ",\"fingerprint\":";
  appendFingerprint(o, c.fingerprint);
  if (c.config->membership && c.state) {
    const MembershipStatus& m = c.state->membership;
    o += ",\"key\":";
    appendJsonString(o, c.config->membership->key);
    o += ",\"state\":";
    appendJsonString(o, m.state);
    o += ",\"endpoint\":";
    appendJsonString(o, m.endpoint);
    o += ",\"watch_up\":";
    o += m.watch_up ? "true" : "false";
    o += ",\"last_sync\":";
    if (m.last_sync > 0)
      appendRfc3339(o, m.last_sync);
    else
      o += "null";
    o += ",\"applied\":" + std::to_string(m.applied);
    o += ",\"rejected\":" + std::to_string(m.rejected);
    o += ",\"last_rejected\":";
    if (m.last_rejected_revision == 0 && m.last_rejected_reason.empty()) {
      o += "null";
    } else {
      o += "{\"revision\":" + std::to_string(m.last_rejected_revision) + ",\"reason\":";
      appendJsonString(o, m.last_rejected_reason);
      o += '}';
    }
  }
  o += '}';
}

}  // namespace

void appendRfc3339(std::string& o, double seconds) {
  const time_t whole = static_cast<time_t>(seconds);
  const int ms = static_cast<int>((seconds - static_cast<double>(whole)) * 1000);
  tm t{};
  gmtime_r(&whole, &t);
  char buf[96];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1,
           t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ms < 0 ? 0 : ms > 999 ? 999 : ms);
  appendJsonString(o, buf);
}

std::optional<std::string> percentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hexValue(s[i + 1]), lo = hexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string>> parseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    auto name = percentDecode(part.substr(0, eq));
    auto value = eq == std::string_view::npos ? std::optional<std::string>("")
                                              : percentDecode(part.substr(eq + 1));
    if (!name || !value) return std::nullopt;
    out.emplace(std::move(*name), std::move(*value));   // keeps the first
  }
  return out;
}

void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
      }
      ++i;
    } else if (size_t n = utf8Length(s, i); n > 0) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

AdminResponse backendsResponse(const Snapshot& snap) {
  AdminResponse r;
  r.content_type = kJson;
  std::string& o = r.body;
  o = "{\"generation\":" + std::to_string(snap.generation) + ",\"clusters\":[";
  for (size_t ci = 0; ci < snap.clusters.size(); ++ci) {
    const ClusterSnapshot& c = snap.clusters[ci];
    // One read per counter; total and caps from those reads (as the metrics do).
    std::vector<int64_t> live;
    uint64_t total = 0;
    for (const BackendSnapshot& b : c.backends) {
      live.push_back(b.state->live.load(std::memory_order_relaxed));
      total += live.back() > 0 ? static_cast<uint64_t>(live.back()) : 0;
    }
    if (ci > 0) o += ',';
    o += "{\"name\":";
    appendJsonString(o, c.config->name);
    o += ",\"selector\":";
    appendJsonString(o, c.config->selector);
    o += ",\"hash_balance_factor\":" + std::to_string(c.config->hash_balance_factor);
    o += ",\"panic_threshold\":" + std::to_string(c.config->panic_threshold);
    o += ",\"panic\":";
    o += c.state && c.state->panic.load(std::memory_order_relaxed) ? "true" : "false";
    appendMembership(o, c);
    appendHandover(o, c);
    o += ",\"total_load\":" + std::to_string(total) + ",\"backends\":[";
    for (uint32_t i = 0; i < c.backends.size(); ++i) {
      const BackendSnapshot& b = c.backends[i];
      if (i > 0) o += ',';
      o += "{\"name\":";
      appendJsonString(o, b.config->name);
      o += ",\"address\":";
      appendJsonString(o, b.config->address);
      o += ",\"resolved\":";   // where connections go: the address, or its name's answer
      appendJsonString(o, formatAddress(reinterpret_cast<const sockaddr*>(&b.address)));
      o += ",\"weight\":" + std::to_string(b.config->weight);
      if (!b.config->zone.empty()) {
        o += ",\"zone\":";
        appendJsonString(o, b.config->zone);
      }
      o += ",\"healthy\":";
      o += b.state->healthy.load(std::memory_order_relaxed) ? "true" : "false";
      o += ",\"load\":" + std::to_string(live[i]);
      o += ",\"cap\":";
      if (c.bounded && i < c.hostCount())
        appendNumber(o, c.bounded->cap(i, total));
      else
        o += "null";
      o += ",\"keyspace_share\":";
      appendNumber(o, b.keyspace_share);
      appendHealth(o, b.state->health);
      // A backend a change removed, kept for the handover window (lb/routing/handover.h).
      if (i >= c.hostCount() && c.handover) {
        o += ",\"leaving_until\":";
        appendRfc3339(o, static_cast<double>(c.handover->until_ms) / 1000.0);
      }
      o += '}';
    }
    o += "]}";
  }
  o += "]}\n";
  return r;
}

AdminResponse ringResponse(const Snapshot& snap, std::string_view query) {
  auto params = parseQuery(query);
  if (!params) return jsonError(400, "malformed query string");
  auto cluster_it = params->find("cluster");
  auto key_it = params->find("key");
  if (cluster_it == params->end()) return jsonError(400, "missing parameter 'cluster'");
  if (key_it == params->end()) return jsonError(400, "missing parameter 'key'");
  const ClusterSnapshot* c = snap.findCluster(cluster_it->second);
  if (c == nullptr) return jsonError(404, "unknown cluster '" + cluster_it->second + "'");
  const std::string& key = key_it->second;
  // The listener whose hash_tag applies: listener=L, else the cluster's first redis or
  // memcached listener. A key hashes as that listener hashes it.
  const ListenerConfig* listener = nullptr;
  if (auto l = params->find("listener"); l != params->end()) {
    listener = snap.config.findListener(l->second);
    if (listener == nullptr) return jsonError(404, "unknown listener '" + l->second + "'");
    if (listener->cluster != c->config->name)
      return jsonError(400, "listener '" + l->second + "' routes to cluster '" +
                                listener->cluster + "', not '" + c->config->name + "'");
  } else {
    listener = snap.config.cacheListenerOf(c->config->name);
  }
  const std::string_view hashed =
      keyWithinHashTag(key, listener != nullptr ? std::string_view(listener->hash_tag) : "");

  AdminResponse r;
  r.content_type = kJson;
  std::string& o = r.body;
  o = "{\"cluster\":";
  appendJsonString(o, c->config->name);
  o += ",\"key\":";
  appendJsonString(o, key);
  o += ",\"listener\":";
  if (listener != nullptr)
    appendJsonString(o, listener->name);
  else
    o += "null";
  o += ",\"hashed\":";
  appendJsonString(o, hashed);
  // Which membership answered: two instances with the same revision and fingerprint send
  // this key to the same owner.
  o += ",\"revision\":" + std::to_string(c->revision);
  o += ",\"fingerprint\":";
  appendFingerprint(o, c->fingerprint);
  const uint32_t hosts = c->hostCount();
  if (hosts == 0) {
    o += ",\"hash\":null,\"hash_hex\":null,\"owner\":null,\"order\":[],\"pick\":null,"
         "\"reason\":null}\n";
    return r;
  }
  const uint64_t hash = hashKeyBytes(c->selector->key_hash, hashed);
  o += ",\"hash\":";
  appendNumber(o, hash);
  // The same 64 bits as a string, as the access log's key= field prints them: a JSON number
  // this large loses its low bits in jq and JavaScript, which read numbers as doubles.
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  o += ",\"hash_hex\":\"";
  o += hex;
  o += '"';
  o += ",\"owner\":";
  appendJsonString(o, c->backends[c->hostAt(hash, 0)].config->name);
  o += ",\"order\":[";
  for (uint32_t a = 0; a < hosts; ++a) {
    if (a > 0) o += ',';
    appendJsonString(o, c->backends[c->hostAt(hash, a)].config->name);
  }
  // Each host's zone at its position, when the cluster names zones (lb/routing/zone_order.h).
  bool zoned = false;
  for (uint32_t i = 0; i < hosts && !zoned; ++i) zoned = !c->backends[i].config->zone.empty();
  if (zoned) {
    o += "],\"zones\":[";
    for (uint32_t a = 0; a < hosts; ++a) {
      if (a > 0) o += ',';
      appendJsonString(o, c->backends[c->hostAt(hash, a)].config->zone);
    }
  }
  // The hosts that hold the key's copies (replicas = R): the first R of the order.
  if (c->config->replicas > 1) {
    o += "],\"replicas\":[";
    for (uint32_t a = 0; a < c->config->replicas && a < hosts; ++a) {
      if (a > 0) o += ',';
      appendJsonString(o, c->backends[c->hostAt(hash, a)].config->name);
    }
  }
  // Where the next request for the key goes (nothing reserved: this only looks), or, with
  // every host down, the owner it would fall back to.
  Pick p;
  const ClusterSnapshot& cluster = *c;
  cluster.pick(hash, PickContext{}, &p);
  o += "],\"pick\":";
  appendJsonString(o, c->backends[p.host].config->name);
  o += ",\"reason\":";
  appendJsonString(o, pickReasonName(p.reason));
  // Inside a handover window of a cluster that reads through: where a miss is read from.
  if (p.from != Pick::kNoHost) {
    o += ",\"read_through_from\":";
    appendJsonString(o, c->backends[p.from].config->name);
  }
  o += "}\n";
  return r;
}

}  // namespace lb
