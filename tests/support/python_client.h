// Scripts run with the client libraries applications use, Debian's python3-pymemcache and
// python3-redis, against lb. Test-thread only.
#pragma once

#include <cstdint>
#include <string>

#include "tests/support/process.h"

namespace lb::test {

// Runs `script` with Debian's python (the one python3-pymemcache and python3-redis are for),
// PORT in it replaced by `port`.
inline CommandResult runPython(std::string script, uint16_t port) {
  for (size_t at; (at = script.find("PORT")) != std::string::npos;)
    script.replace(at, 4, std::to_string(port));
  return runCommand({"/usr/bin/python3", "-c", script}, 120s);
}

}  // namespace lb::test
