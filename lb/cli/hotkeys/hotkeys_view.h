// What `lb hotkeys` shows: the admin's /hotkeys answer (docs/operations.md, "Watching hot keys") read
// into plain structs, and drawn as a top-like table. Pure functions of their inputs (the time
// and the width are arguments), so the tests pin whole screens.
//
//   cluster cache  total 52118.4 rps  floor 40.2 rps  window 1s  keys 3
//      #  KEY              RPS      LOWER   SHARE  OWNER    SERVING          SINCE
//      1  user:1        9876.5     9800.0  18.95%  cache-a  cache-a,cache-c    42s
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lb {

struct HotKeyRow {
  std::string key;                    // as the admin sent it, decoded from JSON
  std::string hash_hex;
  double rps = 0;
  double rps_lower = 0;
  double share = 0;                   // of the cluster's requests, 0..1
  std::string owner;
  std::vector<std::string> serving;
  std::optional<int64_t> hot_since;   // Unix seconds; absent when the admin gave none
};

struct HotKeysCluster {
  std::string cluster;
  double window_s = 0;
  double floor_rps = 0;
  // The cluster's whole request rate: "total_rps" when the admin sends it, else estimated
  // from the first key (rps / share), else absent.
  std::optional<double> total_rps;
  bool total_estimated = false;
  std::vector<HotKeyRow> keys;        // in the admin's order (by rate, hottest first)
};

// One cluster's object, or {"clusters": [object, ...]} (the answer without ?cluster=).
// nullopt with *error naming the first field that is not as the design says.
std::optional<std::vector<HotKeysCluster>> parseHotKeysReply(std::string_view json,
                                                             std::string* error);

// An RFC 3339 timestamp ("2026-12-02T12:00:00Z", "...T12:00:00.250+01:00") as Unix seconds.
std::optional<int64_t> parseRfc3339(std::string_view text);

// "42s", "3m05s", "2h10m", "3d04h": how long ago, to the second; "-" when unknown.
std::string formatAge(std::optional<int64_t> since, int64_t now);

// `key` safe to print on a terminal: printable ASCII as is, backslash as "\\", every other
// byte as \xNN. A key is any bytes a client sent; printed raw, an ESC in it would drive the
// operator's terminal.
std::string escapeKey(std::string_view key);

struct HotKeysDrawOptions {
  int64_t now = 0;            // Unix seconds, for the ages
  size_t width = 0;           // columns; 0 = no limit (keys are printed whole)
  size_t max_rows = 0;        // key rows per cluster; 0 = all
};

// The table of every cluster, one header line each and a column header before the rows,
// lines ended by '\n', none longer than options.width (when not 0).
std::string drawHotKeys(const std::vector<HotKeysCluster>& clusters,
                        const HotKeysDrawOptions& options);

}  // namespace lb
