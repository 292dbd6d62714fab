// nlohmann::json parses (a real JSON parser, Debian's nlohmann-json3-dev, header-only: no
// library to link, and its DOM is all a document of a few hundred backends needs);
// json_positions.h finds where each value was written; lb/config/backends.h judges the
// values and the list, as it does for TOML.
#include "lb/membership/document.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "lb/config/backends.h"
#include "lb/config/walker.h"
#include "lb/membership/json_positions.h"

namespace lb {

namespace {

using Json = nlohmann::json;

// As TableWalker names TOML types, in JSON's words.
std::string jsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "float";
    case Json::value_t::null: return "null";
    default: return "nothing";
  }
}

// TableWalker's counterpart over one JSON object: the same messages for a missing key, a
// wrong type, a value out of range and an unknown key, at the positions the index found.
class ObjectWalker {
 public:
  ObjectWalker(WalkContext& ctx, const JsonPositions& where, const Json& object,
               std::string path)
      : ctx_(ctx), where_(where), object_(object), path_(std::move(path)) {
    if (!path_.empty()) ctx_.positions.emplace(path_, valuePos(path_));
  }

  const Json* get(const std::string& key) {
    known_.push_back(key);
    auto it = object_.find(key);
    if (it == object_.end()) return nullptr;
    ctx_.positions.emplace(child(key), valuePos(child(key)));
    return &*it;
  }

  bool string(const std::string& key, std::string* out, bool required) {
    const Json* v = get(key);
    if (!v) {
      if (required) missing(key);
      return false;
    }
    if (!v->is_string()) return wrongType(key, *v, "a string");
    *out = v->get<std::string>();
    return true;
  }

  bool integer(const std::string& key, int64_t min, int64_t max, int64_t* out) {
    const Json* v = get(key);
    if (!v) return false;
    if (!v->is_number_integer()) return wrongType(key, *v, "an integer");
    // Past int64 (number_unsigned) is past any max too.
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max)) {
      errorAt(key, "must be <= " + std::to_string(max) + ", got " + v->dump());
      return false;
    }
    const auto n = v->get<int64_t>();
    if (n < min) {
      errorAt(key, "must be >= " + std::to_string(min) + ", got " + std::to_string(n));
      return false;
    }
    if (n > max) {
      errorAt(key, "must be <= " + std::to_string(max) + ", got " + std::to_string(n));
      return false;
    }
    *out = n;
    return true;
  }

  void errorAt(const std::string& key, std::string message) {
    ctx_.error(valuePos(child(key)), child(key), std::move(message));
  }

  void checkUnknownKeys() {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
      auto at = where_.keys.find(child(it.key()));
      ctx_.error(at == where_.keys.end() ? SourcePos{} : at->second, path_,
                 "unknown key '" + it.key() + "'" + didYouMean(it.key(), known_));
    }
  }

 private:
  std::string child(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  SourcePos valuePos(const std::string& path) const {
    auto it = where_.values.find(path);
    return it == where_.values.end() ? SourcePos{} : it->second;
  }
  void missing(const std::string& key) {
    ctx_.error(valuePos(path_), path_, "missing required key '" + key + "'");
  }
  bool wrongType(const std::string& key, const Json& v, const char* expected) {
    errorAt(key, std::string("must be ") + expected + ", got " + jsonTypeName(v));
    return false;
  }

  WalkContext& ctx_;
  const JsonPositions& where_;
  const Json& object_;
  std::string path_;
  std::vector<std::string> known_;
};

// What readTomlBackend (lb/config/backends.h) does for a TOML table, for a JSON object.
void readBackend(WalkContext& ctx, const JsonPositions& where, const Json& v,
                 const std::string& path, BackendConfig* b) {
  if (auto it = where.values.find(path); it != where.values.end()) b->pos = it->second;
  if (!v.is_object()) {
    ctx.error(b->pos, path,
              "must be an object such as {\"name\": \"cache-a\", \"address\": "
              "\"127.0.0.1:9001\"}, got " + jsonTypeName(v));
    return;
  }
  ObjectWalker w(ctx, where, v, path);
  auto check = [&](const std::string& key, const std::string& problem) {
    if (!problem.empty()) w.errorAt(key, problem);
  };
  if (w.string("name", &b->name, true)) check("name", backendNameProblem(b->name));
  if (w.string("address", &b->address, true)) check("address", backendAddressProblem(b->address));
  int64_t weight = 0;
  if (w.integer("weight", kMinBackendWeight, kMaxBackendWeight, &weight))
    b->weight = static_cast<uint32_t>(weight);
  if (w.string("hash_key", &b->hash_key, false))
    check("hash_key", backendHashKeyProblem(b->hash_key));
  if (w.string("zone", &b->zone, false)) check("zone", zoneNameProblem(b->zone));
  w.checkUnknownKeys();
}

