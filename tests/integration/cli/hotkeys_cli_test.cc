// `lb hotkeys` as an operator runs it: the real build/lb binary against a small fake admin
// server on 127.0.0.1 (written here: it serves the design's /hotkeys JSON, a different
// answer for each request, and records what was asked), once through a pipe, and under
// tmux as a person at a terminal sees it: redrawn in place, q and Ctrl-C quit, the shell's
// screen comes back. Last, against a running lb with one hot key,
// which skips, saying why, until lb serves GET /hotkeys.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

struct HotkeysFakeReply {
  int status = 200;
  std::string body;
  bool chunked = false;   // Transfer-Encoding: chunked, in pieces of 7 bytes
};

// An HTTP/1.1 server on 127.0.0.1:0 on a thread of its own: reads each request's head,
// answers with reply(n, target) (n counts requests from 1) and closes the connection.
class HotkeysFakeAdmin {
 public:
  using Reply = std::function<HotkeysFakeReply(int n, const std::string& target)>;

  explicit HotkeysFakeAdmin(Reply reply, bool answer = true)
      : reply_(std::move(reply)), answer_(answer) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    if (pipe2(stop_, O_CLOEXEC) != 0) return;
    thread_ = std::thread([this] { serve(); });
  }
  ~HotkeysFakeAdmin() {
    if (thread_.joinable()) {
      (void)!write(stop_[1], "x", 1);
      thread_.join();
    }
    for (int fd : {listen_fd_, stop_[0], stop_[1]})
      if (fd >= 0) close(fd);
  }
  HotkeysFakeAdmin(const HotkeysFakeAdmin&) = delete;
  HotkeysFakeAdmin& operator=(const HotkeysFakeAdmin&) = delete;

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int requests() const { return count_.load(); }
  std::vector<std::string> targets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

 private:
  void serve() {
    std::vector<int> held;   // answer_ == false: accepted and never answered
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (poll(p, 2, -1) < 0) continue;
      if (p[1].revents) break;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      if (!answer_) {
        held.push_back(fd);
        continue;
      }
      handle(fd);
      close(fd);
    }
    for (int fd : held) close(fd);
  }

  void handle(int fd) {
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) return;
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t sp1 = in.find(' ');
    const size_t sp2 = in.find(' ', sp1 + 1);
    const std::string target = in.substr(sp1 + 1, sp2 - sp1 - 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      targets_.push_back(target);
    }
    const HotkeysFakeReply r = reply_(++count_, target);
    std::string out = "HTTP/1.1 " + std::to_string(r.status) +
                      " X\r\nContent-Type: application/json\r\nConnection: close\r\n";
    if (r.chunked) {
      out += "Transfer-Encoding: chunked\r\n\r\n";
      for (size_t at = 0; at < r.body.size(); at += 7) {
        const std::string piece = r.body.substr(at, 7);
        char size[16];
        snprintf(size, sizeof size, "%zx\r\n", piece.size());
        out += size + piece + "\r\n";
      }
      out += "0\r\n\r\n";
    } else {
      out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
    }
    size_t off = 0;
    while (off < out.size()) {
      const ssize_t n = write(fd, out.data() + off, out.size() - off);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  Reply reply_;
  bool answer_;
  int listen_fd_ = -1;
  int stop_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> count_{0};
  mutable std::mutex mu_;
  std::vector<std::string> targets_;
};

// The design's answer for cluster `name`; request n shows in the floor ("floor N.0 rps") and
// in user:1's rate, so a redraw is visible.
std::string clusterJson(const std::string& name, int n) {
  return R"({"cluster": ")" + name + R"(", "window_s": 1, "floor_rps": )" + std::to_string(n) +
         R"(, "keys": [
    {"key": "user:1", "hash_hex": "9f86d081884c7d65", "rps": )" + std::to_string(9000 + n) +
         R"(, "rps_lower": 8900.0, "share": 0.25, "owner": "cache-a",
     "serving": ["cache-a", "cache-c"], "hot_since": null},
    {"key": "evil\u001b[2J\u0007", "hash_hex": "01", "rps": 800.5, "rps_lower": 700.25,
     "share": 0.0225, "owner": "cache-b", "serving": ["cache-b"],
     "hot_since": "2020-01-01T00:00:00Z"}]})";
}

