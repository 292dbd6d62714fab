// Shared fixtures for the key-plugin tests: requests and socket addresses built in place,
// and expected hashes computed straight from the libraries (not through lb/core/hash.h), so a
// test fails if a plugin hashes the wrong bytes or the wrong function.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <xxhash.h>
#include <zlib.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/builtin.h"
#include "plugins/key.h"

namespace lb::testing {

inline uint64_t xxh(std::string_view bytes) { return XXH64(bytes.data(), bytes.size(), 0); }
inline uint64_t crc(std::string_view bytes) {
  return ::crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()),
                 static_cast<uInt>(bytes.size()));
}

// A request that owns its strings.
struct Request {
  std::string method = "GET";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> header_strings;
  std::vector<HttpHeader> headers;
  HttpRequestView view;

  Request(std::string t, std::vector<std::pair<std::string, std::string>> h = {})
      : target(std::move(t)), header_strings(std::move(h)) {
    for (const auto& [k, v] : header_strings) headers.push_back({k, v});
    view = {method, target, headers};
  }
};

inline sockaddr_storage v4(const char* ip, uint16_t port) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  inet_pton(AF_INET, ip, &a->sin_addr);
  return ss;
}

inline sockaddr_storage v6(const char* ip, uint16_t port) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
  a->sin6_family = AF_INET6;
  a->sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a->sin6_addr);
  return ss;
}

inline const sockaddr* sa(const sockaddr_storage& ss) {
  return reinterpret_cast<const sockaddr*>(&ss);
}

// The plugin of that kind from the registry, as the listener would build it.
inline std::unique_ptr<KeyPlugin> plugin(const std::string& kind, const std::string& name = "",
                                         Duration ttl = Duration{0}) {
  const KeyPluginInfo* info = findKeyPlugin(kind);
  if (info == nullptr) return nullptr;
  HashPolicy p;
  p.kind = kind;
  p.name = name;
  p.ttl = ttl;
  return info->build(p);
}

// Runs a plugin; returns the hash or nullopt-like false in *ok.
struct Extracted {
  bool ok = false;
  uint64_t hash = 0;
};
inline Extracted run(const KeyPlugin& p, const KeyContext& ctx,
                     KeyHash kh = KeyHash::kXxh64) {
  Extracted e;
  e.ok = p.extract(ctx, kh, &e.hash);
  return e;
}

}  // namespace lb::testing
