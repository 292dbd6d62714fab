#include "lb/config/walker.h"

#include <algorithm>

#include "lb/config/prescan.h"
#include "lb/core/duration.h"

namespace lb {

size_t editDistance(std::string_view a, std::string_view b) {
  // Three rows of the classic dynamic programme; the extra row is for transpositions.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[b.size()];
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  // Allow one edit for short words, two beyond; more than that suggests nonsense.
  size_t limit = word.size() <= 4 ? 1 : 2;
  const std::string* best = nullptr;
  size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    size_t d = editDistance(word, c);
    if (d < best_distance && d < c.size()) {
      best = &c;
      best_distance = d;
    }
  }
  return best ? " (did you mean '" + *best + "'?)" : "";
}

std::string typeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

SourcePos posOf(const toml::node& node) {
  return {node.source().begin.line, node.source().begin.column};
}

SourcePos posOf(const toml::key& key) {
  return {key.source().begin.line, key.source().begin.column};
}

std::optional<toml::table> parseTomlText(std::string_view text, WalkContext& ctx) {
  if (auto bad = prescanToml(text)) {
    ctx.error(bad->pos, "", bad->message);
    return std::nullopt;
  }
  try {
    return toml::parse(text, std::string_view(ctx.file));
  } catch (const toml::parse_error& e) {
    ctx.error({e.source().begin.line, e.source().begin.column}, "",
              std::string(e.description()));
    return std::nullopt;
  }
}

void WalkContext::error(SourcePos pos, std::string path, std::string message) {
  errors.push_back({file, pos, std::move(path), std::move(message)});
}

SourcePos WalkContext::positionOf(const std::string& path) const {
  std::string p = path;
  while (true) {
    auto it = positions.find(p);
    if (it != positions.end()) return it->second;
    size_t cut = p.find_last_of(".[");
    if (cut == std::string::npos) return {};
    p.resize(cut);
  }
}

TableWalker::TableWalker(WalkContext& ctx, const toml::table& table, std::string path)
    : ctx_(ctx), table_(table), path_(std::move(path)) {
  if (!path_.empty()) ctx_.positions.emplace(path_, posOf(table_));
}

std::string TableWalker::childPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const toml::node* TableWalker::get(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  const toml::node* node = table_.get(key);
  if (node) ctx_.positions.emplace(childPath(key), posOf(*node));
  return node;
}

void TableWalker::missing(std::string_view key) {
  ctx_.error(pos(), path_, "missing required key '" + std::string(key) + "'");
}

void TableWalker::wrongType(std::string_view key, const toml::node& node, const char* expected) {
  ctx_.error(posOf(node), childPath(key),
             std::string("must be ") + expected + ", got " + typeName(node));
}

bool TableWalker::string(std::string_view key, std::string* out, bool required) {
  const toml::node* node = get(key);
  if (!node) {
    if (required) missing(key);
    return false;
  }
  if (!node->is_string()) {
    wrongType(key, *node, "a string");
    return false;
  }
  *out = node->as_string()->get();
  return true;
}

bool TableWalker::boolean(std::string_view key, bool* out) {
  const toml::node* node = get(key);
  if (!node) return false;
  if (!node->is_boolean()) {
    wrongType(key, *node, "true or false");
    return false;
  }
  *out = node->as_boolean()->get();
  return true;
}

bool TableWalker::integer(std::string_view key, int64_t min, int64_t max, int64_t* out,
                          bool required) {
  const toml::node* node = get(key);
  if (!node) {
    if (required) missing(key);
    return false;
  }
  if (!node->is_integer()) {
    wrongType(key, *node, "an integer");
    return false;
  }
  int64_t v = node->as_integer()->get();
  if (v < min) {
    errorAt(key, "must be >= " + std::to_string(min) + ", got " + std::to_string(v));
    return false;
  }
  if (v > max) {
    errorAt(key, "must be <= " + std::to_string(max) + ", got " + std::to_string(v));
    return false;
  }
  *out = v;
  return true;
}

