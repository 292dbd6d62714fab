// `lb upgrade` from a test: runs the real command against a running lb, reads which process
// serves afterwards, and makes sure every lb an upgrade started is gone when the test ends.
//
// An upgraded lb is the child of the lb it replaced, not of the test, so Process's
// PR_SET_PDEATHSIG does not reach it. The harness makes the test process a child subreaper:
// those lbs are re-parented to it when their parent exits, and it reaps and kills them.
// Their output goes where the first lb's went (they inherit its stdout and stderr), so the
// first Process's output() shows the whole chain.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {

struct UpgradeOutcome {
  int exit_code = -1;
  std::string out;     // stdout: "lb upgrade: ok: lb pid N serves ..."
  std::string err;     // stderr: "lb upgrade: failed: ..."
  pid_t new_pid = 0;   // N, when it succeeded
};

// Whether `pid` is gone: reaped here if it was this process's child (or re-parented to it),
// or a zombie or absent otherwise.
inline bool processGone(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

inline bool waitGone(pid_t pid, Millis timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!processGone(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class UpgradeHarness {
 public:
  UpgradeHarness() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~UpgradeHarness() {
    for (pid_t p : started_) {
      if (processGone(p)) continue;
      kill(p, SIGKILL);
      waitGone(p, 5s);
    }
  }
  UpgradeHarness(const UpgradeHarness&) = delete;
  UpgradeHarness& operator=(const UpgradeHarness&) = delete;

  // `lb upgrade --pid PID`; a new lb it names is killed at the end of the test.
  UpgradeOutcome upgrade(pid_t pid, Millis timeout = 30s) {
    CommandResult r = runCommand({builtBinary("lb"), "upgrade", "--pid", std::to_string(pid),
                                  "--timeout", std::to_string(timeout.count()) + "ms"},
                                 timeout + 5s);
    UpgradeOutcome o{r.exit_code, r.out, r.err, 0};
    const std::string kOk = "ok: lb pid ";
    if (size_t at = r.out.find(kOk); at != std::string::npos) {
      o.new_pid = static_cast<pid_t>(atoi(r.out.c_str() + at + kOk.size()));
      started_.push_back(o.new_pid);
    }
    return o;
  }

 private:
  std::vector<pid_t> started_;
};

}  // namespace lb::test
