// The key plugin interface: each derives affinity-key bytes from a request or a connection,
// hashes them with the cluster's key hash, and the listener combines the results as Envoy's
// hash policies do (design.md, "Key plugins").
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "lb/config.h"
#include "plugins/selector.h"

namespace lb {

struct HttpHeader {
  std::string_view name;    // as received; compare case-insensitively
  std::string_view value;
};

// A parsed request head, viewed in place in the session's buffer. Valid only during the call.
struct HttpRequestView {
  std::string_view method;
  std::string_view target;  // request-target as sent: /path?query
  std::span<const HttpHeader> headers;
};

// Where the cookie plugin writes a cookie it generated, for the session to send back as
// Set-Cookie. Fixed storage: generating one must not allocate.
struct GeneratedCookie {
  std::string_view name;          // the policy's cookie name (lives in the plugin)
  Duration ttl{0};
  char value[32];
  uint8_t value_len = 0;
  bool set = false;
};

struct KeyContext {
  const sockaddr* peer = nullptr;             // the client's address
  const sockaddr* local = nullptr;            // lb's address the client connected to
  const HttpRequestView* request = nullptr;   // nullptr on tcp listeners
  GeneratedCookie* cookie_out = nullptr;      // nullptr where a cookie cannot be set
};

class KeyPlugin {
 public:
  virtual ~KeyPlugin() = default;
  // Hot path: no allocation, no locks, no throw. Returns false when this request has no key
  // for this plugin (header absent, ...).
  virtual bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept = 0;
};

struct KeyPluginInfo {
  std::string_view name;
  bool l7;                        // needs an HTTP request: a config error on a tcp listener
  std::unique_ptr<KeyPlugin> (*build)(const HashPolicy& policy);
};

}  // namespace lb
