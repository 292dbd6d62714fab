// The two ways a listener's key plugins give one key; see key_chain.h.
#include "plugins/keys/key_chain.h"

#include "lb/core/hash.h"
#include "plugins/builtin.h"

namespace lb {

Result<KeyChain> KeyChain::build(std::span<const HashPolicy> policies, std::string_view protocol,
                                 const std::string& file, const std::string& path_prefix,
                                 Mode mode) {
  KeyChain chain;
  chain.mode_ = mode;
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
    // Only a cookie entry carries a ttl (the loader refuses it elsewhere).
    chain.links_.push_back({info->build(p), p.terminal, p.ttl.count() > 0});
  }
  if (!errors.empty()) return errors;
  return chain;
}

bool KeyChain::compute(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept {
  return mode_ == Mode::kFirst ? first(ctx, key_hash, hash) : combined(ctx, key_hash, hash);
}

bool KeyChain::first(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept {
  // First pass: what the request carries. Without somewhere to put a cookie, a cookie
  // plugin reads the cookie and never makes one up.
  KeyContext carried = ctx;
  carried.cookie_out = nullptr;
  for (const Link& link : links_)
    if (link.plugin->extract(carried, key_hash, hash)) return true;
  // Nothing: the first entry that may generate one does.
  if (ctx.cookie_out == nullptr) return false;
  for (const Link& link : links_)
    if (link.generates && link.plugin->extract(ctx, key_hash, hash)) return true;
  return false;
}

bool KeyChain::combined(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept {
  uint64_t h = 0;
  bool have = false;
  // The text shown for a combined key is its first part's: joining the parts would need a
  // buffer, and the first part is what an operator recognises.
  KeyContext rest = ctx;
  for (const Link& link : links_) {
    uint64_t next;
    if (link.plugin->extract(have ? rest : ctx, key_hash, &next)) {
      h = have ? combineKeyHash(h, next) : next;
      have = true;
      rest.text_out = nullptr;
    }
    if (link.terminal && have) break;
  }
  if (have) *hash = h;
  return have;
}

}  // namespace lb
