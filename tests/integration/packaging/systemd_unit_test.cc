// conf/systemd/lb.service as systemd reads it: `systemd-analyze verify` accepts it without a
// warning, the lb command lines in it are ones lb accepts, and its hardening keeps
// `systemd-analyze security` at a low exposure. The unit names /usr/local/bin/lb (where
// `make install` puts lb); the tests run a copy that names the built binary instead.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"
#include "tests/support/repo_file.h"

namespace lb::test {
namespace {

constexpr char kInstalledLb[] = "/usr/local/bin/lb";
constexpr char kInstalledConfig[] = "/etc/lb/lb.toml";

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

bool onPath(const std::string& program) {
  return runCommand({"sh", "-c", "command -v " + program}).exit_code == 0;
}

// `Key=value` lines of the unit, in order, comments and sections left out.
std::vector<std::pair<std::string, std::string>> directives(const std::string& unit) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(unit);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    size_t eq = line.find('=');
    if (eq != std::string::npos) out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

class SystemdUnitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unit_ = readWholeFile(repoFile("conf/systemd/lb.service"));
    ASSERT_FALSE(unit_.empty()) << "conf/systemd/lb.service is missing";
    char tmpl[] = "/tmp/lb-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    config_ = dir_ + "/lb.toml";
    writeWholeFile(config_, readWholeFile(repoFile("conf/lb.toml")));
    // The unit's file name is its name: systemd wants "lb.service".
    copy_ = dir_ + "/lb.service";
    writeWholeFile(copy_, replaceAll(replaceAll(unit_, kInstalledLb, builtBinaryPath("lb")),
                                     kInstalledConfig, config_));
  }
  void TearDown() override {
    unlink(copy_.c_str());
    unlink(config_.c_str());
    rmdir(dir_.c_str());
  }

  std::string unit_, dir_, config_, copy_;
};

TEST_F(SystemdUnitTest, SystemdAnalyzeVerifyAcceptsItWithoutAWarning) {
  if (!onPath("systemd-analyze")) GTEST_SKIP() << "systemd-analyze is not installed";
  auto r = runCommand({"systemd-analyze", "verify", "--man=no", copy_}, 30s);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Unknown keys and unparsable values are only warnings to verify: none may appear.
  EXPECT_EQ(r.out + r.err, "");
}

TEST_F(SystemdUnitTest, EveryLbCommandLineInItIsOneLbAccepts) {
  int lb_lines = 0;
  for (const auto& [key, value] : directives(unit_)) {
    if (key.rfind("Exec", 0) != 0 || value.rfind(kInstalledLb, 0) != 0) continue;
    ++lb_lines;
    // Split on spaces (the unit quotes nothing) and point it at the built lb and the copy.
    std::vector<std::string> argv;
    std::istringstream words(value);
    for (std::string w; words >> w;)
      argv.push_back(w == kInstalledLb ? builtBinary("lb") : w == kInstalledConfig ? config_ : w);
    // The ExecStart line runs lb; with --check added it is validated instead.
    bool checks = false;
    for (const auto& a : argv) checks = checks || a == "--check" || a == "-t";
    if (!checks) argv.push_back("--check");
    auto r = runCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << key << "=" << value << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, config_ + ": ok\n") << key << "=" << value;
  }
  EXPECT_EQ(lb_lines, 3) << "ExecStartPre (check), ExecStart, ExecReload (check)";
}

TEST_F(SystemdUnitTest, NotifyTypeHupReloadNonRootUserAndFdsFor100kConnections) {
  std::vector<std::string> seen;
  for (const auto& [key, value] : directives(unit_)) seen.push_back(key + "=" + value);
  auto has = [&](const std::string& line) {
    return std::find(seen.begin(), seen.end(), line) != seen.end();
  };
  EXPECT_TRUE(has("Type=notify"));
  EXPECT_TRUE(has("ExecReload=/bin/kill -HUP $MAINPID"));
  EXPECT_TRUE(has("User=lb"));
  EXPECT_TRUE(has("AmbientCapabilities=CAP_NET_BIND_SERVICE"));
  EXPECT_TRUE(has("ExecStartPre=/usr/local/bin/lb --check --config /etc/lb/lb.toml"));
  long nofile = 0;
  for (const auto& [key, value] : directives(unit_))
    if (key == "LimitNOFILE") nofile = std::strtol(value.c_str(), nullptr, 10);
  // Each proxied connection holds a client and a backend socket.
  EXPECT_GE(nofile, 2 * 100000 + 1024);
}