HotkeysFakeReply oneCluster(int n, const std::string& target) {
  if (target != "/hotkeys?cluster=cache") return {404, "no cluster\n"};
  return {200, clusterJson("cache", n)};
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

CommandResult hotkeys(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {builtBinary("lb"), "hotkeys"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, std::chrono::seconds(20));
}

TEST(HotkeysCliTest, OncePrintsTheTableInTheAdminsOrderWithEscapedKeys) {
  HotkeysFakeAdmin admin(oneCluster);
  ASSERT_NE(admin.port(), 0);
  const CommandResult r = hotkeys({"--admin", admin.address(), "--cluster", "cache", "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(admin.targets(), std::vector<std::string>{"/hotkeys?cluster=cache"});
  const std::vector<std::string> lines = linesOf(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0], "cluster cache  total ~36004.0 rps  floor 1.0 rps  window 1s  keys 2");
  EXPECT_EQ(lines[1],
            "  #  KEY                 RPS   LOWER   SHARE  OWNER    SERVING             SINCE");
  EXPECT_EQ(lines[2],
            "  1  user:1           9001.0  8900.0  25.00%  cache-a  cache-a,cache-c         -");
  // The ESC and BEL a client could put in a key reach the terminal as text, never as bytes;
  // hot since 2020: an age in days and hours.
  EXPECT_EQ(lines[3].substr(0, 72),
            "  2  evil\\x1b[2J\\x07   800.5   700.2   2.25%  cache-b  cache-b          ");
  EXPECT_TRUE(testing::internal::RE::FullMatch(lines[3].substr(72), " *[0-9]+d[0-9][0-9]h"))
      << lines[3];
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
}

// A pipe is not a terminal: one table and exit 0, as with --once, after one request.
TEST(HotkeysCliTest, NotATerminalPrintsOnceAndExits) {
  HotkeysFakeAdmin admin(oneCluster);
  const CommandResult r = hotkeys({"--admin=" + admin.address(), "--cluster=cache"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(admin.requests(), 1);
  EXPECT_EQ(countOf(r.out, "cluster cache "), 1u) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no screen control on a pipe";
}

TEST(HotkeysCliTest, WithoutAClusterShowsEachCluster) {
  HotkeysFakeAdmin admin([](int n, const std::string& target) -> HotkeysFakeReply {
    if (target != "/hotkeys") return {400, "?"};
    return {200, "{\"clusters\": [" + clusterJson("cache", n) +
                     ", {\"cluster\": \"web\", \"window_s\": 1, \"floor_rps\": 5, \"keys\": []}]}"};
  });
  const CommandResult r = hotkeys({"--admin", admin.address(), "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(admin.targets(), std::vector<std::string>{"/hotkeys"});
  const size_t cache = r.out.find("cluster cache ");
  const size_t web = r.out.find("cluster web  total - rps  floor 5.0 rps  window 1s  keys 0\n"
                                "  no hot keys\n");
  ASSERT_NE(cache, std::string::npos) << r.out;
  ASSERT_NE(web, std::string::npos) << r.out;
  EXPECT_LT(cache, web);
}

// The admin client reads HTTP as lb's own parser does: a chunked answer is the same answer.
TEST(HotkeysCliTest, AChunkedReplyReadsTheSame) {
  HotkeysFakeAdmin plain(oneCluster);
  HotkeysFakeAdmin chunked([](int n, const std::string& target) {
    HotkeysFakeReply r = oneCluster(n, target);
    r.chunked = true;
    return r;
  });
  const CommandResult a = hotkeys({"--admin", plain.address(), "--cluster", "cache"});
  const CommandResult b = hotkeys({"--admin", chunked.address(), "--cluster", "cache"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(linesOf(a.out).at(2), linesOf(b.out).at(2));
  EXPECT_EQ(linesOf(a.out).at(0), linesOf(b.out).at(0));
}

TEST(HotkeysCliTest, AnUnreachableAdminExits1SayingSo) {
  const uint16_t port = freePort();   // nothing listens there
  const CommandResult r = hotkeys({"--admin", "127.0.0.1:" + std::to_string(port), "--once"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "lb hotkeys: cannot connect to 127.0.0.1:" + std::to_string(port) +
                       ": Connection refused\n");
  EXPECT_EQ(r.out, "");
}

TEST(HotkeysCliTest, AnAdminThatNeverAnswersTimesOut) {
  HotkeysFakeAdmin admin(oneCluster, /*answer=*/false);
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = hotkeys({"--admin", admin.address(), "--cluster", "cache"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("timed out waiting for the reply"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(HotkeysCliTest, AReplyThatIsNotTheJsonExpectedExits1) {
  const std::pair<HotkeysFakeReply, std::string> cases[] = {
      {{200, "<html>hello</html>"}, "did not answer the /hotkeys JSON expected: not JSON"},
      {{200, R"({"cluster": "cache", "keys": []})"},
       "did not answer the /hotkeys JSON expected: the reply: missing \"window_s\""},
      {{404, "no cluster 'cache'\n"}, "/hotkeys?cluster=cache answered 404: no cluster 'cache'"},
      {{503, ""}, "/hotkeys?cluster=cache answered 503\n"},
      {{200, ""}, "did not answer the /hotkeys JSON expected: not JSON"},
  };
  for (const auto& [reply, want] : cases) {
    HotkeysFakeAdmin admin([&reply = reply](int, const std::string&) { return reply; });
    const CommandResult r = hotkeys({"--admin", admin.address(), "--cluster", "cache"});
    EXPECT_EQ(r.exit_code, 1) << reply.body;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(HotkeysCliTest, BadArgumentsExit2WithTheUsage) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"--admin", "127.0.0.1:1", "--interval", "0s"},
        {"--admin", "127.0.0.1:1", "--bogus"}, {"--admin", "127.0.0.1:1", "extra"}}) {
    const CommandResult r = hotkeys(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("usage: lb hotkeys --admin HOST:PORT"), std::string::npos) << r.err;
  }
  const CommandResult help = hotkeys({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: lb hotkeys"), std::string::npos);
}

// lb hotkeys in a tmux pane of 100x30, as a person sees it.
class HotkeysTmuxTest : public testing::Test {
 protected:
  void SetUp() override {
    if (runCommand({"tmux", "-V"}).exit_code != 0) GTEST_SKIP() << "tmux is not installed";
    socket_ = "lb-hotkeys-test-" + std::to_string(getpid());
  }
  void TearDown() override {
    if (started_) runCommand({"tmux", "-L", socket_, "kill-server"});
  }

  // Runs `command` in a detached session; the pane stays after it ends so its last screen
  // (and the echoed exit code) can be read.
  void start(const std::string& command) {
    const CommandResult r =
        runCommand({"env", "TERM=xterm", "tmux", "-L", socket_, "-f", "/dev/null",
                    "new-session", "-d", "-x", "100", "-y", "30",
                    command + "; echo EXIT=$?; sleep 60"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    started_ = true;
  }
  std::string screen() {
    return runCommand({"tmux", "-L", socket_, "capture-pane", "-p"}).out;
  }
  // Polls the pane until pred holds; the last screen either way.
  std::string waitScreen(const std::function<bool(const std::string&)>& pred,
                         Millis timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string s = screen();
    while (!pred(s) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
      s = screen();
    }
    return s;
  }
  void keys(const std::string& k) { runCommand({"tmux", "-L", socket_, "send-keys", k}); }

  std::string socket_;
  bool started_ = false;
};

TEST_F(HotkeysTmuxTest, RedrawsInPlaceAndQQuitsRestoringTheScreen) {
  HotkeysFakeAdmin admin(oneCluster);
  start(builtBinary("lb") + " hotkeys --admin " + admin.address() +
        " --cluster cache --interval 200ms");
  auto has = [](const std::string& needle) {
    return [needle](const std::string& s) { return s.find(needle) != std::string::npos; };
  };
  // The third answer on screen: two redraws happened.
  std::string s = waitScreen(has("floor 3.0 rps"));
  ASSERT_NE(s.find("floor 3.0 rps"), std::string::npos) << s;
  // In place: one table on the screen, the older answers gone, not scrolled above it.
  EXPECT_EQ(countOf(s, "cluster cache "), 1u) << s;
  EXPECT_EQ(s.find("floor 1.0 rps"), std::string::npos) << s;
  EXPECT_NE(s.find("lb hotkeys  " + admin.address()), std::string::npos) << s;
  EXPECT_NE(s.find("  1  user:1"), std::string::npos) << s;
  EXPECT_NE(s.find("evil\\x1b[2J\\x07"), std::string::npos) << s;
  EXPECT_NE(s.find(std::to_string(9003) + ".0"), std::string::npos) << s;
  // And again later: it keeps refreshing on its own.
  s = waitScreen(has("floor 6.0 rps"));
  EXPECT_NE(s.find("floor 6.0 rps"), std::string::npos) << s;

  keys("q");
  s = waitScreen(has("EXIT="));
  EXPECT_EQ(s.substr(s.find("EXIT="), 7), "EXIT=0\n") << s;   // lb's own exit code
  // The alternate screen is gone: the shell's screen is back, without the table.
  EXPECT_EQ(s.find("cluster cache"), std::string::npos) << s;
  const int asked = admin.requests();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(admin.requests(), asked) << "no request after q";
}

TEST_F(HotkeysTmuxTest, CtrlCQuitsWithExit0AndTheTerminalRestored) {
  HotkeysFakeAdmin admin(oneCluster);
  // `stty -a` afterwards shows the line discipline back to canonical mode with echo.
  start(builtBinary("lb") + " hotkeys --admin " + admin.address() +
        " --cluster cache --interval 200ms; echo EXIT=$?; stty -a | tr ' ' '\\n' | grep -x -e "
        "icanon -e echo");
  std::string s = waitScreen([](const std::string& t) {
    return t.find("floor 2.0 rps") != std::string::npos;
  });
  ASSERT_NE(s.find("floor 2.0 rps"), std::string::npos) << s;
  keys("C-c");
  s = waitScreen([](const std::string& t) { return t.find("EXIT=") != std::string::npos; });
  EXPECT_EQ(s.substr(s.find("EXIT="), 7), "EXIT=0\n") << s;   // lb's own exit code
  s = waitScreen([](const std::string& t) { return t.find("\necho") != std::string::npos; },
                 3s);
  EXPECT_NE(s.find("\nicanon\n"), std::string::npos) << s;
  EXPECT_NE(s.find("\necho\n"), std::string::npos) << s;
}


// A real lb over two origins, one key taking most of the requests, sent on a thread of its
// own for as long as the test runs (the summaries count a rate, so the load must go on).
class HotkeysLiveLoad {
 public:
  explicit HotkeysLiveLoad(uint16_t port) : thread_([this, port] { run(port); }) {}
  ~HotkeysLiveLoad() {
    stop_ = true;
    thread_.join();
  }
  HotkeysLiveLoad(const HotkeysLiveLoad&) = delete;
  HotkeysLiveLoad& operator=(const HotkeysLiveLoad&) = delete;
  int sent() const { return sent_.load(); }

 private:
  void run(uint16_t port) {
    int i = 0;
    while (!stop_) {
      TcpClient c;
      if (!c.connect(port, 2s)) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      // Four of five requests for /k/1, the rest over 50 others.
      while (!stop_) {
        const std::string path = i % 5 != 0 ? "/k/1" : "/k/" + std::to_string(2 + i % 50);
        ++i;
        if (!c.send(httpRequest("GET", path))) break;
        HttpResponse r = readHttpResponse(c, false, 2s);
        if (!r || !r.keep_alive) break;
        ++sent_;
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> sent_{0};
  std::thread thread_;
};

TEST_F(HotkeysTmuxTest, AgainstARunningLbNamesItsHotKey) {
  OriginProcess a("cache-a"), b("cache-b");
  ASSERT_TRUE(a.ok() && b.ok()) << a.output() << b.output();
  const uint16_t web = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start("[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
                           std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
                           std::to_string(web) + "\"\ncluster = \"cache\"\n"
                           "hash = [ { path = true } ]\n[clusters.cache]\n"
                           "hot_keys = { threshold = 0.1, hold = \"2s\" }\n"
                           "backends = [ { name = \"cache-a\", address = \"" + a.address() +
                           "\" }, { name = \"cache-b\", address = \"" + b.address() + "\" } ]\n",
                       {web, admin}))
      << lb.output();
  const std::string address = "127.0.0.1:" + std::to_string(admin);
  const CommandResult probe = hotkeys({"--admin", address, "--cluster", "cache", "--once"});
  if (probe.exit_code == 1 && probe.err.find("answered 404") != std::string::npos)
    GTEST_SKIP() << "waits on lb's GET /hotkeys: " << probe.err;
  ASSERT_EQ(probe.exit_code, 0) << probe.err;

  HotkeysLiveLoad load(web);
  // Detection merges about once a second: /k/1 is ranked first within a few.
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    out = hotkeys({"--admin", address, "--cluster", "cache", "--once"}).out;
    if (out.find("\n  1  /k/1 ") != std::string::npos) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_NE(out.find("\n  1  /k/1 "), std::string::npos) << out << "\nsent " << load.sent();

  start(builtBinary("lb") + " hotkeys --admin " + address + " --cluster cache --interval 200ms");
  std::string s = waitScreen([](const std::string& t) {
    return t.find("\n  1  /k/1 ") != std::string::npos;
  });
  EXPECT_NE(s.find("\n  1  /k/1 "), std::string::npos) << s;
  EXPECT_NE(s.find("cluster cache "), std::string::npos) << s;
  keys("q");
  s = waitScreen([](const std::string& t) { return t.find("EXIT=") != std::string::npos; });
  EXPECT_EQ(s.substr(s.find("EXIT="), 7), "EXIT=0\n") << s;   // lb's own exit code
  EXPECT_EQ(lb.process().stop(), 0) << lb.output();
}

}  // namespace
}  // namespace lb::test
