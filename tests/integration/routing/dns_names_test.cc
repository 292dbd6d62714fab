// Backends addressed by host name, against a real lb and real lb-origin backends:
// `localhost:PORT` passes --check and proxies; a name that does not resolve at start is
// refused at its file:line:col; a name re-resolved (resolve_interval) to another address moves
// no key, and one that stops resolving keeps its last address; a reload naming a host that does
// not resolve is refused.
//
// The tests never touch the machine's resolver files. The re-resolution tests run lb in a
// private mount namespace (`unshare -m`) where /etc/hosts (and /etc/resolv.conf) are
// bind-mounted temporary files the test writes; outside that namespace nothing changes. They are skipped where unshare is not
// allowed (not root, or no CAP_SYS_ADMIN).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "lb/core/address.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"

namespace lb::test {
namespace {

// The first address the system resolver gives for localhost, as lb takes it (AF_UNSPEC,
// SOCK_STREAM): 127.0.0.1 on most machines, ::1 on some.
std::string localhostAddress() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo("localhost", nullptr, &hints, &res) != 0 || res == nullptr) return "";
  sockaddr_storage a{};
  memcpy(&a, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  setAddressPort(&a, 0);
  return formatAddress(reinterpret_cast<const sockaddr*>(&a));   // "127.0.0.1:0", "[::1]:0"
}

// An lb-origin named `name` listening on `listen` ("HOST:PORT", PORT 0 = any).
struct Origin {
  Origin(const std::string& listen, const std::string& name)
      : proc({builtBinary("lb-origin"), "--listen", listen, "--name", name}),
        port(proc.waitForListeningPort("listening on", 10s)) {}
  Process proc;
  std::optional<uint16_t> port;
};

std::string config(uint16_t port, uint16_t admin, const std::string& backends,
                   const std::string& cluster_extra = "") {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(admin) + "\"\n[listeners.web]\nlisten = \"127.0.0.1:" +
         std::to_string(port) +
         "\"\nprotocol = \"http\"\ncluster = \"origins\"\n"
         "hash = [ { header = \"x-cache-key\", terminal = true } ]\n"
         "[clusters.origins]\nselector = \"ring_hash\"\n" +
         cluster_extra + "backends = [\n" + backends + "]\n";
}

std::string backend(const std::string& name, const std::string& address) {
  return "  { name = \"" + name + "\", address = \"" + address + "\" },\n";
}

// Which origin answers each of n keys.
std::map<std::string, std::string> owners(uint16_t port, int n) {
  std::map<std::string, std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string key = "key-" + std::to_string(i);
    HttpResponse r = httpExchange(port, httpRequest("GET", "/", "x-cache-key: " + key + "\r\n"));
    out[key] = r ? r.header("x-backend").value_or("?") : "error: " + r.error;
  }
  return out;
}

std::string adminGet(uint16_t admin, const std::string& path) {
  HttpResponse r = httpExchange(admin, httpRequest("GET", path));
  return r ? r.body : "";
}

// The value of one series line of /metrics ("name{labels} value"), or -1.
double metricValue(uint16_t admin, const std::string& series) {
  std::string body = adminGet(admin, "/metrics");
  size_t at = body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + series.size() + 2));
}

