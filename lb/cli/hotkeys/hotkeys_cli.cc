#include "lb/cli/hotkeys/hotkeys_cli.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "lb/cli/hotkeys/admin_client.h"
#include "lb/cli/hotkeys/hotkeys_view.h"
#include "lb/core/strings.h"

namespace lb {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
// One fetch, connect included: a live admin answers /hotkeys in microseconds.
constexpr Duration kFetchTimeout{2000};
// Of an error body shown to the operator.
constexpr size_t kMaxShownBody = 200;

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_resized = 0;

void onStop(int) { g_stop = 1; }
void onResize(int) { g_resized = 1; }

int usage(const std::string& error) {
  fprintf(stderr, "lb hotkeys: %s\n%s", error.c_str(), hotkeysUsage());
  return kExitUsage;
}

// One GET and its reading: the clusters, or why not in one line.
std::optional<std::vector<HotKeysCluster>> fetch(const HotkeysOptions& o, std::string* error) {
  AdminReply reply;
  const std::string target = hotkeysTarget(o);
  if (!adminGet(o.admin, target, kFetchTimeout, &reply, error)) return std::nullopt;
  if (reply.status != 200) {
    std::string body = reply.body.substr(0, kMaxShownBody);
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
    *error = o.admin + target + " answered " + std::to_string(reply.status) +
             (body.empty() ? "" : ": " + escapeKey(body));
    // An lb older than the hot-key support has no /hotkeys; one without the cluster asked says so.
    if (reply.status == 404 && body.find("hotkeys") == std::string::npos)
      *error += " (an lb without /hotkeys? it came with hot-key detection)";
    return std::nullopt;
  }
  std::string why;
  auto clusters = parseHotKeysReply(reply.body, &why);
  if (!clusters) {
    *error = o.admin + target + " did not answer the /hotkeys JSON expected: " + why;
    return std::nullopt;
  }
  return clusters;
}

int64_t unixNow() { return static_cast<int64_t>(time(nullptr)); }

struct TermSize {
  size_t cols = 0, rows = 0;
};

TermSize terminalSize(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return {};
  return {ws.ws_col, ws.ws_row};
}

bool writeAll(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(STDOUT_FILENO, s.data() + off, s.size() - off);
    if (n > 0) off += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR) continue;
    else return false;
  }
  return true;
}

