// lb's own command line (docs/operations.md, "Command line"), parsed with getopt_long into a
// plain struct before anything runs. The spellings are the ones nginx and HAProxy users type
// (`-t` to test a file, `-c FILE`), next to the long ones lb always had:
//
//   lb [-t] -c FILE       run on FILE, or with -t only validate it
//   lb -v | -h            version, help
//   lb analyze ...        a subcommand with its own options (lb/cli/analyze/analyze_options.h); main()
//                         hands it over before this parser sees anything
//   lb membership ...     likewise (lb/cli/membership/membership_cli.h)
//   lb hotkeys ...        likewise (lb/cli/hotkeys/hotkeys_cli.h)
#pragma once

#include <string>

namespace lb {

struct CommandLine {
  enum class Action { kRun, kCheck, kVersion, kHelp, kUsageError };
  Action action = Action::kUsageError;
  std::string config_path;
  std::string error;   // kUsageError: one line naming what is wrong
};

// Main thread, once, before anything else (getopt_long keeps global state; this resets it,
// so tests may call it repeatedly). argv[0] is the program name. Never prints.
CommandLine parseCommandLine(int argc, char** argv);

// The one-line synopsis printed on stderr after a usage error.
const char* usageText();
// `lb --help`: the flags, signals, admin endpoints, files and exit codes.
const char* helpText();

// Exit codes, as `lb --help` lists them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // bad config, or failed to start
inline constexpr int kExitUsage = 2;

}  // namespace lb
