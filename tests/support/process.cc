// Process spawning for integration tests: fork/exec with output to temporary files, bounded
// waits by polling (each poll sleeps a few milliseconds; every wait has a deadline).
#include "tests/support/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <deque>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

namespace lb::test {
namespace {

constexpr Millis kPollInterval{5};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh empty file under $TMPDIR (or /tmp); returns its path, or "" on failure.
std::string makeTempFile(const char* tag) {
  const char* dir = getenv("TMPDIR");
  std::string templ = std::string(dir && *dir ? dir : "/tmp") + "/lb-test-" + tag + "-XXXXXX";
  int fd = mkstemp(templ.data());
  if (fd < 0) return "";
  close(fd);
  return templ;
}

int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// fork + exec with the given files as stdin/stdout/stderr (empty path = /dev/null; the same
// path for out and err means interleaved). Returns the child's pid, or -1.
pid_t spawn(const std::vector<std::string>& argv, const std::string& in_path,
            const std::string& out_path, const std::string& err_path) {
  if (argv.empty()) return -1;
  // Everything the child needs is prepared before fork: after fork only async-signal-safe
  // calls, since the test process may have other threads.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const char* in = in_path.empty() ? "/dev/null" : in_path.c_str();
  const char* out = out_path.empty() ? "/dev/null" : out_path.c_str();
  const char* err = err_path.empty() ? "/dev/null" : err_path.c_str();
  bool same = out_path == err_path;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);   // the parent died before prctl took effect
  int in_fd = open(in, O_RDONLY);
  int out_fd = open(out, O_WRONLY | O_APPEND);
  int err_fd = same ? out_fd : open(err, O_WRONLY | O_APPEND);
  if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(127);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  // The test binary's other descriptors (sockets of the test) must not leak into the child.
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  execvp(args[0], args.data());
  _exit(127);
}

// Polls waitpid until the child exits or the deadline passes.
std::optional<int> reap(pid_t pid, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return decodeStatus(status);
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace

std::string builtBinary(std::string_view name) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("./x");
  std::string dir = self.substr(0, self.rfind('/'));
  return dir + "/../" + std::string(name);
}

namespace {

// Another test process (a gtest shard beside this one) may probe the same port between this
// probe's close and the bind of the server it is for, and lb binds its listeners with
// SO_REUSEPORT, so two lbs of one user would share the port without an error and the kernel
// would hand each one connections meant for the other. A claim every test process sees: an
// abstract unix socket named for the port (no file to clean up; it goes with the process).
// -1 when another process holds it.
int claimPort(uint16_t port) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = "lb-test-port-" + std::to_string(port);
  memcpy(a.sun_path + 1, name.data(), name.size());   // sun_path[0] == 0: abstract
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// The kernel may offer a port again as soon as the probe socket below is closed, so two
// calls in a row can return the same port and a config that needs several (lb's listeners and
// its admin) would collide with itself. Ports handed out lately by this process are skipped,
// and so are those another test process claimed (claimPort): each claim is held while its
// port is among this process's last 512.
uint16_t freePort() {
  static std::mutex mu;
  static std::deque<std::pair<uint16_t, int>> recent;   // the port and its claim
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof(a);
    uint16_t port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    close(fd);
    if (port == 0) return 0;
    std::lock_guard<std::mutex> lock(mu);
    if (std::find_if(recent.begin(), recent.end(),
                     [&](const auto& r) { return r.first == port; }) != recent.end())
      continue;
    const int claim = claimPort(port);
    if (claim < 0) continue;
    recent.emplace_back(port, claim);
    if (recent.size() > 512) {
      close(recent.front().second);
      recent.pop_front();
    }
    return port;
  }
  return 0;
}

std::string localUrl(uint16_t port, std::string_view path) {
  return "http://127.0.0.1:" + std::to_string(port) + std::string(path);
}

bool waitForPort(uint16_t port, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

Process::Process(std::vector<std::string> argv) {
  out_path_ = makeTempFile("out");
  pid_ = out_path_.empty() ? -1 : spawn(argv, "", out_path_, out_path_);
  if (pid_ < 0) exit_code_ = -1;
}

Process::~Process() {
  if (pid_ > 0 && !exit_code_) {
    kill(pid_, SIGKILL);
    reap(pid_, 10s);
  }
  if (!out_path_.empty()) unlink(out_path_.c_str());
}

bool Process::running() {
  if (exit_code_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_code_ = decodeStatus(status);
  else if (r < 0 && errno != EINTR) exit_code_ = -1;
  return !exit_code_;
}

std::string Process::output() const { return out_path_.empty() ? "" : readFile(out_path_); }

bool Process::waitForOutput(std::string_view needle, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (output().find(needle) != std::string::npos) return true;
    // Check the output once more after an exit: the last line may have just landed.
    if (!running()) return output().find(needle) != std::string::npos;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::optional<uint16_t> Process::waitForListeningPort(std::string_view needle, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string out = output();
    size_t at = out.find(needle);
    size_t eol = at == std::string::npos ? at : out.find('\n', at);
    if (eol != std::string::npos) {
      // "... listening on 127.0.0.1:PORT" or "[::1]:PORT": the digits after the last ':'.
      std::string line = out.substr(at, eol - at);
      size_t colon = line.rfind(':');
      if (colon != std::string::npos) {
        long port = strtol(line.c_str() + colon + 1, nullptr, 10);
        if (port > 0 && port < 65536) return static_cast<uint16_t>(port);
      }
      return std::nullopt;
    }
    if (!running() || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::optional<int> Process::stop(int sig, Millis timeout) {
  if (running()) kill(pid_, sig);
  return waitExit(timeout);
}

std::optional<int> Process::waitExit(Millis timeout) {
  if (exit_code_) return exit_code_;
  auto code = reap(pid_, timeout);
  if (code) exit_code_ = code;
  return code;
}

CommandResult runCommand(const std::vector<std::string>& argv, Millis timeout,
                         std::string_view stdin_data) {
  CommandResult result;
  std::string out = makeTempFile("cmd-out"), err = makeTempFile("cmd-err");
  std::string in;
  if (!stdin_data.empty()) {
    in = makeTempFile("cmd-in");
    std::ofstream(in, std::ios::binary).write(stdin_data.data(),
                                               static_cast<std::streamsize>(stdin_data.size()));
  }
  pid_t pid = (out.empty() || err.empty()) ? -1 : spawn(argv, in, out, err);
  if (pid > 0) {
    auto code = reap(pid, timeout);
    if (!code) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      code = reap(pid, 10s);
    }
    result.exit_code = code.value_or(-1);
  }
  result.out = readFile(out);
  result.err = readFile(err);
  for (const auto& p : {out, err, in})
    if (!p.empty()) unlink(p.c_str());
  return result;
}

}  // namespace lb::test
