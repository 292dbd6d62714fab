// A cluster's `hot_keys = { threshold, hold, near_cache }` table (docs/config.md, "hot_keys";
// ../shared/design.md, "Hot keys"). Internal to lb/config's loader.
#pragma once

#include <string>

#include "lb/config/config.h"
#include "lb/config/walker.h"

namespace lb {

// Reads the table under `cluster`'s key "hot_keys" into *out; what is not written keeps its
// default (detection is on for every cluster whether or not the table is there).
//
// `near_cache = { items, bytes, ttl }` turns on the redis and memcached near cache (absent:
// off). `spread` belongs to the same table in the design but nothing acts on it yet: it is
// refused by name, since an edge proxy that accepted a setting and ignored it would let an
// operator believe a hot key is being spread when it is not.
void readHotKeys(WalkContext& ctx, const toml::table& table, const std::string& path,
                 HotKeysConfig* out);

}  // namespace lb
