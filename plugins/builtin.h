// The explicit registry of every plugin (no static initialisers): plugins/builtin.cc lists
// each one by name.
#pragma once

#include <span>
#include <string_view>

#include "plugins/key.h"
#include "plugins/selector.h"

namespace lb {

std::span<const SelectorInfo> allSelectors();
const SelectorInfo* findSelector(std::string_view name);   // nullptr when unknown

std::span<const KeyPluginInfo> allKeyPlugins();
const KeyPluginInfo* findKeyPlugin(std::string_view name);  // nullptr when unknown

}  // namespace lb
