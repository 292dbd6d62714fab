// The checks that need the whole config rather than one value: cluster references, listen
// addresses shared by two listeners, duplicate backends, and what each selector demands of
// its backends. Internal to lb/config_*.cc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lb/config/config.h"
#include "lb/config/walker.h"

namespace lb {

// Names of the registered selectors / key plugins (plugins/builtin.h), in registry order.
std::vector<std::string> selectorNames();
// The key hashes a cluster of `selector` may name (twemproxy.hash), the default first.
std::vector<std::string> keyHashNamesOf(std::string_view selector);
std::vector<std::string> keyPluginNames();
// True for key plugins that need an HTTP request (header, cookie, query, path).
bool keyPluginIsL7(std::string_view name);

// Fills in what defaults to something that depends on other sections: a cluster's
// health.type, when not written, is "http" if every listener in front of it is an HTTP
// listener (and there is one), else "tcp". Runs after the walk, before validateConfig.
void applyHealthDefaults(Config& config, const WalkContext& ctx);

// Adds an error to `ctx` for every cross-reference problem in `config`, pointing at the
// position the walk recorded for the offending key. Runs after the walk, on a Config whose
// single values have already been checked (a value that failed keeps its default).
void validateConfig(const Config& config, WalkContext& ctx);

}  // namespace lb
