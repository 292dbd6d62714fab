// `lb simulate`: what a scale or health event does to each selector's hit ratio and to the
// database behind the caches, before it happens (docs/analyze.md, "lb simulate").
#pragma once

namespace lb {
// argv holds the arguments after "simulate". Returns the process exit code: 0 success, 1 the
// trace file or the plot could not be made, 2 usage error or unknown selector.
int runSimulate(int argc, char** argv);
}  // namespace lb