// "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error while
// parsing value - invalid literal; last read: '1x'" -> what follows the position.
std::string parseErrorText(const std::string& what) {
  const size_t start = what.find("parse error");
  const size_t colon = what.find(": ", start == std::string::npos ? 0 : start);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

bool errorBefore(const ConfigError& a, const ConfigError& b) {
  auto key = [](const ConfigError& e) {
    return std::pair(e.pos.line == 0 ? UINT32_MAX : e.pos.line, e.pos.column);
  };
  return key(a) < key(b);
}

}  // namespace

Result<MembershipDocument> parseMembershipDocument(std::string_view text, std::string_view source,
                                                   const ClusterConfig& cluster) {
  WalkContext ctx;
  ctx.file = std::string(source);
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based: the byte at which the parser gave up.
    ctx.error(positionOfOffset(text, e.byte > 0 ? e.byte - 1 : 0), "", parseErrorText(e.what()));
    return std::move(ctx.errors);
  } catch (const Json::exception& e) {
    // out_of_range (a number past a double) carries no position.
    ctx.error({}, "", e.what());
    return std::move(ctx.errors);
  }
  const JsonPositions where = indexJsonPositions(text);
  for (const auto& [path, at] : where.duplicates) {
    const size_t dot = path.find_last_of('.');
    const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
    const SourcePos first = where.keys.at(path);
    ctx.error(at, dot == std::string::npos ? "" : path.substr(0, dot),
              "key '" + key + "' is written twice (first at line " + std::to_string(first.line) +
                  "); write it once");
  }

  MembershipDocument doc;
  const SourcePos top_pos = where.values.count("") ? where.values.at("") : SourcePos{1, 1};
  if (!root.is_object()) {
    ctx.error(top_pos, "",
              "must be an object such as {\"backends\": [...]}, got " + jsonTypeName(root));
    return std::move(ctx.errors);
  }
  ObjectWalker top(ctx, where, root, "");
  const Json* list = top.get("backends");
  if (list == nullptr) {
    ctx.error(top_pos, "", "missing required key 'backends'");
  } else if (!list->is_array()) {
    top.errorAt("backends", "must be an array, got " + jsonTypeName(*list));
  } else {
    for (size_t i = 0; i < list->size(); ++i) {
      BackendConfig b;
      readBackend(ctx, where, (*list)[i], "backends[" + std::to_string(i) + "]", &b);
      doc.backends.push_back(std::move(b));
    }
    checkBackendList(cluster, doc.backends, {"backends", ""}, ctx);
  }
  top.integer("changed_at_ms", 0, INT64_MAX, &doc.changed_at_ms);
  top.checkUnknownKeys();
  if (!ctx.errors.empty()) {
    std::stable_sort(ctx.errors.begin(), ctx.errors.end(), errorBefore);
    return std::move(ctx.errors);
  }
  return doc;
}

std::string membershipJson(const std::vector<BackendConfig>& backends, int64_t changed_at_ms) {
  // dump() with `replace`: never throws on bytes that are not UTF-8 (TOML and JSON sources
  // are UTF-8 already; this keeps a caller's mistake from becoming an exception).
  auto quoted = [](const std::string& s) {
    return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  std::string out = "{\"backends\": [";
  for (size_t i = 0; i < backends.size(); ++i) {
    const BackendConfig& b = backends[i];
    out += i == 0 ? "\n  " : ",\n  ";
    out += "{\"name\": " + quoted(b.name) + ", \"address\": " + quoted(b.address);
    if (b.weight != 1) out += ", \"weight\": " + std::to_string(b.weight);
    if (!b.hash_key.empty()) out += ", \"hash_key\": " + quoted(b.hash_key);
    if (!b.zone.empty()) out += ", \"zone\": " + quoted(b.zone);
    out += "}";
  }
  out += backends.empty() ? "]" : "\n]";
  if (changed_at_ms > 0) out += ",\n \"changed_at_ms\": " + std::to_string(changed_at_ms);
  out += "}\n";
  return out;
}

std::string checkRemoval(const std::vector<BackendConfig>& current,
                         const std::vector<BackendConfig>& next, uint32_t max_remove_percent) {
  if (current.empty()) return "";
  size_t removed = 0;
  for (const auto& b : current) {
    const bool kept = std::any_of(next.begin(), next.end(),
                                  [&](const BackendConfig& n) { return n.name == b.name; });
    if (!kept) ++removed;
  }
  if (removed * 100 <= uint64_t{max_remove_percent} * current.size()) return "";
  const uint64_t percent = removed * 100 / current.size();
  return "removes " + std::to_string(removed) + " of " + std::to_string(current.size()) +
         " backends (" + std::to_string(percent) + "%) at once; max_remove_percent is " +
         std::to_string(max_remove_percent);
}

}  // namespace lb
