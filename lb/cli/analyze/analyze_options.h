// The command line of `lb analyze` (docs/analyze.md), parsed and range-checked
// into a plain struct before anything runs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "plugins/selector.h"

namespace lb {

struct AnalyzeOptions {
  enum class Mode { kSimulate, kConfig };
  enum class Format { kText, kJson };

  Mode mode = Mode::kSimulate;
  bool help = false;

  // Simulation: b0..b{backends-1}, keys "key:0".."key:{keys-1}".
  std::string selector = "all";     // a registered name, "mod_n", or "all"
  uint32_t backends = 4;
  uint64_t keys = 100000;
  std::vector<uint32_t> weights;    // one per backend; empty means all 1
  SelectorOptions selector_options;
  Format format = Format::kText;

  // Config: each key's hash and preference order in one cluster of a real file.
  std::string config_file;
  std::string cluster;
  std::string listener;             // whose hash_tag applies; "" = the cluster's first
                                    // redis or memcached listener
  std::vector<std::string> show_keys;
};

// Bounds that keep one run to seconds and memory to tens of megabytes.
inline constexpr uint32_t kAnalyzeMaxBackends = 10000;
inline constexpr uint64_t kAnalyzeMaxKeys = 10000000;
inline constexpr uint32_t kAnalyzeMaxWeight = 1000;
inline constexpr uint32_t kAnalyzeMaxVnodes = 10000;
inline constexpr uint64_t kAnalyzeMaxTableSize = 5000011;   // Envoy's Maglev maximum, prime
inline constexpr uint64_t kAnalyzeMaxRingPoints = 10000000;  // as the config loader allows

// Parses the arguments after "analyze" ("--opt value" or "--opt=value"). Returns nullopt and
// sets `error` to one line naming the offending argument on any usage error: unknown option,
// missing value, malformed or out-of-range number, options of the two modes mixed. Does not
// check that a selector name exists (the caller owns the registry).
std::optional<AnalyzeOptions> parseAnalyzeArgs(std::span<char* const> args, std::string& error);

// The usage text printed by --help and after a usage error.
const char* analyzeUsage();

}  // namespace lb
