// The key plugin interface: each derives affinity-key bytes from a request or a connection,
// hashes them with the cluster's key hash, and the listener combines the results as Envoy's
// hash policies do (docs/architecture.md, "Key plugins").
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "lb/core/duration.h"
#include "lb/core/http_fields.h"
#include "lb/core/result.h"
#include "plugins/selector.h"

namespace lb {

// One entry of a listener's `hash = [...]` list: which key plugin, and its argument (the
// config loader fills it; a plugin's builder reads it).
struct HashPolicy {
  std::string kind;        // header | cookie | source_ip | five_tuple | query | path
  std::string name;        // header name, cookie name or query parameter; empty otherwise
  Duration ttl{0};         // cookie only: > 0 means generate one when absent
  bool terminal = false;   // stop at the first policy that yields a key
  SourcePos pos;
};

// The bytes a key plugin hashed, for display only (the hot-key summary keeps them for the
// keys it tracks, lb/hotkeys/space_saving.h): a view into the request (header, cookie, path,
// query), or, for a key that is no bytes of the request (an address), its text formatted
// into `scratch`. Filled only by a plugin that yields a key; the view lives as long as the
// request's buffers and this struct.
struct KeyText {
  static constexpr size_t kScratch = 112;   // "[v6]:port->[v6]:port" of a five_tuple
  std::string_view bytes;
  char scratch[kScratch];
};

struct KeyContext {
  const sockaddr* peer = nullptr;             // the client's address
  const sockaddr* local = nullptr;            // lb's address the client connected to
  const HttpRequestView* request = nullptr;   // nullptr on tcp listeners
  GeneratedCookie* cookie_out = nullptr;      // nullptr where a cookie cannot be set
  KeyText* text_out = nullptr;                // nullptr: nobody displays the key
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
