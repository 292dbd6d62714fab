// Files of the source tree for tests that read or run them (docs, conf/, the Makefile):
// <build>/tests/<test binary> -> <build>/.. is the tree, for ./build, ./build-san and any
// `make BUILD=build-foo` inside it.
#pragma once

#include <limits.h>
#include <stdlib.h>

#include <string>

#include "tests/support/process.h"

namespace lb::test {

// Absolute, without "..": systemd and make want clean paths.
inline std::string repoFile(const std::string& rel) {
  std::string joined = builtBinary("../" + rel);
  char resolved[PATH_MAX];
  return realpath(joined.c_str(), resolved) ? std::string(resolved) : joined;
}

// The built binary NAME as an absolute path without "..".
inline std::string builtBinaryPath(const std::string& name) {
  std::string joined = builtBinary(name);
  char resolved[PATH_MAX];
  return realpath(joined.c_str(), resolved) ? std::string(resolved) : joined;
}

}  // namespace lb::test
