// A listener's list of hash policies and the one key they give a request or connection.
//
// By default the entries are alternatives, tried in order: the first that yields a key is
// the key, and the rest are not consulted. [header, cookie] therefore means "the header,
// else the cookie", so one header value reaches one backend whether or not a cookie came
// along. A cookie entry with a ttl generates a cookie (and keys the request by it) only when
// no entry yields a key: a request that carries the header is never given a cookie.
//
// With `combine = true` on the listener, the entries are combined into one key hash as Envoy
// combines its route hash policies (envoy/source/common/router/config_impl.cc,
// HashPolicyImpl::generateHash):
//
//   for each policy in order:
//     if it yields k:  h = have ? rotl(h, 1) ^ k : k      (combineKeyHash, lb/core/hash.h)
//     if it is terminal and some h exists: stop
//
// The rotation keeps two identical policies from cancelling out. `terminal` follows Envoy to
// the letter ("If true, and there is already a hash computed, ignore rest of the list of hash
// policies"): reaching a terminal policy stops the walk when a hash exists, whether that
// policy or an earlier one produced it. A cookie with a ttl generates when the walk reaches it
// without one, as Envoy's does. Without `combine`, `terminal` changes nothing: every entry
// already ends the walk when it yields a key.
//
// Either way, a single policy gives that policy's hash unchanged (rotl(0, 1) ^ k == k), which
// ketama depends on: one key plugin must give nginx's plain CRC32 of the key bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lb/core/result.h"
#include "plugins/key.h"

namespace lb {

class KeyChain {
 public:
  enum class Mode : uint8_t {
    kFirst,     // alternatives: the first entry that yields a key (the default)
    kCombine,   // Envoy's combination (`combine = true`)
  };

  // Builds one plugin per policy through the registry (lb::findKeyPlugin). Errors, all at
  // once, for an unknown kind and for an L7 kind where `protocol` (the listener's, as the
  // config spells it) is not "http"; each names the policy as
  // `<path_prefix>.hash[i]` with the policy's source position. Config-load time only.
  static Result<KeyChain> build(std::span<const HashPolicy> policies, std::string_view protocol,
                                const std::string& file = "",
                                const std::string& path_prefix = "hash",
                                Mode mode = Mode::kFirst);

  // The key hash of this request or connection, by the chain's mode. False when no policy
  // yields a key (the listener's on_missing_key applies). May generate a cookie into
  // ctx.cookie_out. With ctx.text_out, the bytes the key came from (combined: its first
  // part's), for display. Hot path: no allocation, no locks; safe from any thread (plugins
  // are const).
  bool compute(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept;

  size_t size() const noexcept { return links_.size(); }
  bool empty() const noexcept { return links_.empty(); }
  Mode mode() const noexcept { return mode_; }
  // True when some policy needs the HTTP request (header, cookie, query, path).
  bool needsRequest() const noexcept { return needs_request_; }

 private:
  struct Link {
    std::unique_ptr<KeyPlugin> plugin;
    bool terminal;
    bool generates;   // a cookie with a ttl: may make a key up when the request has none
  };
  bool first(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept;
  bool combined(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept;

  std::vector<Link> links_;
  Mode mode_ = Mode::kFirst;
  bool needs_request_ = false;
};

}  // namespace lb