bool TableWalker::duration(std::string_view key, Duration min, Duration* out) {
  const toml::node* node = get(key);
  if (!node) return false;
  if (!node->is_string()) {
    wrongType(key, *node, "a duration string such as \"2s\"");
    return false;
  }
  std::string error;
  Duration d{0};
  if (!parseDuration(node->as_string()->get(), &d, &error)) {
    errorAt(key, error);
    return false;
  }
  if (d < min) {
    errorAt(key, "must be at least " + formatDuration(min) + ", got '" +
                     std::string(node->as_string()->get()) + "'");
    return false;
  }
  *out = d;
  return true;
}

bool parseByteSize(std::string_view s, uint64_t* out) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (i == 0) return false;
  const std::string_view unit = s.substr(i);
  unsigned shift = 0;
  if (unit == "" || unit == "B") shift = 0;
  else if (unit == "KiB") shift = 10;
  else if (unit == "MiB") shift = 20;
  else if (unit == "GiB") shift = 30;
  else return false;
  if (shift > 0 && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

std::string formatByteSize(uint64_t v) {
  static constexpr std::pair<unsigned, const char*> kUnits[] = {{30, "GiB"}, {20, "MiB"},
                                                                 {10, "KiB"}};
  for (const auto& [shift, unit] : kUnits)
    if (v != 0 && v % (uint64_t{1} << shift) == 0) return std::to_string(v >> shift) + unit;
  return std::to_string(v) + "B";
}

bool TableWalker::bytes(std::string_view key, uint64_t min, uint64_t max, std::string_view what,
                        uint64_t* out) {
  const toml::node* n = get(key);
  if (n == nullptr) return false;
  uint64_t v = 0;
  if (n->is_integer() && n->as_integer()->get() >= 0) {
    v = static_cast<uint64_t>(n->as_integer()->get());
  } else if (!n->is_string() || !parseByteSize(n->as_string()->get(), &v)) {
    errorAt(key, "must be a size such as \"64MiB\" (B, KiB, MiB, GiB) or a number of bytes, got " +
                     (n->is_string() ? "'" + n->as_string()->get() + "'"
                                     : std::string(typeName(*n))));
    return false;
  }
  if (v < min || v > max) {
    std::string range = "must be from " + formatByteSize(min) + " to " + formatByteSize(max);
    if (!what.empty()) range += " " + std::string(what);
    errorAt(key, range + ", got " + std::to_string(v) + " bytes");
    return false;
  }
  *out = v;
  return true;
}

const toml::table* TableWalker::subtable(std::string_view key, bool required) {
  const toml::node* node = get(key);
  if (!node) {
    if (required) missing(key);
    return nullptr;
  }
  if (!node->is_table()) {
    wrongType(key, *node, "a table");
    return nullptr;
  }
  return node->as_table();
}

const toml::array* TableWalker::array(std::string_view key, bool required) {
  const toml::node* node = get(key);
  if (!node) {
    if (required) missing(key);
    return nullptr;
  }
  if (!node->is_array()) {
    wrongType(key, *node, "an array");
    return nullptr;
  }
  return node->as_array();
}

void TableWalker::checkUnknownKeys() {
  for (auto&& [key, node] : table_) {
    std::string_view k = key.str();
    if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
    ctx_.error(posOf(key), path_,
               "unknown key '" + std::string(k) + "'" + didYouMean(k, known_));
  }
}

void TableWalker::error(std::string message) { ctx_.error(pos(), path_, std::move(message)); }

void TableWalker::errorAt(std::string_view key, std::string message) {
  const toml::node* node = table_.get(key);
  ctx_.error(node ? posOf(*node) : pos(), childPath(key), std::move(message));
}

std::string TableWalker::notOneOf(const std::string& text, const std::vector<std::string>& names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
  return "'" + text + "' is not one of " + list + didYouMean(text, names);
}

}  // namespace lb
