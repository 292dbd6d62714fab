// What `lb simulate` prints: the summary table, the JSON document (one object per run) and
// the gnuplot script behind --plot.
#pragma once

#include <span>
#include <string>

#include "lb/cli/simulate/model.h"

namespace lb {

// A run's name in every output: the selector, "+bounded" with bounded loads on, then
// "+read-through" or "+ramp" with a handover.
std::string simRunName(const SimResult& r);
// "off", "read-through", "ramp".
std::string simHandoverName(SimHandover h);

std::string simulateText(const SimScenario& s, std::span<const SimResult> runs);
std::string simulateJson(std::span<const SimResult> runs);

// A gnuplot script that draws hit ratio and backend reads over time, one line per run, each
// labelled at its right end (labels pushed apart so that none overlaps), into `svg_file`.
std::string simulatePlotScript(const SimScenario& s, std::span<const SimResult> runs,
                               const std::string& svg_file);

}  // namespace lb
