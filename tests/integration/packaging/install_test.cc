// `make install DESTDIR=... PREFIX=/usr` as a packager runs it: the binary, the systemd unit
// with its paths rewritten to PREFIX, the docs and examples, and /etc/lb/lb.toml only when
// there is none. Installs the binary this build made (make -o keeps make from rebuilding it).
#include <gtest/gtest.h>
#include <libgen.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"
#include "tests/support/repo_file.h"

namespace lb::test {
namespace {

bool isFile(const std::string& path, mode_t* mode = nullptr) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (mode) *mode = st.st_mode & 07777;
  return true;
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

class InstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lb-install-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    // <repo>/<build>/lb: make runs in <repo> with BUILD=<build>.
    std::string lb = builtBinaryPath("lb");
    std::string build_dir = lb.substr(0, lb.rfind('/'));
    repo_ = build_dir.substr(0, build_dir.rfind('/'));
    build_ = build_dir.substr(build_dir.rfind('/') + 1);
  }
  void TearDown() override { runCommand({"rm", "-rf", root_}); }

  CommandResult make(const std::string& target) {
    // Without the outer `make test`'s MAKEFLAGS (its jobserver, SAN=1): this make only copies.
    return runCommand({"env", "-u", "MAKEFLAGS", "-u", "MFLAGS", "-u", "MAKELEVEL", "make", "-s",
                       "-C", repo_, "BUILD=" + build_, "-o", build_ + "/lb",
                       target, "DESTDIR=" + root_, "PREFIX=/usr"},
                      60s);
  }

  std::string root_, repo_, build_;
};

TEST_F(InstallTest, PutsBinaryUnitDocsAndConfigUnderDestdir) {
  auto r = make("install");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  mode_t mode = 0;
  ASSERT_TRUE(isFile(root_ + "/usr/bin/lb", &mode));
  EXPECT_EQ(mode, 0755u);
  EXPECT_EQ(runCommand({root_ + "/usr/bin/lb", "-v"}).out,
            runCommand({builtBinary("lb"), "-v"}).out);
  EXPECT_FALSE(exists(root_ + "/usr/bin/lb-origin")) << "lb-origin is a test tool";

  const std::string unit_path = root_ + "/usr/lib/systemd/system/lb.service";
  ASSERT_TRUE(isFile(unit_path, &mode));
  EXPECT_EQ(mode, 0644u);
  const std::string unit = readWholeFile(unit_path);
  EXPECT_NE(unit.find("\nExecStart=/usr/bin/lb --config /etc/lb/lb.toml\n"), std::string::npos)
      << unit;
  EXPECT_NE(unit.find("\nDocumentation=file:/usr/share/doc/lb/operations.md\n"),
            std::string::npos);
  EXPECT_EQ(unit.find("/usr/local"), std::string::npos) << "a path was not rewritten";
  EXPECT_EQ(unit.find(root_), std::string::npos) << "DESTDIR leaked into the unit";

  EXPECT_EQ(readWholeFile(root_ + "/etc/lb/lb.toml"), readWholeFile(repoFile("conf/lb.toml")));
  auto check = runCommand({builtBinary("lb"), "-t", "-c", root_ + "/etc/lb/lb.toml"});
  EXPECT_EQ(check.exit_code, 0) << check.err;

  for (const char* doc : {"README.md", "operations.md", "config.md", "metrics.md",
                          "selectors.md", "analyze.md", "simulate.svg", "examples/lb.toml",
                          "examples/demo.toml", "examples/lb.json", "examples/prometheus.yml"})
    EXPECT_TRUE(isFile(root_ + "/usr/share/doc/lb/" + doc)) << doc;
}

TEST_F(InstallTest, InstalledUnitPassesSystemdAnalyzeVerify) {
  if (runCommand({"sh", "-c", "command -v systemd-analyze"}).exit_code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed";
  ASSERT_EQ(make("install").exit_code, 0);
  // The unit names /usr/bin/lb, which exists only under the staging root: verify a copy that
  // names the staged binary (verify's --root would also want systemd's own units there).
  std::string unit = readWholeFile(root_ + "/usr/lib/systemd/system/lb.service");
  for (size_t at = unit.find("/usr/bin/lb "); at != std::string::npos;
       at = unit.find("/usr/bin/lb ", at + root_.size() + 1))
    unit.replace(at, 11, root_ + "/usr/bin/lb");
  const std::string copy = root_ + "/lb.service";
  writeWholeFile(copy, unit);
  auto r = runCommand({"systemd-analyze", "verify", "--man=no", copy}, 30s);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
}

TEST_F(InstallTest, NeverOverwritesAnOperatorsConfig) {
  ASSERT_EQ(make("install").exit_code, 0);
  writeWholeFile(root_ + "/etc/lb/lb.toml", "# mine\n");
  auto r = make("install");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(readWholeFile(root_ + "/etc/lb/lb.toml"), "# mine\n");
  EXPECT_NE(r.out.find("keeping"), std::string::npos) << r.out;
}

TEST_F(InstallTest, UninstallRemovesAllButTheConfig) {
  ASSERT_EQ(make("install").exit_code, 0);
  auto r = make("uninstall");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(exists(root_ + "/usr/bin/lb"));
  EXPECT_FALSE(exists(root_ + "/usr/lib/systemd/system/lb.service"));
  EXPECT_FALSE(exists(root_ + "/usr/share/doc/lb"));
  EXPECT_TRUE(isFile(root_ + "/etc/lb/lb.toml"));
}

}  // namespace
}  // namespace lb::test
