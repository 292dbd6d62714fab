#include "lb/server.h"

#include <cstdio>

namespace lb {
int runServer(const std::string&) {   // placeholder until the proxy work lands
  fprintf(stderr, "lb: proxy not built yet\n");
  return 2;
}
}  // namespace lb
