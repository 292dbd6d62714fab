// `query`: the affinity key is the value of a named query parameter, as Envoy's
// `query_parameter` hash policy and nginx's `hash $arg_name` do.
#include "lb/hash.h"
#include "plugins/keys/key_plugins.h"

namespace lb {

std::optional<std::string_view> findQueryParam(std::string_view target,
                                               std::string_view name) noexcept {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  size_t hash = query.find('#');
  if (hash != std::string_view::npos) query = query.substr(0, hash);
  // Worked example: "a=1&&b&k=x=y" holds a="1", b="" and k="x=y" (the first '=' splits).
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    if (key == name && !pair.empty())
      return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
  }
  return std::nullopt;
}

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
