// Every plugin, registered by name, explicitly: one line per plugin.
#include "plugins/builtin.h"

#include <array>

#include "plugins/keys/key_plugins.h"
#include "plugins/selectors/selectors.h"

namespace lb {

namespace {
// Selectors (plugins/selectors/): name, builder, the hash applied to key bytes.
const std::array<SelectorInfo, 5> kSelectors = {{
    {"ring_hash", buildRingHash, KeyHash::kXxh64},
    {"maglev", buildMaglev, KeyHash::kXxh64},
    {"rendezvous", buildRendezvous, KeyHash::kXxh64},
    {"jump", buildJump, KeyHash::kXxh64},
    {"ketama", buildKetama, KeyHash::kCrc32},
}};
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

std::span<const KeyPluginInfo> allKeyPlugins() { return kKeyPlugins; }

const KeyPluginInfo* findKeyPlugin(std::string_view name) {
  for (const auto& k : kKeyPlugins)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace lb
