// Real processes for integration tests: spawn a built binary (lb, lb-origin) or a stock
// client (curl, redis-cli), wait for it to come up with a bounded deadline, and make sure it
// is gone when the test ends. Test-thread only; nothing here is thread-safe.
//
// Typical use:
//   lb::test::Process origin({lb::test::builtBinary("lb-origin"), "--listen",
//                             "127.0.0.1:0", "--name", "a"});
//   auto port = origin.waitForListeningPort("listening on");
//   ASSERT_TRUE(port) << origin.output();
//   auto r = lb::test::runCommand({"curl", "-s", lb::test::localUrl(*port, "/")});
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lb::test {

using namespace std::chrono_literals;
using Millis = std::chrono::milliseconds;

// Path of a binary built next to the running test binary: dirname(/proc/self/exe)/../NAME, so
// build-san/tests/integration_tests finds build-san/lb-origin. Does not check it exists.
std::string builtBinary(std::string_view name);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read, closed). Racy by
// nature: prefer starting a server on port 0 and reading the port it reports
// (Process::waitForListeningPort); use this only where a server cannot report its port.
uint16_t freePort();

// "http://127.0.0.1:PORT/path".
std::string localUrl(uint16_t port, std::string_view path = "/");

// True once something accepts a TCP connection on 127.0.0.1:port, false at the deadline.
bool waitForPort(uint16_t port, Millis timeout = 5s);

// A child process whose stdout and stderr go, interleaved, to a private temporary file that
// the test can read at any time (no pipe to fill up and block the child). The child gets
// SIGKILL if the test process dies (PR_SET_PDEATHSIG), so a crashing test leaves no orphans.
class Process {
 public:
  // Spawns argv[0] (looked up in PATH when it has no '/') with stdin from /dev/null. A spawn
  // failure (no such binary) shows as a child that exits 127 at once: check running() or
  // the result of a wait.
  explicit Process(std::vector<std::string> argv);
  // Sends SIGKILL if the child still runs, reaps it, removes the output file.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // False once the child has exited (reaps it and records the status).
  bool running();
  // Everything the child wrote to stdout and stderr so far.
  std::string output() const;

  // Waits until output() contains needle; false at the deadline or when the child exits
  // first.
  bool waitForOutput(std::string_view needle, Millis timeout = 5s);
  // Waits for a line containing `needle` followed by "HOST:PORT" (lb-origin prints
  // "lb-origin NAME listening on 127.0.0.1:PORT") and returns PORT, or nullopt at the
  // deadline or when the child exits first.
  std::optional<uint16_t> waitForListeningPort(std::string_view needle = "listening on",
                                               Millis timeout = 5s);

  // Sends sig (if the child still runs) and waits up to `timeout` for it to exit. Returns its
  // exit code, 128+N when killed by signal N, or nullopt if it still runs at the deadline (it
  // is then left running; the destructor will SIGKILL it).
  std::optional<int> stop(int sig = 15 /* SIGTERM */, Millis timeout = 5s);
  // Waits up to `timeout` for the child to exit by itself; same result as stop().
  std::optional<int> waitExit(Millis timeout = 5s);

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string out_path_;
};

struct CommandResult {
  int exit_code = -1;        // 128+N when killed by signal N; -1 when it could not be waited
  bool timed_out = false;    // killed at the deadline
  std::string out;           // stdout
  std::string err;           // stderr
};

// Runs argv to completion, capturing stdout and stderr, feeding `stdin_data` on stdin. Killed
// (SIGKILL) at the deadline, which shows as timed_out. For stock clients: curl, redis-cli.
CommandResult runCommand(const std::vector<std::string>& argv, Millis timeout = 10s,
                         std::string_view stdin_data = {});

}  // namespace lb::test