// Polls `cond` every 20ms until it holds or `timeout` passes.
template <typename F>
bool eventually(F cond, Millis timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

TEST(DnsNamesTest, LocalhostBackendsPassCheckAndProxy) {
  const std::string local = localhostAddress();
  ASSERT_FALSE(local.empty()) << "localhost does not resolve on this machine";
  Origin a(local, "origin-a"), b(local, "origin-b");
  ASSERT_TRUE(a.port && b.port) << a.proc.output() << b.proc.output();
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  const std::string text =
      config(port, admin,
             backend("a", "localhost:" + std::to_string(*a.port)) +
                 backend("b", "localhost:" + std::to_string(*b.port)));
  writeWholeFile(lb.configPath(), text);
  CommandResult check = runCommand({builtBinary("lb"), "--check", "--config", lb.configPath()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find(lb.configPath() + ": ok"), std::string::npos) << check.out;

  ASSERT_TRUE(lb.start(text, {port, admin})) << lb.output();
  std::map<std::string, std::string> seen = owners(port, 40);
  int to_a = 0, to_b = 0;
  for (const auto& [key, owner] : seen) {
    if (owner == "origin-a") ++to_a;
    else if (owner == "origin-b") ++to_b;
    else ADD_FAILURE() << key << ": " << owner;
  }
  EXPECT_GT(to_a, 0);
  EXPECT_GT(to_b, 0);
  // /backends shows the name as written and where it resolved to.
  std::string backends = adminGet(admin, "/backends");
  std::string want_a = local.substr(0, local.size() - 1) + std::to_string(*a.port);
  EXPECT_NE(backends.find("\"address\":\"localhost:" + std::to_string(*a.port) +
                          "\",\"resolved\":\"" + want_a + "\""),
            std::string::npos)
      << backends;
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

TEST(DnsNamesTest, AnUnresolvableNameAtStartNamesItsLine) {
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  // RFC 6761: names under .invalid never resolve.
  const std::string text = config(port, admin,
                                  backend("a", "127.0.0.1:9") +
                                      backend("b", "no-such-backend.invalid:9001"));
  writeWholeFile(lb.configPath(), text);
  // Line 15 is the second backend; its address value starts at column 27.
  const std::string want = lb.configPath() +
                           ":15:27: clusters.origins.backends[1].address: cannot resolve "
                           "'no-such-backend.invalid': ";
  ASSERT_NE(text.find("\n  { name = \"b\", address = \"no-such"), std::string::npos);
  CommandResult check = runCommand({builtBinary("lb"), "--check", "--config", lb.configPath()},
                                   20s);
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.err.find(want), std::string::npos) << check.err;

  CommandResult run = runCommand({builtBinary("lb"), "--config", lb.configPath()}, 20s);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE((run.out + run.err).find(want), std::string::npos) << run.out << run.err;
  EXPECT_FALSE(waitForPort(port, 0ms)) << "lb must not listen with a config it refused";
}

TEST(DnsNamesTest, AReloadWithANameThatDoesNotResolveIsRefused) {
  Origin a("127.0.0.1:0", "origin-a");
  ASSERT_TRUE(a.port) << a.proc.output();
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  const std::string good = config(port, admin, backend("a", "127.0.0.1:" + std::to_string(*a.port)));
  ASSERT_TRUE(lb.start(good, {port, admin})) << lb.output();
  EXPECT_FALSE(lb.reload(good.substr(0, good.rfind("]")) +
                         backend("b", "no-such-backend.invalid:9001") + "]\n"))
      << lb.output();
  EXPECT_NE(lb.output().find("clusters.origins.backends[1].address: cannot resolve "
                             "'no-such-backend.invalid'"),
            std::string::npos)
      << lb.output();
  EXPECT_EQ(owners(port, 5).begin()->second, "origin-a") << "the running config must stay";
  EXPECT_EQ(lb.process().stop(SIGTERM, 10s), 0) << lb.output();
}

// lb inside a private mount namespace whose /etc/hosts is a file the test writes.
class RenamedHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CommandResult probe = runCommand(
        {"unshare", "-m", "sh", "-c", "mount --bind \"$0\" /etc/hosts", hosts_}, 10s);
    if (probe.exit_code != 0)
      GTEST_SKIP() << "no private mount namespace here (unshare -m needs root): "
                   << probe.err;
    port_ = freePort();
    admin_ = freePort();
  }
  void TearDown() override {
    if (lb_) {
      EXPECT_EQ(lb_->stop(SIGTERM, 10s), 0) << lb_->output();
    }
    unlink(hosts_.c_str());
    unlink(resolv_.c_str());
    unlink(config_.c_str());
  }

  // Rewrites the hosts file in place: the bind mount follows the inode, not the path.
  void setHosts(const std::string& lines) {
    writeWholeFile(hosts_, "127.0.0.1 localhost\n" + lines);
  }

  // Rewrites resolv.conf in place, as setHosts does hosts.
  void setResolv(const std::string& text) { writeWholeFile(resolv_, text); }

  bool startLb(const std::string& text) {
    writeWholeFile(config_, text);
    // unshare and sh exec: the process the test signals is lb itself.
    lb_ = std::make_unique<Process>(std::vector<std::string>{
        "unshare", "-m", "sh", "-c",
        "mount --bind \"$0\" /etc/hosts && mount --bind \"$1\" /etc/resolv.conf && "
        "exec \"$2\" --config \"$3\"",
        hosts_, resolv_, builtBinary("lb"), config_});
    return waitForPort(port_, 10s) && waitForPort(admin_, 10s) && lb_->running();
  }

  std::string hosts_ = tempPath("hosts");
  // A name missing from hosts then fails at once: no DNS server answers on 127.0.0.1, and the
  // machine's own DNS server is not asked.
  std::string resolv_ = [] {
    std::string path = tempPath("resolv");
    writeWholeFile(path, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
    return path;
  }();
  std::string config_ = tempPath("conf");
  std::unique_ptr<Process> lb_;
  uint16_t port_ = 0;
  uint16_t admin_ = 0;
};

TEST_F(RenamedHostTest, ANewAddressPickedUpByReResolutionMovesNoKey) {
  Origin a("127.0.0.1:0", "origin-a"), b("127.0.0.1:0", "origin-b"), c("127.0.0.1:0", "origin-c");
  ASSERT_TRUE(a.port && b.port && c.port);
  // Where cache-a's name will point next: the same port on another loopback address.
  Origin moved("127.0.0.2:" + std::to_string(*a.port), "origin-a-moved");
  ASSERT_TRUE(moved.port) << moved.proc.output();
  const std::string a_name = "cache-a.lb.test:" + std::to_string(*a.port);
  setHosts("127.0.0.1 cache-a.lb.test\n");
  ASSERT_TRUE(startLb(config(port_, admin_,
                             backend("a", a_name) +
                                 backend("b", "127.0.0.1:" + std::to_string(*b.port)) +
                                 backend("c", "127.0.0.1:" + std::to_string(*c.port)),
                             "resolve_interval = \"1s\"\n")))
      << lb_->output();
  auto before = owners(port_, 300);

  setHosts("127.0.0.2 cache-a.lb.test\n");
  const std::string now = "127.0.0.2:" + std::to_string(*a.port);
  ASSERT_TRUE(eventually([&] {
    return adminGet(admin_, "/backends").find("\"resolved\":\"" + now + "\"") != std::string::npos;
  })) << lb_->output();
  auto after = owners(port_, 300);

  int on_a = 0;
  for (const auto& [key, owner] : before) {
    ASSERT_EQ(owner.rfind("origin-", 0), 0u) << key << ": " << owner;
    if (owner == "origin-a") {
      ++on_a;
      EXPECT_EQ(after[key], "origin-a-moved") << key << " did not follow its backend's name";
    } else {
      EXPECT_EQ(after[key], owner) << key << " moved though only an address changed";
    }
  }
  EXPECT_GT(on_a, 30);   // ring hash, 3 equal hosts: about 100 of 300
  EXPECT_NE(lb_->output().find("dns: clusters.origins.backends[0] (a): " + a_name + " now " +
                               now + ", was 127.0.0.1:" + std::to_string(*a.port)),
            std::string::npos)
      << lb_->output();
  EXPECT_EQ(metricValue(admin_, "lb_dns_resolutions_total{result=\"changed\"}"), 1);
}

TEST_F(RenamedHostTest, HealthChecksFollowAReResolvedAddress) {
  Origin a("127.0.0.1:0", "origin-a"), b("127.0.0.1:0", "origin-b");
  ASSERT_TRUE(a.port && b.port);
  Origin moved("127.0.0.2:" + std::to_string(*a.port), "origin-a-moved");
  ASSERT_TRUE(moved.port) << moved.proc.output();
  const std::string a_name = "cache-a.lb.test:" + std::to_string(*a.port);
  setHosts("127.0.0.1 cache-a.lb.test\n");
  ASSERT_TRUE(startLb(config(port_, admin_,
                             backend("a", a_name) +
                                 backend("b", "127.0.0.1:" + std::to_string(*b.port)),
                             "resolve_interval = \"1s\"\n"
                             "health = { type = \"http\", path = \"/\", interval = \"300ms\", "
                             "timeout = \"300ms\", fall = 3, rise = 2 }\n")))
      << lb_->output();
  const std::string checks = "lb_backend_health_checks_total{backend=\"a\",cluster=\"origins\",";
  auto count = [&](const char* result) {
    return std::max(0.0, metricValue(admin_, checks + "result=\"" + result + "\"}"));
  };
  ASSERT_TRUE(eventually([&] { return count("ok") >= 1; })) << lb_->output();

  setHosts("127.0.0.2 cache-a.lb.test\n");
  const std::string now = "127.0.0.2:" + std::to_string(*a.port);
  ASSERT_TRUE(eventually([&] {
    return adminGet(admin_, "/backends").find("\"resolved\":\"" + now + "\"") != std::string::npos;
  })) << lb_->output();
  // The old address goes dark. Checks that still went there would fail and take `a` down
  // after three; checks that followed the name keep succeeding.
  EXPECT_EQ(a.proc.stop(SIGTERM, 10s), 0);
  const double ok = count("ok"), failed = count("fail") + count("timeout");
  ASSERT_TRUE(eventually([&] { return count("ok") + count("fail") + count("timeout") >=
                                      ok + failed + 4; }))
      << lb_->output();
  EXPECT_GE(count("ok"), ok + 3) << "checks after the move must reach the new address";
  EXPECT_LE(metricValue(admin_, "lb_backend_health_transitions_total{backend=\"a\","
                                "cluster=\"origins\",to=\"down\"}"),
            0)
      << lb_->output();
  int on_moved = 0;
  for (const auto& [key, owner] : owners(port_, 100)) on_moved += owner == "origin-a-moved";
  EXPECT_GT(on_moved, 10) << "a's keys must reach it at its new address";
}

TEST_F(RenamedHostTest, ANameThatStopsResolvingKeepsItsLastAddress) {
  Origin a("127.0.0.1:0", "origin-a"), b("127.0.0.1:0", "origin-b");
  ASSERT_TRUE(a.port && b.port);
  const std::string a_name = "cache-a.lb.test:" + std::to_string(*a.port);
  setHosts("127.0.0.1 cache-a.lb.test\n");
  ASSERT_TRUE(startLb(config(port_, admin_,
                             backend("a", a_name) +
                                 backend("b", "127.0.0.1:" + std::to_string(*b.port)),
                             "resolve_interval = \"1s\"\n")))
      << lb_->output();
  auto before = owners(port_, 100);
  ASSERT_TRUE(eventually(
      [&] { return metricValue(admin_, "lb_dns_resolutions_total{result=\"ok\"}") >= 1; }))
      << lb_->output();

  setHosts("");   // cache-a.lb.test is gone
  // Two failed rounds at least: the second must not log again.
  ASSERT_TRUE(eventually(
      [&] { return metricValue(admin_, "lb_dns_resolutions_total{result=\"failed\"}") >= 2; }))
      << lb_->output();
  EXPECT_EQ(countOf(lb_->output(), "dns: cannot resolve 'cache-a.lb.test'"), 1u) << lb_->output();
  EXPECT_EQ(owners(port_, 100), before) << "the backend must keep its last address";

  setHosts("127.0.0.1 cache-a.lb.test\n");
  ASSERT_TRUE(eventually([&] { return lb_->output().find("dns: 'cache-a.lb.test' resolves again") !=
                                      std::string::npos; }))
      << lb_->output();
  EXPECT_EQ(metricValue(admin_, "lb_dns_resolutions_total{result=\"changed\"}"), 0);
}


// A DNS server on 127.0.0.9:53 for names that are not in the hosts file: it takes every
// question and answers only when told to (A: 127.0.0.1; any other type: no data). Until
// then, whoever asked waits, as it would on a slow or unreachable DNS server.
class HeldDns {
 public:
  HeldDns() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    inet_pton(AF_INET, "127.0.0.9", &a.sin_addr);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~HeldDns() {
    stop_ = true;
    if (answering_.joinable()) answering_.join();
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // Waits up to `timeout` for a question to arrive and keeps it unanswered.
  bool waitForQuestion(Millis timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    held_.push_back(receive());
    return !held_.back().data.empty();
  }
  // Answers the questions held so far and, on a thread of its own, every later one.
  void answerAll() {
    for (const Question& q : held_) reply(q);
    held_.clear();
    answering_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 50) == 1) reply(receive());
      }
    });
  }

 private:
  struct Question {
    std::string data;
    sockaddr_storage from{};
    socklen_t from_len = 0;
  };
  Question receive() {
    Question q;
    char buf[512];
    q.from_len = sizeof q.from;
    ssize_t n = recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&q.from), &q.from_len);
    if (n > 12) q.data.assign(buf, static_cast<size_t>(n));
    return q;
  }
  // RFC 1035 §4.1: the question copied back, then one A record pointing at it (offset 12).
  void reply(const Question& q) {
    if (q.data.size() <= 12) return;
    size_t end = 12;
    while (end < q.data.size() && q.data[end] != 0) end += 1 + static_cast<uint8_t>(q.data[end]);
    end += 5;   // the root label, QTYPE, QCLASS
    if (end > q.data.size()) return;
    const bool type_a = q.data[end - 4] == 0 && q.data[end - 3] == 1;
    std::string r = q.data.substr(0, 2);                        // ID
    r += std::string("\x81\x80\x00\x01\x00", 5);             // response, RD RA, NOERROR, 1 question
    r += type_a ? std::string("\x01", 1) : std::string("\x00", 1);
    r += std::string("\x00\x00\x00\x00", 4);                  // NSCOUNT, ARCOUNT
    r += q.data.substr(12, end - 12);
    if (type_a)
      r += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x7f\x00\x00\x01", 16);
    sendto(fd_, r.data(), r.size(), 0, reinterpret_cast<const sockaddr*>(&q.from), q.from_len);
  }

  int fd_ = -1;
  std::vector<Question> held_;
  std::atomic<bool> stop_{false};
  std::thread answering_;
};

