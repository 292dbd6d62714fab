// `lb hotkeys` (docs/operations.md, "Watching hot keys"): the terminal view of the admin's
// GET /hotkeys. main() hands it the arguments after
// "hotkeys".
//
//   lb hotkeys --admin HOST:PORT [--cluster C] [--interval 1s] [--once]
//
// On a terminal it redraws like top every interval until q, Ctrl-C or SIGTERM, and puts the
// terminal back as it found it; with --once, or when stdout is not a terminal (a pipe, a
// file, a script), it prints one table and exits. Without --cluster it asks /hotkeys for
// every cluster and shows each.
//
// Exit codes: 0 done; 1 the admin could not be reached at the first fetch, answered other
// than 200, or with something that is not the JSON the design describes; 2 usage. Once the
// view is up, a failed refresh keeps the last table and says why on its status line (lb
// restarting should not close the operator's view).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "lb/core/duration.h"

namespace lb {

struct HotkeysOptions {
  bool help = false;
  std::string admin;            // HOST:PORT of lb's admin server
  std::string cluster;          // "" = every cluster
  Duration interval{1000};
  bool once = false;
};

// A refresh more often than this would only measure the tool: the summaries are merged
// about once a second.
inline constexpr Duration kMinHotkeysInterval{100};

// The arguments after "hotkeys" ("--opt value" or "--opt=value"). nullopt with `error` (one
// line naming the argument) on a usage error.
std::optional<HotkeysOptions> parseHotkeysArgs(std::span<char* const> args, std::string& error);

const char* hotkeysUsage();

// The admin path the view GETs: "/hotkeys?cluster=C", or "/hotkeys" for every cluster.
std::string hotkeysTarget(const HotkeysOptions& options);

// argv holds the arguments after "hotkeys". Returns the process exit code.
int runHotkeys(int argc, char** argv);

}  // namespace lb
