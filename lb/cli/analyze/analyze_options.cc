#include "lb/cli/analyze/analyze_options.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "lb/core/strings.h"

namespace lb {

namespace {

constexpr uint64_t kKetamaPointsPerWeight = 160;   // nginx's fixed points per unit of weight

// A whole unsigned decimal number in [lo, hi]; no sign, spaces or trailing bytes.
bool parseNumber(std::string_view s, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= lo && out <= hi;
}

bool isPrime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

std::string rangeError(const std::string& opt, std::string_view got, uint64_t lo, uint64_t hi) {
  return opt + ": must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "], got '" + std::string(got) + "'";
}

}  // namespace

const char* analyzeUsage() {
  return "usage: lb analyze [--selector NAME|all] [--backends N] [--keys K]\n"
         "                  [--weights W0,W1,...] [--vnodes V] [--table-size M]\n"
         "                  [--format text|json]\n"
         "         balance and key movement of each selector on backends b0..b{N-1}\n"
         "         (default: all selectors plus the mod_n baseline, 4 backends,\n"
         "         100000 keys, text)\n"
         "       lb analyze --config FILE --cluster NAME [--listener L] --key K [--key K2 ...]\n"
         "         each key's hash and preference order in CLUSTER, one JSON line per key;\n"
         "         a cache key is hashed as listener L hashes it (its hash_tag; default:\n"
         "         the cluster's first redis or memcached listener)\n"
         "       lb analyze --config FILE --cluster NAME\n"
         "         the cluster's zones and replicas over 100000 sample keys, one JSON line:\n"
         "         primaries moved by the zone-aware order (always 0) and the share of keys\n"
         "         whose replicas stand in distinct zones, with that order and without\n";
}

std::optional<AnalyzeOptions> parseAnalyzeArgs(std::span<char* const> args, std::string& error) {
  AnalyzeOptions o;
  std::string simulate_opt;   // the first simulation-only option seen, to reject mixing
  bool weights_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    const bool has_value = splitLongOption(&arg, &value);
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      return o;
    }
    static constexpr std::string_view kWithValue[] = {
        "--selector", "--backends", "--keys",   "--weights", "--vnodes",
        "--table-size", "--format", "--config", "--cluster", "--key", "--listener"};
    bool known = false;
    for (auto k : kWithValue) known = known || arg == k;
    if (!known) {
      error = "unknown argument '" + std::string(args[i]) + "'";
      return std::nullopt;
    }
    if (!takeOptionValue(args, &i, has_value, arg, &value, &error)) return std::nullopt;
    const bool simulate_only =
        arg != "--config" && arg != "--cluster" && arg != "--key" && arg != "--listener";
    if (simulate_only && simulate_opt.empty()) simulate_opt = arg;

    uint64_t n = 0;
    if (arg == "--selector") {
      if (value.empty()) {
        error = "--selector: empty name";
        return std::nullopt;
      }
      o.selector = value;
    } else if (arg == "--backends") {
      if (!parseNumber(value, 2, kAnalyzeMaxBackends, n)) {
        error = rangeError(arg, value, 2, kAnalyzeMaxBackends);
        return std::nullopt;
      }
      o.backends = static_cast<uint32_t>(n);
    } else if (arg == "--keys") {
      if (!parseNumber(value, 1, kAnalyzeMaxKeys, n)) {
        error = rangeError(arg, value, 1, kAnalyzeMaxKeys);
        return std::nullopt;
      }
      o.keys = n;
    } else if (arg == "--weights") {
      weights_given = true;
      o.weights.clear();
      std::string_view rest = value;
      while (true) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        if (!parseNumber(item, 1, kAnalyzeMaxWeight, n)) {
          error = "--weights: each weight must be an integer in [1, " +
                  std::to_string(kAnalyzeMaxWeight) + "], got '" + std::string(item) +
                  "' in '" + value + "'";
          return std::nullopt;
        }
        o.weights.push_back(static_cast<uint32_t>(n));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else if (arg == "--vnodes") {
      if (!parseNumber(value, 1, kAnalyzeMaxVnodes, n)) {
        error = rangeError(arg, value, 1, kAnalyzeMaxVnodes);
        return std::nullopt;
      }
      o.selector_options.vnodes = static_cast<uint32_t>(n);
    } else if (arg == "--table-size") {
      if (!parseNumber(value, 2, kAnalyzeMaxTableSize, n) || !isPrime(n)) {
        error = "--table-size: must be a prime in [2, " + std::to_string(kAnalyzeMaxTableSize) +
                "] (Maglev, NSDI 2016 §3.4), got '" + value + "'";
        return std::nullopt;
      }
      o.selector_options.table_size = n;
    } else if (arg == "--format") {
      if (value == "text") {
        o.format = AnalyzeOptions::Format::kText;
      } else if (value == "json") {
        o.format = AnalyzeOptions::Format::kJson;
      } else {
        error = "--format: must be text or json, got '" + value + "'";
        return std::nullopt;
      }
    } else if (arg == "--config") {
      o.mode = AnalyzeOptions::Mode::kConfig;
      o.config_file = value;
    } else if (arg == "--cluster") {
      o.cluster = value;
    } else if (arg == "--listener") {
      o.listener = value;
    } else {   // --key
      o.show_keys.push_back(value);
    }
  }

  if (o.mode == AnalyzeOptions::Mode::kConfig) {
    if (!simulate_opt.empty()) {
      error = simulate_opt + " does not apply with --config";
      return std::nullopt;
    }
    if (o.config_file.empty() || o.cluster.empty()) {
      error = "--config needs a file and --cluster NAME";
      return std::nullopt;
    }
    return o;
  }
  if (!o.cluster.empty() || !o.show_keys.empty() || !o.listener.empty()) {
    error = std::string(!o.listener.empty() ? "--listener"
                        : o.cluster.empty() ? "--key"
                                            : "--cluster") +
            " needs --config";
    return std::nullopt;
  }
  if (weights_given && o.weights.size() != o.backends) {
    error = "--weights: " + std::to_string(o.weights.size()) + " weights for " +
            std::to_string(o.backends) + " backends (give one per backend)";
    return std::nullopt;
  }
  // The rings hold vnodes (ring_hash) or 160 (ketama) points per unit of weight; cap them as
  // the config loader does, at 10M points.
  uint64_t total_weight = o.backends + 1;   // the added host has weight 1
  if (!o.weights.empty()) {
    total_weight = 1;
    for (const uint32_t w : o.weights) total_weight += w;
  }
  const uint64_t points =
      total_weight * std::max<uint64_t>(o.selector_options.vnodes, kKetamaPointsPerWeight);
  if (points > kAnalyzeMaxRingPoints) {
    error = "a ring would hold " + std::to_string(points) + " points (at most " +
            std::to_string(kAnalyzeMaxRingPoints) + "); lower --vnodes, --backends or --weights";
    return std::nullopt;
  }
  // Maglev needs more slots than hosts, the added one included.
  if (o.selector_options.table_size <= o.backends + 1) {
    error = "--table-size: must exceed the " + std::to_string(o.backends + 1) +
            " hosts of the add scenario";
    return std::nullopt;
  }
  return o;
}

}  // namespace lb
