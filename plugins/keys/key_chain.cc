// Envoy-compatible combination of a listener's key plugins; see key_chain.h.
#include "plugins/keys/key_chain.h"

#include "lb/core/hash.h"
#include "plugins/builtin.h"

namespace lb {

Result<KeyChain> KeyChain::build(std::span<const HashPolicy> policies, std::string_view protocol,
                                 const std::string& file, const std::string& path_prefix) {
  KeyChain chain;
  Errors errors;
  for (size_t i = 0; i < policies.size(); ++i) {
    const HashPolicy& p = policies[i];
    std::string path = path_prefix + "[" + std::to_string(i) + "]";
    const KeyPluginInfo* info = findKeyPlugin(p.kind);
    if (info == nullptr) {
      errors.push_back({file, p.pos, path, "unknown key plugin '" + p.kind + "'"});
      continue;
    }
    if (info->l7 && protocol != "http") {
      errors.push_back({file, p.pos, path,
                        "'" + p.kind + "' needs an HTTP request; this listener is " +
                            std::string(protocol)});
      continue;
    }
    chain.needs_request_ |= info->l7;
    chain.links_.push_back({info->build(p), p.terminal});
  }
  if (!errors.empty()) return errors;
  return chain;
}

bool KeyChain::compute(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept {
  uint64_t h = 0;
  bool have = false;
  for (const Link& link : links_) {
    uint64_t next;
    if (link.plugin->extract(ctx, key_hash, &next)) {
      h = have ? combineKeyHash(h, next) : next;
      have = true;
    }
    if (link.terminal && have) break;
  }
  if (have) *hash = h;
  return have;
}

}  // namespace lb
