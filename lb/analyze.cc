#include "lb/analyze.h"

#include <cstdio>

namespace lb {
int runAnalyze(int, char**) {   // placeholder until the analyze work lands
  fprintf(stderr, "lb analyze: not built yet\n");
  return 2;
}
}  // namespace lb