TEST_F(RenamedHostTest, AReloadWaitingOnDnsKeepsTheAdminAndHealthChecksRunning) {
  HeldDns dns;
  if (!dns.ok()) GTEST_SKIP() << "cannot bind 127.0.0.9:53 (needs root)";
  setResolv("nameserver 127.0.0.9\noptions timeout:30 attempts:1\n");
  Origin a("127.0.0.1:0", "origin-a"), b("127.0.0.1:0", "origin-b");
  ASSERT_TRUE(a.port && b.port);
  // fall = 10: a loaded sanitizer build can stall a check past 200ms now and then, and this
  // test is about checks going on while the lookup waits, not about each one's speed.
  const std::string health =
      "health = { type = \"http\", path = \"/\", interval = \"200ms\", timeout = \"200ms\", "
      "fall = 10, rise = 1 }\n";
  const std::string a_line = backend("a", "127.0.0.1:" + std::to_string(*a.port));
  ASSERT_TRUE(startLb(config(port_, admin_, a_line, health))) << lb_->output();
  const std::string checks =
      "lb_backend_health_checks_total{backend=\"a\",cluster=\"origins\",result=\"ok\"}";
  ASSERT_TRUE(eventually([&] { return metricValue(admin_, checks) >= 1; })) << lb_->output();

  // The reload adds a backend by a name only the held DNS server knows.
  writeWholeFile(config_, config(port_, admin_,
                                 a_line + backend("b", "slow.lb.test:" + std::to_string(*b.port)),
                                 health));
  ASSERT_EQ(kill(lb_->pid(), SIGHUP), 0);
  ASSERT_TRUE(dns.waitForQuestion(10s)) << lb_->output();
  // While lb waits for the answer, the main loop serves: /metrics answers and the checks of
  // `a` go on (a blocked loop would answer neither until the lookup gave up after 10s).
  const double before = metricValue(admin_, checks);
  EXPECT_GE(before, 1) << "the admin endpoint must answer during the lookup";
  EXPECT_TRUE(eventually([&] { return metricValue(admin_, checks) >= before + 3; }, 5s))
      << lb_->output();
  EXPECT_EQ(metricValue(admin_, "lb_config_reloads_total{result=\"success\"}"), 0);
  EXPECT_EQ(owners(port_, 5).begin()->second, "origin-a") << "the running config serves";

  dns.answerAll();
  ASSERT_TRUE(eventually([&] {
    return metricValue(admin_, "lb_config_reloads_total{result=\"success\"}") == 1;
  })) << lb_->output();
  EXPECT_NE(adminGet(admin_, "/backends")
                .find("\"resolved\":\"127.0.0.1:" + std::to_string(*b.port) + "\""),
            std::string::npos);
  int on_b = 0;
  for (const auto& [key, owner] : owners(port_, 60)) on_b += owner == "origin-b";
  EXPECT_GT(on_b, 5) << "keys must reach the backend the reload added";
  EXPECT_LE(metricValue(admin_, "lb_backend_health_transitions_total{backend=\"a\","
                                "cluster=\"origins\",to=\"down\"}"),
            0)
      << lb_->output();
}

}  // namespace
}  // namespace lb::test
