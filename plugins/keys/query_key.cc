// `query`: the affinity key is the value of a named query parameter, as Envoy's
// `query_parameter` hash policy and nginx's `hash $arg_name` do.
#include "lb/core/hash.h"
#include "plugins/keys/key_plugins.h"

namespace lb {

namespace {

// "?k=" is a key (the empty string), as in Envoy: the parameter is there. The first of
// repeated parameters wins, so appending "&k=other" to a URL does not move it.
class QueryKey final : public KeyPlugin {
 public:
  explicit QueryKey(std::string name) : name_(std::move(name)) {}

  bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept override {
    if (ctx.request == nullptr) return false;
    auto value = findQueryParam(ctx.request->target, name_);
    if (!value) return false;
    *hash = hashKeyBytes(key_hash, *value);
    if (ctx.text_out != nullptr) ctx.text_out->bytes = *value;
    return true;
  }

 private:
  std::string name_;
};

}  // namespace

std::unique_ptr<KeyPlugin> buildQueryKey(const HashPolicy& policy) {
  return std::make_unique<QueryKey>(policy.name);
}

}  // namespace lb