// Under ProtectSystem=strict and a dynamic user, an etcd-fed cluster's membership.state_file
// can only live in a directory systemd hands lb; without one the restart-without-etcd path
// (docs/operations.md, "Running a fleet") had nowhere to write.
TEST_F(SystemdUnitTest, StateDirectoryGivesTheMembershipStateFileAPlaceThatSurvives) {
  bool state = false, logs = false;
  for (const auto& [key, value] : directives(unit_)) {
    state = state || (key == "StateDirectory" && value == "lb");
    logs = logs || (key == "LogsDirectory" && value == "lb");
  }
  EXPECT_TRUE(state) << "StateDirectory=lb: /var/lib/lb for membership state files";
  EXPECT_TRUE(logs) << "LogsDirectory=lb: /var/log/lb for the access log";
}

TEST_F(SystemdUnitTest, HardeningKeepsSystemdAnalyzeSecurityExposureLow) {
  if (!onPath("systemd-analyze")) GTEST_SKIP() << "systemd-analyze is not installed";
  auto r = runCommand({"systemd-analyze", "security", "--offline=yes", "--no-pager", copy_},
                      30s);
  if (r.err.find("--offline") != std::string::npos)
    GTEST_SKIP() << "systemd-analyze security --offline needs systemd >= 250: " << r.err;
  std::smatch m;
  std::string all = r.out + r.err;
  ASSERT_TRUE(std::regex_search(all, m, std::regex(R"(Overall exposure level for \S+: ([0-9.]+))")))
      << all;
  // 0 is a fully locked-down unit, 10 none at all; "OK" ends at 4.9. What remains is what a
  // network proxy needs: the network itself, AF_UNIX for the journal, one capability.
  EXPECT_LE(std::stod(m[1]), 2.0) << all;
}

// `lb upgrade` under systemd: the new process speaks to systemd before systemd has switched
// MAINPID to it (NotifyAccess=all), and the hand-over socket has a directory only lb's user
// enters, which systemd removes when the unit stops.
TEST_F(SystemdUnitTest, UpgradesCanNotifyFromTheNewProcessAndHaveARuntimeDirectory) {
  std::vector<std::string> seen;
  for (const auto& [key, value] : directives(unit_)) seen.push_back(key + "=" + value);
  auto has = [&](const std::string& line) {
    return std::find(seen.begin(), seen.end(), line) != seen.end();
  };
  EXPECT_TRUE(has("NotifyAccess=all"));
  EXPECT_TRUE(has("RuntimeDirectory=lb"));
  EXPECT_TRUE(has("RuntimeDirectoryMode=0700"));
}

// conf/systemd/lb.socket, the socket-activation alternative, verifies beside the service it
// starts, and holds the addresses conf/lb.toml listens on.
TEST_F(SystemdUnitTest, TheSocketUnitVerifiesBesideTheServiceAndMatchesTheConfig) {
  const std::string socket_unit = readWholeFile(repoFile("conf/systemd/lb.socket"));
  ASSERT_FALSE(socket_unit.empty()) << "conf/systemd/lb.socket is missing";
  std::vector<std::string> streams;
  for (const auto& [key, value] : directives(socket_unit))
    if (key == "ListenStream") streams.push_back(value);
  const std::string config = readWholeFile(repoFile("conf/lb.toml"));
  ASSERT_FALSE(streams.empty());
  for (const auto& s : streams)
    EXPECT_NE(config.find("listen = \"" + s + "\""), std::string::npos) << s;
  if (!onPath("systemd-analyze")) GTEST_SKIP() << "systemd-analyze is not installed";
  const std::string socket_copy = dir_ + "/lb.socket";
  writeWholeFile(socket_copy, socket_unit);
  auto r = runCommand({"systemd-analyze", "verify", "--man=no", copy_, socket_copy}, 30s);
  unlink(socket_copy.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
}

}  // namespace
}  // namespace lb::test
