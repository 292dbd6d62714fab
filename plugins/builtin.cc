// Every plugin, registered by name, explicitly: one line per plugin.
#include "plugins/builtin.h"

#include <array>

#include "plugins/keys/key_plugins.h"
#include "plugins/selectors/selectors.h"
#include "plugins/selectors/twemproxy_hash.h"

namespace lb {

namespace {
// Selectors (plugins/selectors/): name, builder, the hash applied to key bytes by default.
constexpr std::array<SelectorInfo, 6> kSelectors = {{
    {"ring_hash", buildRingHash, KeyHash::kXxh64},
    {"maglev", buildMaglev, KeyHash::kXxh64},
    {"rendezvous", buildRendezvous, KeyHash::kXxh64},
    {"jump", buildJump, KeyHash::kXxh64},
    {"ketama", buildKetama, KeyHash::kCrc32},
    {"twemproxy", buildTwemproxy, twemproxy::kKeyHashes[0]},
}};
// The selectors whose key hash a cluster may name, one entry per (selector, key hash), so that
// a cluster's SelectorInfo carries its own choice and every protocol reads it from one place.
constexpr auto kKeyHashVariants = [] {
  std::array<SelectorInfo, twemproxy::kKeyHashes.size()> out{};
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = {"twemproxy", buildTwemproxy, twemproxy::kKeyHashes[i]};
  return out;
}();
// Key plugins (plugins/keys/): name, needs an HTTP request (l7), builder.
const std::array<KeyPluginInfo, 6> kKeyPlugins = {{
    {"header", true, buildHeaderKey},
    {"cookie", true, buildCookieKey},
    {"source_ip", false, buildSourceIpKey},
    {"five_tuple", false, buildFiveTupleKey},
    {"query", true, buildQueryKey},
    {"path", true, buildPathKey},
}};
}  // namespace

std::span<const SelectorInfo> allSelectors() { return kSelectors; }

const SelectorInfo* findSelector(std::string_view name) {
  for (const auto& s : kSelectors)
    if (s.name == name) return &s;
  return nullptr;
}

const SelectorInfo* findSelector(std::string_view name, std::string_view key_hash) {
  if (key_hash.empty()) return findSelector(name);
  for (const auto& s : kKeyHashVariants)
    if (s.name == name && s.key_hash.name == key_hash) return &s;
  return nullptr;
}

std::vector<std::string_view> keyHashNames(std::string_view selector) {
  std::vector<std::string_view> names;
  for (const auto& s : kKeyHashVariants)
    if (s.name == selector) names.push_back(s.key_hash.name);
  return names;
}

std::span<const KeyPluginInfo> allKeyPlugins() { return kKeyPlugins; }

const KeyPluginInfo* findKeyPlugin(std::string_view name) {
  for (const auto& k : kKeyPlugins)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace lb
