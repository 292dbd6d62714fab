#include "lb/config/hot_keys_table.h"

#include <cstdio>
#include <string>

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

// Written, but not built yet (issue 22): an error naming the key and what to do.
void refuseLater(TableWalker& w, std::string_view key, const char* what) {
  if (w.get(key) == nullptr) return;
  w.errorAt(key, std::string("is not supported yet (") + what + " is planned, not built): "
                 "remove it; hot keys are still detected and shown in /hotkeys");
}

}  // namespace

void readHotKeys(WalkContext& ctx, const toml::table& table, const std::string& path,
                 HotKeysConfig* h) {
  TableWalker w(ctx, table, path);
  h->pos = w.pos();
  readThreshold(w, h);
  w.duration("hold", kMinHold, &h->hold);
  refuseLater(w, "spread", "spreading a hot key over several hosts");
  refuseLater(w, "near_cache", "a near cache of hot keys in lb");
  w.checkUnknownKeys();
}

}  // namespace lb
