// lb's command line (docs/operations.md, "Command line"). Exceptions stop here.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "lb/analyze/analyze.h"
#include "lb/config/config.h"
#include "lb/app/server.h"

namespace {

void usage(FILE* out) {
  fputs(
      "usage: lb --config FILE            run the proxy\n"
      "       lb --check --config FILE    validate FILE, print every error, exit 1 if any\n"
      "       lb analyze [options]        offline: balance and movement of each selector\n"
      "       lb analyze --config FILE --cluster NAME --key K [--key K2 ...]\n"
      "       lb --version\n",
      out);
}

int check(const std::string& path) {
  auto config = lb::loadConfigFile(path);
  if (!config.ok()) {
    for (const auto& e : config.errors()) fprintf(stderr, "%s\n", e.format().c_str());
    fprintf(stderr, "%s: %zu error%s\n", path.c_str(), config.errors().size(),
            config.errors().size() == 1 ? "" : "s");
    return 1;
  }
  printf("%s: ok\n", path.c_str());
  return 0;
}

int run(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "analyze") == 0) return lb::runAnalyze(argc - 2, argv + 2);
  std::string config;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--version") {
      printf("lb %s\n", LB_VERSION);
      return 0;
    } else if (a == "--check") {
      check_only = true;
    } else if (a == "--config" && i + 1 < argc) {
      config = argv[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      config = a.substr(9);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "lb: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (config.empty()) {
    usage(stderr);
    return 2;
  }
  return check_only ? check(config) : lb::runServer(config);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fprintf(stderr, "lb: fatal: %s\n", e.what());
    return 1;
  }
}
