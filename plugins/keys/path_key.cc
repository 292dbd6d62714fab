// `path`: the affinity key is the request path without its query, so every variant of one
// object's URL (?v=1, ?utm=...) lands on the cache that holds the object.
#include "lb/core/hash.h"
#include "plugins/keys/key_plugins.h"

namespace lb {

namespace {

// Not percent-decoded and not normalised ("/a/../b" stays as sent): the key is what the
// client asked for, which is also what a cache behind us keys on.
class PathKey final : public KeyPlugin {
 public:
  bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept override {
    if (ctx.request == nullptr) return false;
    std::string_view path = targetPath(ctx.request->target);
    if (path.empty()) return false;
    *hash = hashKeyBytes(key_hash, path);
    if (ctx.text_out != nullptr) ctx.text_out->bytes = path;
    return true;
  }
};

}  // namespace

std::unique_ptr<KeyPlugin> buildPathKey(const HashPolicy&) { return std::make_unique<PathKey>(); }

}  // namespace lb
