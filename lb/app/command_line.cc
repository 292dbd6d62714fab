#include "lb/app/command_line.h"

#include <getopt.h>

namespace lb {

namespace {

// '+': stop at the first operand instead of permuting argv, so a stray word is reported as
// such. ':': a missing option argument returns ':' rather than '?', so the two errors read
// differently.
constexpr char kShortOptions[] = "+:c:tvh";

constexpr option kLongOptions[] = {
    {"config", required_argument, nullptr, 'c'},
    {"check", no_argument, nullptr, 't'},
    {"version", no_argument, nullptr, 'v'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

CommandLine usageError(std::string message) {
  CommandLine cl;
  cl.action = CommandLine::Action::kUsageError;
  cl.error = std::move(message);
  return cl;
}

}  // namespace

CommandLine parseCommandLine(int argc, char** argv) {
  optind = 0;    // glibc: 0 re-initialises the scan (tests parse more than once)
  opterr = 0;    // errors are ours to word, and main() decides where they go
  bool check = false, version = false, help = false;
  std::string config;
  bool have_config = false;
  for (;;) {
    int c = getopt_long(argc, argv, kShortOptions, kLongOptions, nullptr);
    if (c == -1) break;
    switch (c) {
      case 'c':
        config = optarg;
        have_config = true;
        break;
      case 't':
        check = true;
        break;
      case 'v':
        version = true;
        break;
      case 'h':
        help = true;
        break;
      case ':':
        return usageError("option '" + std::string(argv[optind - 1]) + "' needs a FILE");
      default:   // '?': an unknown option; optopt is its letter, 0 for a long one
        if (optopt != 0) return usageError("unknown option '-" + std::string(1, optopt) + "'");
        return usageError("unknown option '" + std::string(argv[optind - 1]) + "'");
    }
  }
  if (optind < argc) return usageError("unexpected argument '" + std::string(argv[optind]) + "'");

  CommandLine cl;
  if (help) {
    cl.action = CommandLine::Action::kHelp;
  } else if (version) {
    cl.action = CommandLine::Action::kVersion;
  } else if (!have_config || config.empty()) {
    return usageError(check ? "--check needs the file to check: -t -c FILE"
                            : "no config file: give -c FILE");
  } else {
    cl.action = check ? CommandLine::Action::kCheck : CommandLine::Action::kRun;
    cl.config_path = std::move(config);
  }
  return cl;
}

const char* usageText() {
  return "usage: lb [-t] -c FILE | lb analyze [options] | lb membership get|put|diff ... | "
         "lb hotkeys --admin HOST:PORT ... | lb upgrade --pid PID | lb -v | lb -h\n";
}

const char* helpText() {
  return "usage: lb [-t] -c FILE\n"
         "       lb analyze [options]      offline: how each selector balances and moves keys\n"
         "                                 (lb analyze --help)\n"
         "       lb simulate [options]     offline: what a scale or health event does to the\n"
         "                                 hit ratio and the database (lb simulate --help)\n"
         "       lb membership get|put|diff --etcd URL --key KEY [FILE]\n"
         "                                 a cluster's membership in etcd: show it, or\n"
         "                                 validate, diff and compare-and-swap a new one\n"
         "                                 (lb membership --help, docs/membership.md)\n"
         "       lb hotkeys --admin HOST:PORT [--cluster C] [--interval 1s] [--once]\n"
         "                                 each cluster's hottest keys, redrawn like top\n"
         "                                 (lb hotkeys --help)\n"
         "       lb upgrade --pid PID [--timeout 90s]\n"
         "                                 start the binary installed at the running lb's\n"
         "                                 path in its place, without losing a connection\n"
         "       lb -v | -h\n"
         "\n"
         "lb balances HTTP and TCP traffic over a cache fleet with consistent hashing.\n"
         "\n"
         "Options:\n"
         "  -c, --config FILE   the TOML config to run (docs/config.md)\n"
         "  -t, --check         only validate FILE: print every error as file:line:col, exit\n"
         "                      0 when it is good, 1 when not\n"
         "  -v, --version       print \"lb VERSION\" and exit\n"
         "  -h, --help          print this help and exit\n"
         "\n"
         "Signals:\n"
         "  HUP         reload FILE: validate it whole, then switch every worker to it; a\n"
         "              bad file logs every error and changes nothing. Reopens the access log.\n"
         "  TERM, INT   drain: stop accepting, /ready answers 503, let requests in flight\n"
         "              finish (at most lb.drain_timeout, default 30s), exit 0\n"
         "              a second TERM or INT during the drain stops at once (exit 0)\n"
         "  USR2        upgrade: start the binary at lb's own path, hand it every listening\n"
         "              socket and the health view, drain once it is ready (lb upgrade)\n"
         "\n"
         "Under systemd (Type=notify, conf/systemd/lb.service) lb reports READY=1 once its\n"
         "listeners and admin server accept, RELOADING=1 around a reload, STOPPING=1 on drain,\n"
         "MAINPID= of the new process after an upgrade. With LISTEN_FDS (socket activation,\n"
         "conf/systemd/lb.socket) lb serves on the sockets systemd passes.\n"
         "\n"
         "Admin endpoints (admin.listen, e.g. 127.0.0.1:9901):\n"
         "  /metrics                 Prometheus text format (docs/metrics.md)\n"
         "  /ready                   200, or 503 once a drain began\n"
         "  /backends                per backend: health, live load, cap, keyspace share\n"
         "  /ring?cluster=C&key=K    where key K goes in cluster C now, and why\n"
         "  /hotkeys?cluster=C       the cluster's hottest keys (lb hotkeys shows them)\n"
         "\n"
         "Files:\n"
         "  FILE                     the config, reread on HUP (installed: /etc/lb/lb.toml)\n"
         "  lb.access_log            one line per request or connection: a path (reopened on\n"
         "                           HUP), \"-\" for stdout, \"\" for none\n"
         "  stderr                   lb's own log (lb.log_level)\n"
         "\n"
         "Exit codes:\n"
         "  0  success: a finished drain, a good --check, --help, --version\n"
         "  1  bad config, or failed to start (a listener could not be bound)\n"
         "  2  usage error (unknown option, no -c FILE)\n"
         "\n"
         "Docs: docs/operations.md (running, reload, drain, troubleshooting), docs/config.md,\n"
         "docs/metrics.md, docs/selectors.md; installed under share/doc/lb.\n";
}

}  // namespace lb
