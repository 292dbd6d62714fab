#include "lb/cli/upgrade/upgrade_cli.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <thread>

#include "lb/upgrade/upgrade_channel.h"
#include "lb/core/duration.h"
#include "lb/core/strings.h"

namespace lb {

namespace {

constexpr char kUsage[] = "usage: lb upgrade --pid PID [--timeout 90s]\n";
// A little over the running lb's own wait for its new process (Upgrade::kReadyTimeoutMs), so
// that its verdict, not this command's impatience, is what the operator reads.
constexpr Duration kDefaultTimeout{90000};
constexpr auto kPoll = std::chrono::milliseconds(50);

// PID's environment, as /proc/PID/environ holds it (readable by the same user only).
bool processEnvironment(pid_t pid, std::map<std::string, std::string>* env) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) (*env)[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return true;
}

// Whether PID runs an lb: its comm is "lb" (what lb's binary is called wherever installed).
bool isLb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm == "lb";
}

}  // namespace

int runUpgrade(int argc, char** argv) {
  std::span<char* const> args(argv, static_cast<size_t>(argc));
  long pid = 0;
  Duration timeout = kDefaultTimeout;
  std::string error;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    const bool has_value = splitLongOption(&arg, &value);
    if (arg == "-h" || arg == "--help") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (arg != "--pid" && arg != "--timeout") {
      fprintf(stderr, "lb upgrade: unexpected argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
    if (!takeOptionValue(args, &i, has_value, arg, &value, &error)) {
      fprintf(stderr, "lb upgrade: %s\n%s", error.c_str(), kUsage);
      return 2;
    }
    if (arg == "--pid") {
      char* end = nullptr;
      pid = strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || pid <= 1) {
        fprintf(stderr, "lb upgrade: --pid: '%s' is not a process id\n%s", value.c_str(), kUsage);
        return 2;
      }
    } else if (!parseDuration(value, &timeout, &error) || timeout.count() <= 0) {
      fprintf(stderr, "lb upgrade: --timeout: %s\n%s",
              error.empty() ? "must be above 0" : error.c_str(), kUsage);
      return 2;
    }
  }
  if (pid == 0) {
    fprintf(stderr, "lb upgrade: --pid PID is required (the running lb: systemctl show -p "
                    "MainPID --value lb)\n%s", kUsage);
    return 2;
  }
  std::map<std::string, std::string> env;
  if (!isLb(static_cast<pid_t>(pid)) || !processEnvironment(static_cast<pid_t>(pid), &env)) {
    fprintf(stderr, "lb upgrade: pid %ld is not an lb this user can upgrade\n", pid);
    return 1;
  }
  const std::string dir = upgradeDirFor(
      static_cast<pid_t>(pid), upgradeRuntimeDir([&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      }));
  // The running lb refuses a directory someone else planted, and could then write no outcome
  // into it: say so now rather than wait out the timeout.
  struct stat dir_st{}, proc_st{};
  if (lstat(dir.c_str(), &dir_st) == 0 &&
      (stat(("/proc/" + std::to_string(pid)).c_str(), &proc_st) != 0 || !S_ISDIR(dir_st.st_mode) ||
       dir_st.st_uid != proc_st.st_uid || (dir_st.st_mode & 077) != 0)) {
    fprintf(stderr, "lb upgrade: %s is not a directory of the lb's user with mode 0700; the lb "
                    "refuses to hand over through it (remove it)\n", dir.c_str());
    return 1;
  }
  const std::string result = dir + "/result";
  unlink(result.c_str());   // an earlier attempt's
  if (kill(static_cast<pid_t>(pid), SIGUSR2) != 0) {
    fprintf(stderr, "lb upgrade: cannot signal pid %ld: %s\n", pid, strerror(errno));
    return 1;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(result);
    std::string line;
    if (in && std::getline(in, line)) {
      unlink(result.c_str());
      rmdir(dir.c_str());   // the running lb removed its socket already; empty now
      const bool ok = line.rfind("ok:", 0) == 0;
      fprintf(ok ? stdout : stderr, "lb upgrade: %s\n", line.c_str());
      return ok ? 0 : 1;
    }
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      fprintf(stderr, "lb upgrade: pid %ld ended without an outcome\n", pid);
      return 1;
    }
    std::this_thread::sleep_for(kPoll);
  }
  fprintf(stderr, "lb upgrade: no outcome from pid %ld within %s; see its log\n", pid,
          formatDuration(timeout).c_str());
  return 1;
}

}  // namespace lb
