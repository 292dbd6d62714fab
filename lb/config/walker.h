// The small layer under the config loader: a cursor over one TOML table that knows its key
// path and file, reads typed values with range checks, remembers which keys the schema asked
// for (so that everything else is reported as unknown, with a did-you-mean), and records
// every error instead of stopping at the first. Internal to lb/config_*.cc.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lb/config/config.h"

namespace lb {

// Optimal-string-alignment distance (Levenshtein plus adjacent transposition), so that the
// usual typo "wieght" is one edit from "weight".
size_t editDistance(std::string_view a, std::string_view b);

// "64MiB", "512KiB", "1GiB", "4096B", or digits alone (bytes): false when it is none of them
// or overflows 64 bits.
bool parseByteSize(std::string_view s, uint64_t* out);
// 1 MiB as "1MiB", 1000 as "1000B": the largest unit that divides it.
std::string formatByteSize(uint64_t v);

// " (did you mean 'x'?)" for the closest candidate within a small distance, else "".
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);

// "integer", "string", "table", ... as TOML names them.
std::string typeName(const toml::node& node);

SourcePos posOf(const toml::node& node);
SourcePos posOf(const toml::key& key);

// One load's shared state: the file name, every error so far, and the source position of
// every key path read (so that the cross-reference checks, which run on the finished
// Config, can still point at the exact value; presence in `positions` also means "written
// in the file", which tells an explicit setting from a default).
struct WalkContext {
  std::string file;
  Errors errors;
  std::unordered_map<std::string, SourcePos> positions;

  void error(SourcePos pos, std::string path, std::string message);
  // Position of `path` when it was written, else of the nearest written ancestor.
  SourcePos positionOf(const std::string& path) const;
  bool written(const std::string& path) const { return positions.count(path) > 0; }
};

// `text` (named ctx.file in errors) as a TOML table: prescanned (lb/config/prescan.h), then
// parsed by toml++. On failure the one error is in ctx and the result is empty. Every loader
// of a TOML text starts here, so none can skip the prescan.
std::optional<toml::table> parseTomlText(std::string_view text, WalkContext& ctx);

// A cursor over one table. Every reader marks its key as part of the schema; each returns
// true only when the key is present and valid, records an error on a wrong type or value
// (leaving *out unchanged), and records "missing required key" at this table when
// `required` and absent.
class TableWalker {
 public:
  TableWalker(WalkContext& ctx, const toml::table& table, std::string path);

  const std::string& path() const { return path_; }
  SourcePos pos() const { return posOf(table_); }
  std::string childPath(std::string_view key) const;
  const toml::table& table() const { return table_; }

  // The node under `key` (nullptr when absent), recorded as known.
  const toml::node* get(std::string_view key);
  bool string(std::string_view key, std::string* out, bool required = false);
  bool boolean(std::string_view key, bool* out);
  bool integer(std::string_view key, int64_t min, int64_t max, int64_t* out,
               bool required = false);
  template <typename T>
  bool integer(std::string_view key, int64_t min, int64_t max, T* out, bool required = false) {
    int64_t v = 0;
    if (!integer(key, min, max, &v, required)) return false;
    *out = static_cast<T>(v);
    return true;
  }
  // A duration string (lb/core/duration.h); `min` is the smallest allowed.
  bool duration(std::string_view key, Duration min, Duration* out);
  // A size: a string such as "64MiB" (B, KiB, MiB, GiB) or an integer count of bytes, from
  // `min` to `max`; `what` ends the range error ("(per worker)"), may be empty.
  bool bytes(std::string_view key, uint64_t min, uint64_t max, std::string_view what,
             uint64_t* out);
  // A string naming one of `choices`, else "'x' is not one of a, b, c (did you mean 'b'?)".
  template <typename E>
  bool enumeration(std::string_view key, const std::vector<std::pair<std::string, E>>& choices,
                   E* out) {
    std::string text;
    if (!string(key, &text)) return false;
    std::vector<std::string> names;
    for (const auto& [name, value] : choices) {
      if (name == text) {
        *out = value;
        return true;
      }
      names.push_back(name);
    }
    errorAt(key, notOneOf(text, names));
    return false;
  }
  const toml::table* subtable(std::string_view key, bool required = false);
  const toml::array* array(std::string_view key, bool required = false);

  // Reports every key of this table that no reader asked for.
  void checkUnknownKeys();
  // Records an error at this table / at `key`'s value.
  void error(std::string message);
  void errorAt(std::string_view key, std::string message);

  // "'x' is not one of a, b, c (did you mean 'b'?)"
  static std::string notOneOf(const std::string& text, const std::vector<std::string>& names);

 private:
  void missing(std::string_view key);
  void wrongType(std::string_view key, const toml::node& node, const char* expected);

  WalkContext& ctx_;
  const toml::table& table_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace lb
