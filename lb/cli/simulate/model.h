// The model behind `lb simulate` (docs/analyze.md, "lb simulate"): a fleet of LRU caches
// under a sampled request stream, a scenario of membership and health changes on a timeline,
// and the figures an operator asks of it, for one selector at a time. Data in, figures out:
// no parsing, no printing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lb/cli/simulate/scenario.h"
#include "plugins/selector.h"

namespace lb {

// How a run hands keys over after a change of owners (docs/analyze.md, "Handover"): the
// table before the change serves on beside the new one for the scenario's handover window.
enum class SimHandover : uint8_t {
  kOff,          // moved keys go to their new owner at once and arrive there cold
  kReadThrough,  // cache protocols: a read that misses at the new owner is answered by the
                 // previous one, and the value copied to the new owner; writes delete at both
  kRamp,         // HTTP and TCP: each moved key moves at a moment of its own in the window
};

struct SimPoint {
  double t = 0;
  double hit_ratio = 0;
  double backend_reads_per_s = 0;
  double busiest_share = 0;
  double misdirected_reads_per_s = 0;
  double stale_reads_per_s = 0;
  double retries_per_s = 0;            // requests to an unreachable server still marked up
  double handover_reads_per_s = 0;     // misses at a new owner answered by the previous one
  uint32_t servers = 0;                // usable servers at the step's end
};

struct SimResult {
  std::string selector;
  uint32_t balance_factor = 0;         // bounded loads' factor (percent), 0 = off
  SimHandover handover = SimHandover::kOff;
  double handover_window_s = 0;
  uint32_t replicas = 1;               // copies of each key in this run
  double replica_reads = 0;            // misses at a key's first copy read at another (total)
  uint32_t servers_before = 0, servers_after = 0;
  double hit_ratio_before = 0;
  double hit_ratio_after_event = 0;     // over the first after_window_s after the event
  double hit_ratio_mean_after = 0;      // over every step from the event to the end
  double backend_reads_per_s_before = 0;
  double backend_reads_per_s_peak = 0;
  double busiest_share_before = 0;
  double busiest_share_after = 0;      // mean over the steps after the event
  double keys_moved = 0;               // fraction of all keys whose server changed
  std::optional<double> recovery_s;    // from the last change; nullopt: not within the run
  double misdirected_reads = 0;        // total over the run (scaled to the real rate)
  double split_brain_s = 0;            // time with misdirected reads
  double stale_reads = 0;
  double handover_reads = 0;           // total over the run (scaled to the real rate)
  // Sampling: the fraction of keys simulated, requests simulated per step, and the standard
  // error of one step's hit ratio at the steady-state ratio.
  double key_rate = 1;
  uint64_t requests_per_step = 0;
  double hit_ratio_stderr = 0;
  double after_window_stderr = 0;
  std::vector<SimPoint> timeline;
};

struct SimSelector {
  std::string name;
  SelectorBuilder build = nullptr;
  KeyHash key_hash = KeyHash::kXxh64;
  SelectorOptions options;
};

// Runs the scenario for one selector, bounded loads at `balance_factor` percent (0: off),
// keys handed over as `handover` says for the scenario's handover window, each key kept on
// `replicas` hosts (1: one; the scenario's zones apply either way). nullopt with
// `error` set when a table cannot be built.
std::optional<SimResult> simulateSelector(const SimScenario& scenario, const SimSelector& sel,
                                          uint32_t balance_factor, std::string& error,
                                          SimHandover handover = SimHandover::kOff,
                                          uint32_t replicas = 1);

}  // namespace lb
