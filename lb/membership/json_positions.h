// Where each value of a JSON text was written, by key path. It exists because nlohmann::json
// 3.11 (Debian 12's nlohmann-json3-dev) keeps no source positions for values: only a parse
// error carries a byte offset (JSON_DIAGNOSTIC_POSITIONS is 3.12+). A membership document's
// validation errors must still point at file:line:col like the TOML loader's, so after
// nlohmann has accepted the text this walks its tokens once more, recording line:column per
// key path. It also sees what nlohmann's object model cannot: a key written twice in one
// object (nlohmann keeps the last without a word).
//
// Paths are those of lb's config errors: "" for the top value, "backends", "backends[2]",
// "backends[2].address". Lines and columns are 1-based; a column counts characters (UTF-8
// code points), as toml++ does for TOML files.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lb/core/result.h"

namespace lb {

struct JsonPositions {
  std::unordered_map<std::string, SourcePos> values;   // path -> where its value starts
  std::unordered_map<std::string, SourcePos> keys;     // path -> where its key (the string) starts
  // A key written a second time in one object: its path and where the second one starts, in
  // text order.
  std::vector<std::pair<std::string, SourcePos>> duplicates;
};

// Containers nested deeper than this are not indexed (a membership document is 3 deep; a
// path per level would make a text of a million '[' cost memory quadratic in its size).
inline constexpr size_t kJsonIndexMaxDepth = 64;

// `text` must be well-formed JSON (nlohmann::json accepted it): on anything else the index
// stops where the text stops making sense and holds what came before; it also stops at a
// container nested deeper than kJsonIndexMaxDepth. Iterative: no recursion to exhaust.
JsonPositions indexJsonPositions(std::string_view text);

// 1-based line and column (in characters, as above) of byte `offset` in `text`; an offset at
// or past the end is the position just after the last character. A leading UTF-8 byte order
// mark takes no column, here and in the index.
SourcePos positionOfOffset(std::string_view text, size_t offset);

}  // namespace lb
