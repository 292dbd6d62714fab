#include "lb/config/hot_keys_table.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "plugins/selectors/hot_spread.h"

namespace lb {

namespace {

// A hold shorter than the main thread's merge period (about a second) would let a key leave
// the hot set between two merges that both saw it hot: hysteresis needs at least one merge.
constexpr Duration kMinHold{1000};

// "0.02", "1", "1e-05": short, and what the operator wrote when it was short.
std::string shortNumber(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// threshold: a share of the cluster's requests, so in (0, 1]. TOML writes 1 as an integer
// and 0.5 as a float; both are numbers here. NaN fails both comparisons and is refused.
void readThreshold(TableWalker& w, HotKeysConfig* h) {
  const toml::node* n = w.get("threshold");
  if (n == nullptr) return;
  double v = 0;
  if (n->is_floating_point()) {
    v = n->as_floating_point()->get();
  } else if (n->is_integer()) {
    v = static_cast<double>(n->as_integer()->get());
  } else {
    w.errorAt("threshold", "must be a number in (0, 1] (a share of the cluster's requests, "
                           "e.g. 0.02), got " + typeName(*n));
    return;
  }
  if (!(v > 0 && v <= 1)) {
    w.errorAt("threshold", "must be in (0, 1] (a share of the cluster's requests, e.g. 0.02 "
                           "for 2%), got " + shortNumber(v));
    return;
  }
  h->threshold = v;
}

// spread: 0 (off) or 2..kMaxSpread hosts. 1 is refused rather than read as off: "spread
// over one host" is the owner alone, and an operator who wrote it meant something else.
// kMaxSpread (16) is the pick's own bound (plugins/selectors/hot_spread.h): beyond 16
// copies of one key a fleet is better served by a lower threshold or a near cache.
void readSpread(TableWalker& w, HotKeysConfig* h) {
  const toml::node* n = w.get("spread");
  if (n == nullptr) return;
  if (!n->is_integer()) {
    w.errorAt("spread", "must be an integer, 0 (off) or 2 to " + std::to_string(kMaxSpread) +
                            " (hosts a hot key's GET and HEAD requests spread over), got " +
                            typeName(*n));
    return;
  }
  const int64_t v = n->as_integer()->get();
  if (v != 0 && (v < 2 || v > int64_t{kMaxSpread})) {
    w.errorAt("spread", "must be 0 (off) or 2 to " + std::to_string(kMaxSpread) +
                            " (hosts a hot key's GET and HEAD requests spread over), got " +
                            std::to_string(v));
    return;
  }
  h->spread = static_cast<uint32_t>(v);
}

// near_cache.items: one worker's entries. A few are enough (Fan et al., "Small cache, big
// effect", SoCC 2011: O(n log n) items for n backends); past 1M the CLOCK sweep and the
// index stop being small.
constexpr int64_t kMaxItems = int64_t{1} << 20;
// near_cache.bytes: below 1 KiB not even one ordinary reply fits; above 64 GiB per worker is a
// typo for the machine lb runs on.
constexpr uint64_t kMinBytes = 1024;
constexpr uint64_t kMaxBytes = uint64_t{64} << 30;
// near_cache.ttl: the staleness bound for writes lb cannot see (memcached's, and Redis' while
// tracking catches up); more than a minute would be a cache, not a near cache.
constexpr Duration kMinTtl{1};
constexpr Duration kMaxTtl{60000};

void readBytes(TableWalker& w, NearCacheConfig* c) {
  w.bytes("bytes", kMinBytes, kMaxBytes, "(per worker)", &c->bytes);
}

void readNearCache(WalkContext& ctx, const toml::table& table, const std::string& path,
                   NearCacheConfig* c) {
  TableWalker w(ctx, table, path);
  c->pos = w.pos();
  w.integer("items", 1, kMaxItems, &c->items);
  readBytes(w, c);
  if (w.duration("ttl", kMinTtl, &c->ttl) && c->ttl > kMaxTtl)
    w.errorAt("ttl", "must be at most 1m (the near cache's staleness bound for writes lb does "
                     "not see), got " + std::to_string(c->ttl.count()) + "ms");
  w.checkUnknownKeys();
}

}  // namespace

void readHotKeys(WalkContext& ctx, const toml::table& table, const std::string& path,
                 HotKeysConfig* h) {
  TableWalker w(ctx, table, path);
  h->pos = w.pos();
  readThreshold(w, h);
  w.duration("hold", kMinHold, &h->hold);
  readSpread(w, h);
  if (const toml::table* nt = w.subtable("near_cache")) {
    NearCacheConfig c;
    readNearCache(ctx, *nt, path + ".near_cache", &c);
    h->near_cache = c;
  }
  w.checkUnknownKeys();
}

}  // namespace lb
