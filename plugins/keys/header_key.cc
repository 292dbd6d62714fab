// `header`: the affinity key is the value of a named request header, e.g. `x-cache-key`, as
// Envoy's `header` hash policy and nginx's `hash $http_x_cache_key` do.
#include "lb/core/hash.h"
#include "plugins/keys/key_plugins.h"

namespace lb {

namespace {

// Only the first occurrence counts: a header repeated by an intermediary must not change the
// key, and joining the values would need a buffer. A present header with an empty value is a
// key (the empty string), as in Envoy: the client did send it.
class HeaderKey final : public KeyPlugin {
 public:
  explicit HeaderKey(std::string name) : name_(std::move(name)) {}

  bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept override {
    if (ctx.request == nullptr) return false;
    auto value = findHeader(*ctx.request, name_);
    if (!value) return false;
    *hash = hashKeyBytes(key_hash, *value);
    if (ctx.text_out != nullptr) ctx.text_out->bytes = *value;
    return true;
  }

 private:
  std::string name_;
};

}  // namespace

std::unique_ptr<KeyPlugin> buildHeaderKey(const HashPolicy& policy) {
  return std::make_unique<HeaderKey>(policy.name);
}

}  // namespace lb