// The screen and keyboard as `top` takes them: the alternate screen (the shell's screen comes
// back on exit), no cursor, keys read one at a time without echo. The destructor puts back
// exactly what the constructor changed, on every way out of the loop.
class TerminalSession {
 public:
  TerminalSession() {
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      // ISIG stays on: Ctrl-C is SIGINT, handled like q.
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_termios_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    writeAll("\x1b[?1049h\x1b[?25l");
  }
  ~TerminalSession() {
    writeAll("\x1b[?25h\x1b[?1049l");
    if (restore_termios_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  TerminalSession(const TerminalSession&) = delete;
  TerminalSession& operator=(const TerminalSession&) = delete;

 private:
  termios saved_{};
  bool restore_termios_ = false;
};

class SignalsForView {
 public:
  SignalsForView() {
    install(SIGINT, onStop, &int_);
    install(SIGTERM, onStop, &term_);
    install(SIGHUP, onStop, &hup_);
    install(SIGWINCH, onResize, &winch_);
  }
  ~SignalsForView() {
    sigaction(SIGINT, &int_, nullptr);
    sigaction(SIGTERM, &term_, nullptr);
    sigaction(SIGHUP, &hup_, nullptr);
    sigaction(SIGWINCH, &winch_, nullptr);
  }
  SignalsForView(const SignalsForView&) = delete;
  SignalsForView& operator=(const SignalsForView&) = delete;

 private:
  static void install(int sig, void (*handler)(int), struct sigaction* old) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;   // no SA_RESTART: poll() returns EINTR and the loop looks at the flags
    sigaction(sig, &sa, old);
  }
  struct sigaction int_ {}, term_ {}, hup_ {}, winch_ {};
};

std::string clockText(int64_t now) {
  const time_t t = static_cast<time_t>(now);
  tm local{};
  localtime_r(&t, &local);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
}

// One screen: the status line, a blank line, the table cut to the terminal; each line
// cleared to its end and the rest of the screen below, so nothing of the last frame stays.
std::string frame(const HotkeysOptions& o, const std::vector<HotKeysCluster>& clusters,
                  const std::string& problem, TermSize size) {
  const int64_t now = unixNow();
  std::string status = "lb hotkeys  " + o.admin + "  " + clockText(now) + "  every " +
                       formatDuration(o.interval) + "  q to quit";
  if (!problem.empty()) status += "  [refresh failed: " + problem + "]";
  HotKeysDrawOptions d;
  d.now = now;
  d.width = size.cols;
  if (size.rows > 0) {
    // The status line and a blank line; per cluster a header, the column titles and a blank
    // line between clusters. When every row fits, no cluster is cut; else each gets an equal
    // share, less one line for its "... N more".
    const size_t n = std::max<size_t>(clusters.size(), 1);
    size_t needed = 2 + 3 * n;
    for (const auto& c : clusters) needed += c.keys.size();
    const size_t fixed = 2 + 4 * n;
    if (needed > size.rows)
      d.max_rows = size.rows > fixed ? std::max<size_t>(1, (size.rows - fixed) / n) : 1;
  }
  std::string body = status + "\n\n" + drawHotKeys(clusters, d);
  std::string out = "\x1b[H";
  size_t lines = 0;
  size_t start = 0;
  while (start < body.size() && (size.rows == 0 || lines < size.rows)) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    std::string line = body.substr(start, end - start);
    if (size.cols > 0 && line.size() > size.cols) line.resize(size.cols);
    // No newline after the last row of a full screen: it would scroll the first line away.
    out += line + "\x1b[K";
    ++lines;
    if (size.rows == 0 || lines < size.rows) out += "\r\n";
    start = end + 1;
  }
  return out + "\x1b[J";
}

