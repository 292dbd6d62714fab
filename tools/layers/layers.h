// The direction of dependencies between lb's folders, checked from the `#include` lines
// (docs/architecture.md, "Layers"). A lower layer never includes a higher one; a protocol
// folder under lb/proxy/ never includes another. `make test` runs the check over the tree
// (tests/unit/tools/layers/layers_test.cc), so a wrong-way include fails the build's tests with the
// file, the line and the rule it breaks.
#pragma once

#include <string>
#include <vector>

namespace lb::layers {

struct Violation {
  std::string file;       // relative to the root, "lb/runtime/listener.cc"
  int line = 0;
  std::string included;   // "lb/proxy/http/http_session.h"
  std::string rule;       // "runtime may include core, plugins, config, routing, health, http"
};

// The layer a repository path belongs to ("core", "proxy/http", "tools/origin", ...), or ""
// for paths the rules do not cover (tests, bench, system headers).
std::string layerOf(const std::string& path);

// Whether code in layer `from` may include a header of layer `to`.
bool mayInclude(const std::string& from, const std::string& to);

// The rule for `from`, as a reader would want it quoted in an error.
std::string ruleFor(const std::string& from);

// Every quoted #include of every .h/.cc under root/lb, root/plugins and root/tools that breaks
// the rules, in path order. Paths in the result are relative to root.
std::vector<Violation> checkTree(const std::string& root);

// Include cycles between files under root/lb, root/plugins and root/tools, where a .cc and
// its .h count as one unit ("lb/runtime/worker"): each cycle as its units in include order,
// the first repeated at the end ("a -> b -> a"). Two files that include each other, however
// indirectly, can only be understood together; layers alone do not forbid that.
std::vector<std::string> findCycles(const std::string& root);

// "FILE:LINE: includes X: RULE"
std::string describe(const Violation& v);

}  // namespace lb::layers
