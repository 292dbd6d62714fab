// A byte-level pass over a config before toml++ parses it, rejecting the few inputs on which
// the toml++ 3.3 of Debian 12 runs into undefined behaviour (found by tests/fuzz/config_fuzz.cc;
// upstream marzer/tomlplusplus #190, #294, #295). The shipped build happens to report a parse
// error for each, but UB is not a contract, so lb does not lean on it.
//
// Every input rejected here is invalid TOML 1.0 except one: a multi-line basic string whose
// line-ending backslash is followed by a non-ASCII character on the next line (#190).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lb/core/result.h"

namespace lb {

struct PrescanError {
  SourcePos pos;          // columns count code points, as toml++ counts them
  std::string message;
};

// Returns the first problem, or nullopt when toml++ may parse `text`. Pure; linear time.
std::optional<PrescanError> prescanToml(std::string_view text);

}  // namespace lb
