// The config tests' one question of the loader: what errors does this TOML text give, each
// formatted as lb prints it ("lb.toml:3:7: listeners.web.h2: ..."), none when it loads.
#pragma once

#include <string>
#include <vector>

#include "lb/config/config.h"

namespace lb::test {

inline std::vector<std::string> errorsOf(const std::string& toml) {
  auto r = loadConfigString(toml, "lb.toml");
  std::vector<std::string> got;
  if (!r.ok())
    for (const auto& e : r.errors()) got.push_back(e.format());
  return got;
}

}  // namespace lb::test
