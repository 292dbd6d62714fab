// The explicit registry of every plugin (no static initialisers): plugins/builtin.cc lists
// each one by name.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "plugins/key.h"
#include "plugins/selector.h"

namespace lb {

// Each selector once, with its default key hash.
std::span<const SelectorInfo> allSelectors();
const SelectorInfo* findSelector(std::string_view name);   // nullptr when unknown
// The selector `name` with the key hash named `key_hash` (empty: its default), for a cluster
// that names its key hash (twemproxy.hash). nullptr when the selector is unknown or does not
// offer that key hash. The pointer is to static storage: a snapshot may keep it.
const SelectorInfo* findSelector(std::string_view name, std::string_view key_hash);
// The key hashes a cluster of `selector` may name, the default first; empty for selectors
// whose key hash is fixed.
std::vector<std::string_view> keyHashNames(std::string_view selector);

std::span<const KeyPluginInfo> allKeyPlugins();
const KeyPluginInfo* findKeyPlugin(std::string_view name);  // nullptr when unknown

}  // namespace lb