// Waits until the next refresh is due, a key was pressed or a signal came. True to go on,
// false to quit (q, Ctrl-C, TERM, HUP).
bool waitTurn(std::chrono::steady_clock::time_point due, bool* keyboard, bool* redraw) {
  for (;;) {
    if (g_stop) return false;
    if (g_resized) {
      g_resized = 0;
      *redraw = true;
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        due - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    pollfd p{*keyboard ? STDIN_FILENO : -1, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char keys[64];
    const ssize_t got = read(STDIN_FILENO, keys, sizeof keys);
    if (got <= 0) {
      // stdin at its end (or gone): only the interval and signals wake the loop now.
      if (got == 0 || (errno != EINTR && errno != EAGAIN)) *keyboard = false;
      continue;
    }
    for (ssize_t i = 0; i < got; ++i)
      if (keys[i] == 'q' || keys[i] == 'Q') return false;
  }
}

int watch(const HotkeysOptions& o, std::vector<HotKeysCluster> clusters) {
  g_stop = 0;
  g_resized = 0;
  SignalsForView signals;
  TerminalSession terminal;
  bool keyboard = isatty(STDIN_FILENO) != 0;
  std::string problem;
  auto due = std::chrono::steady_clock::now() + o.interval;
  for (;;) {
    writeAll(frame(o, clusters, problem, terminalSize(STDOUT_FILENO)));
    bool redraw = false;
    if (!waitTurn(due, &keyboard, &redraw)) break;
    if (redraw) continue;
    due = std::chrono::steady_clock::now() + o.interval;
    std::string error;
    if (auto fresh = fetch(o, &error)) {
      clusters = std::move(*fresh);
      problem.clear();
    } else {
      problem = error;
    }
  }
  return kExitOk;
}

bool parseInterval(const std::string& text, Duration* out, std::string* error) {
  std::string why;
  Duration d{0};
  if (!parseDuration(text, &d, &why)) {
    *error = "--interval: " + why;
    return false;
  }
  if (d < kMinHotkeysInterval) {
    *error = "--interval: must be at least " + formatDuration(kMinHotkeysInterval) + ", got '" +
             text + "'";
    return false;
  }
  *out = d;
  return true;
}

}  // namespace

const char* hotkeysUsage() {
  return "usage: lb hotkeys --admin HOST:PORT [--cluster C] [--interval 1s] [--once]\n"
         "  the hottest keys of each cluster, from lb's admin GET /hotkeys, like top:\n"
         "  rank, key (escaped), requests/s, its lower bound, share of the cluster,\n"
         "  owner, the hosts serving it, how long it has been hot\n"
         "  --admin HOST:PORT  lb's admin.listen (e.g. 127.0.0.1:9901)\n"
         "  --cluster C        one cluster (default: every cluster)\n"
         "  --interval D       refresh period on a terminal (default 1s, at least 100ms)\n"
         "  --once             print one table and exit (also when stdout is not a\n"
         "                     terminal)\n"
         "  on a terminal: q or Ctrl-C quits\n"
         "  exit: 0 done, 1 admin unreachable or not the expected JSON, 2 usage\n";
}

std::string hotkeysTarget(const HotkeysOptions& o) {
  return o.cluster.empty() ? "/hotkeys" : "/hotkeys?cluster=" + percentEncode(o.cluster);
}

std::optional<HotkeysOptions> parseHotkeysArgs(std::span<char* const> args, std::string& error) {
  HotkeysOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    const bool has_value = splitLongOption(&arg, &value);
    auto takeValue = [&] { return takeOptionValue(args, &i, has_value, arg, &value, &error); };
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "--admin") {
      if (!takeValue()) return std::nullopt;
      if (value.empty()) {
        error = "--admin: give lb's admin address, HOST:PORT";
        return std::nullopt;
      }
      o.admin = value;
    } else if (arg == "--cluster") {
      if (!takeValue()) return std::nullopt;
      if (value.empty()) {
        error = "--cluster: must not be empty (leave it out for every cluster)";
        return std::nullopt;
      }
      o.cluster = value;
    } else if (arg == "--interval") {
      if (!takeValue() || !parseInterval(value, &o.interval, &error)) return std::nullopt;
    } else if (arg == "--once") {
      if (has_value) {
        error = "--once takes no value";
        return std::nullopt;
      }
      o.once = true;
    } else if (arg.rfind("-", 0) == 0 && arg.size() > 1) {
      error = "unknown option '" + arg + "'";
      return std::nullopt;
    } else {
      error = "unexpected argument '" + arg + "'";
      return std::nullopt;
    }
  }
  if (o.help) return o;
  if (o.admin.empty()) {
    error = "--admin HOST:PORT is required (lb's admin.listen, e.g. 127.0.0.1:9901)";
    return std::nullopt;
  }
  return o;
}

int runHotkeys(int argc, char** argv) {
  std::string error;
  const auto o = parseHotkeysArgs(std::span<char* const>(argv, static_cast<size_t>(argc)), error);
  if (!o) return usage(error);
  if (o->help) {
    fputs(hotkeysUsage(), stdout);
    return kExitOk;
  }
  auto clusters = fetch(*o, &error);
  if (!clusters) {
    fprintf(stderr, "lb hotkeys: %s\n", error.c_str());
    return kExitFailure;
  }
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  if (o->once || !terminal) {
    HotKeysDrawOptions d;
    d.now = unixNow();
    d.width = terminal ? terminalSize(STDOUT_FILENO).cols : 0;
    fputs(drawHotKeys(*clusters, d).c_str(), stdout);
    return fflush(stdout) == 0 ? kExitOk : kExitFailure;
  }
  return watch(*o, std::move(*clusters));
}

}  // namespace lb
