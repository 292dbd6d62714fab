// lb's command line (lb/app/command_line.h; docs/operations.md, "Command line"). Exceptions
// stop here.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "lb/cli/analyze/analyze.h"
#include "lb/cli/simulate/simulate.h"
#include "lb/app/command_line.h"
#include "lb/cli/hotkeys/hotkeys_cli.h"
#include "lb/cli/membership/membership_cli.h"
#include "lb/cli/upgrade/upgrade_cli.h"
#include "lb/app/resolver.h"
#include "lb/app/tls_setup.h"
#include "lb/app/worker_group.h"
#include "lb/config/config.h"

namespace {

int check(const std::string& path) {
  lb::BlockingResolver resolver;   // a backend name that does not resolve is an error here too
  auto config = lb::loadConfigFile(path, &resolver);
  lb::Errors warnings;
  lb::Errors errors = config.ok() ? lb::checkServes(config.value(), &warnings) : config.errors();
  if (config.ok()) {
    lb::Errors tls = lb::checkTls(config.value());
    errors.insert(errors.end(), tls.begin(), tls.end());
  }
  for (const auto& w : warnings) fprintf(stderr, "%s\n", w.format().c_str());
  if (!errors.empty()) {
    for (const auto& e : errors) fprintf(stderr, "%s\n", e.format().c_str());
    fprintf(stderr, "%s: %zu error%s\n", path.c_str(), errors.size(),
            errors.size() == 1 ? "" : "s");
    return lb::kExitFailure;
  }
  printf("%s: ok\n", path.c_str());
  return lb::kExitOk;
}

int run(int argc, char** argv) {
  lb::setListenerTlsBuilder(lb::buildListenerTls);
  lb::setClusterTlsBuilder(lb::buildClusterTls);
  if (argc >= 2 && strcmp(argv[1], "analyze") == 0) return lb::runAnalyze(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "simulate") == 0) return lb::runSimulate(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "membership") == 0)
    return lb::runMembership(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "hotkeys") == 0) return lb::runHotkeys(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "upgrade") == 0) return lb::runUpgrade(argc - 2, argv + 2);
  const lb::CommandLine cl = lb::parseCommandLine(argc, argv);
  switch (cl.action) {
    case lb::CommandLine::Action::kHelp:
      fputs(lb::helpText(), stdout);
      return lb::kExitOk;
    case lb::CommandLine::Action::kVersion:
      printf("lb %s\n", LB_VERSION);
      return lb::kExitOk;
    case lb::CommandLine::Action::kCheck:
      return check(cl.config_path);
    case lb::CommandLine::Action::kRun:
      return lb::runServer(cl.config_path);
    case lb::CommandLine::Action::kUsageError:
      break;
  }
  fprintf(stderr, "lb: %s\n%s", cl.error.c_str(), lb::usageText());
  return lb::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fprintf(stderr, "lb: fatal: %s\n", e.what());
    return lb::kExitFailure;
  }
}
