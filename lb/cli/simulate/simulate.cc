// The driver of `lb simulate`: parsing in options, the model in model, printing and the plot
// script in format; this file picks the selectors (as `lb analyze` does: mod_n, the baseline,
// first, then every registered one), reads a trace, runs gnuplot, and owns the exit codes.
#include "lb/cli/simulate/simulate.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "lb/cli/analyze/report.h"
#include "lb/cli/simulate/simulate_format.h"
#include "lb/cli/simulate/simulate_options.h"
#include "plugins/builtin.h"

namespace lb {

namespace {

constexpr int kExitFile = 1;
constexpr int kExitUsage = 2;

int fail(int code, const std::string& message) {
  fprintf(stderr, "lb simulate: %s\n", message.c_str());
  return code;
}

// "all" (mod_n first) or a comma-separated list; nullopt names the unknown one in `error`.
std::optional<std::vector<const SelectorInfo*>> chosen(const std::string& spec,
                                                       std::string& error) {
  std::vector<const SelectorInfo*> out;
  if (spec == "all") {
    out.push_back(&modNSelector());
    for (const auto& s : allSelectors()) out.push_back(&s);
    return out;
  }
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string name = spec.substr(start, comma - start);
    const SelectorInfo* s = name == modNSelector().name ? &modNSelector() : findSelector(name);
    if (!s) {
      std::string known = "all, mod_n";
      for (const auto& k : allSelectors()) known += ", " + std::string(k.name);
      error = "unknown selector '" + name + "' (known: " + known + ")";
      return std::nullopt;
    }
    out.push_back(s);
    start = comma + 1;
  }
  return out;
}

bool readTrace(const std::string& path, SimPopularity& p, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open the trace";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) p.trace.push_back(line);
  }
  if (p.trace.empty()) {
    error = path + ": the trace has no keys (one key a line)";
    return false;
  }
  return true;
}

// gnuplot through a pipe: the script on its stdin, the SVG where the script says.
bool plot(const std::string& script, std::string& error) {
  FILE* gp = popen("gnuplot", "w");
  if (!gp) {
    error = "cannot start gnuplot (Debian package gnuplot-nox)";
    return false;
  }
  fwrite(script.data(), 1, script.size(), gp);
  const int status = pclose(gp);
  if (status != 0) {
    error = "gnuplot failed (is gnuplot-nox installed?), status " + std::to_string(status);
    return false;
  }
  return true;
}

}  // namespace

int runSimulate(int argc, char** argv) {
  std::string error;
  auto options =
      parseSimulateArgs(std::span<char* const>(argv, static_cast<size_t>(argc)), error);
  if (!options) {
    fprintf(stderr, "lb simulate: %s\n%s", error.c_str(), simulateUsage());
    return kExitUsage;
  }
  if (options->help) {
    fputs(simulateUsage(), stdout);
    return 0;
  }
  SimScenario& s = options->scenario;
  const auto selectors = chosen(options->selector, error);
  if (!selectors) return fail(kExitUsage, error);
  if (s.popularity.kind == SimPopularity::Kind::kTrace) {
    if (!readTrace(options->trace_file, s.popularity, error)) return fail(kExitFile, error);
    std::unordered_set<std::string> distinct(s.popularity.trace.begin(), s.popularity.trace.end());
    s.keys = distinct.size();
    if (!options->capacity_given)
      s.capacity = static_cast<uint32_t>(std::max<double>(1, 0.95 * s.keys / s.servers));
  }

  std::vector<SimResult> runs;
  for (const SelectorInfo* info : *selectors) {
    const SimSelector sel{std::string(info->name), info->build, info->key_hash,
                          options->selector_options};
    // Plain, then with bounded loads when a factor is given; each without a handover, then
    // with each kind of it when a window is given.
    // With --replicas, the same once more with each key on R hosts.
    for (const uint32_t replicas : {1u, s.replicas}) {
      for (const uint32_t factor : {0u, options->balance_factor}) {
        for (const SimHandover h :
             {SimHandover::kOff, SimHandover::kReadThrough, SimHandover::kRamp}) {
          auto r = simulateSelector(s, sel, factor, error, h, replicas);
          if (!r) return fail(kExitUsage, error);
          runs.push_back(std::move(*r));
          if (s.handover_window_s <= 0) break;
        }
        if (options->balance_factor == 0) break;
      }
      if (s.replicas <= 1) break;
    }
  }
  const std::string out = options->format == SimulateOptions::Format::kJson
                              ? simulateJson(runs)
                              : simulateText(s, runs);
  fputs(out.c_str(), stdout);
  if (!options->plot_file.empty() &&
      !plot(simulatePlotScript(s, runs, options->plot_file), error))
    return fail(kExitFile, error);
  return 0;
}

}  // namespace lb
