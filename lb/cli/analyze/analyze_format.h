// Printing for `lb analyze`: the JSON array of docs/analyze.md, the side-by-side
// text table, and the per-key preference-order lines. Pure string builders; the CLI writes
// what they return.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "lb/cli/analyze/report.h"

namespace lb {

// `s` as a quoted JSON string: quote, backslash and control characters escaped, valid UTF-8
// kept as is, each byte of an invalid UTF-8 sequence replaced by U+FFFD, so that any key a
// user types yields valid JSON.
std::string jsonString(std::string_view s);

// `v` with exactly `decimals` digits after the point, never NaN or inf (those print as 0):
// JSON has no NaN, and fixed digits keep output diffable.
std::string fixedDecimal(double v, int decimals = 4);

// The JSON array of docs/analyze.md, one object per selector, fractions with 4 decimals, ending in
// a newline:
//   [{"selector": "ring_hash", "backends": 4, "keys": 100000,
//     "balance": {"max_over_mean": 1.0700, "stddev_pct": 4.1000, "shares": {"b0": 0.2510}},
//     "remove": {"backend": "b3", "moved": 0.2490, "ideal": 0.2500, "collateral": 0.0000},
//     "add":    {"backend": "b4", "moved": 0.2010, "ideal": 0.2000, "collateral": 0.0000}}]
std::string analyzeJson(std::span<const SelectorFigures> figures);

// A readable table, one row per selector: balance, then moved / moved over ideal /
// collateral for the removal and the addition. All figures must share one scenario (same
// hosts, keys and changes), as `lb analyze` produces them.
std::string analyzeText(std::span<const SelectorFigures> figures);

// One line of `lb analyze --config`:
//   {"key": "K", "hash": 123, "hash_hex": "000000000000007b", "order": ["cache-b", ...]}
// followed by a newline. hash_hex is the hash as a string (16 lower-case hex digits, as the
// access log's key= field), which JSON readers that use doubles cannot round. With `hashed`
// (the part of K inside its hash tag, when a listener's hash_tag selects one), "hashed": "H"
// follows the key. With `zones` (a cluster whose backends name zones), "zones": [...] follows
// the order, each host's zone at its position.
std::string preferenceLine(std::string_view key, std::string_view hashed, uint64_t hash,
                           std::span<const std::string> order,
                           std::span<const std::string> zones = {});
inline std::string preferenceLine(std::string_view key, uint64_t hash,
                                  std::span<const std::string> order) {
  return preferenceLine(key, {}, hash, order);
}

}  // namespace lb
