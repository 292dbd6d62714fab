// `lb analyze`: offline balance and key movement of each selector, and per-key preference
// orders under a real config file (docs/analyze.md).
#pragma once

namespace lb {
// argv holds the arguments after "analyze". Returns the process exit code.
int runAnalyze(int argc, char** argv);
}  // namespace lb
