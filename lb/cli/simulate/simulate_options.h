// The command line of `lb simulate` (docs/analyze.md, "lb simulate"), parsed and
// range-checked into a scenario before anything runs.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "lb/cli/simulate/model.h"

namespace lb {

struct SimulateOptions {
  enum class Format { kText, kJson };
  bool help = false;
  std::string selector = "all";       // "all", or names separated by commas (mod_n allowed)
  std::string trace_file;             // --popularity trace:FILE, read by the driver
  uint32_t balance_factor = 0;        // --hash-balance-factor: also run each with bounded loads
  SelectorOptions selector_options;
  Format format = Format::kText;
  std::string plot_file;
  bool capacity_given = false;       // else 95% of keys / servers (a trace: its distinct keys)
  SimScenario scenario;
};

inline constexpr uint32_t kSimulateMaxServers = 10000;
inline constexpr uint64_t kSimulateMaxKeys = 10000000;
inline constexpr uint64_t kSimulateMaxSamples = 10000000;

// Parses the arguments after "simulate". nullopt, `error` one line naming the argument, on
// any usage error. Fills the capacity, when not given, with 95% of keys / servers.
std::optional<SimulateOptions> parseSimulateArgs(std::span<char* const> args, std::string& error);

// One --event value ("add:1@10s", "fail:1,recover:30s", "rollout:8,60s", ...).
std::optional<SimEvent> parseSimEvent(std::string_view text, std::string& error);

const char* simulateUsage();

}  // namespace lb
