// A cluster's `hot_keys = { threshold, hold, spread, near_cache }` table (docs/config.md,
// "hot_keys"). Internal to lb/config's loader.
#pragma once

#include <string>

#include "lb/config/config.h"
#include "lb/config/walker.h"

namespace lb {

// Reads the table under `cluster`'s key "hot_keys" into *out; what is not written keeps its
// default (detection is on for every cluster whether or not the table is there).
//
// `spread` is read into HotKeysConfig::spread (0 or 2..16); `near_cache = { items, bytes,
// ttl }` turns on the redis and memcached near cache (absent: off).
void readHotKeys(WalkContext& ctx, const toml::table& table, const std::string& path,
                 HotKeysConfig* out);

}  // namespace lb
