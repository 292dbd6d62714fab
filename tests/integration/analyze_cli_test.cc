// `lb analyze` as a user runs it: the real build/lb binary (next to this test's own binary),
// its JSON parsed, its exit codes checked. The selector figures asserted here are the
// properties design.md promises: mod_n remaps almost everything, the consistent selectors
// move only the changed host's keys.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lb/hash.h"
#include "tests/unit/analyze_json_test_util.h"

extern char** environ;

namespace lb {
namespace {

using testjson::Value;

struct LbRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string lbPath() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "lb";
  std::string dir(self, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  return dir + "/../lb";
}

// Runs `lb analyze ARGS...`, collecting stdout and stderr; kills it after a 60 s deadline
// (generous for ASan on a shared 2-core machine; a normal run takes well under a second).
LbRun runAnalyze(const std::vector<std::string>& args) {
  LbRun run;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return run;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<std::string> storage = {lbPath(), "analyze"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    run.err = "posix_spawn failed";
    return run;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      run.err += "\n[killed at the deadline]";
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// The object of `selector` in lb analyze's JSON array, or a null Value.
const Value& entry(const Value& doc, const std::string& selector) {
  static const Value kMissing;
  for (const auto& item : doc.items)
    if (item["selector"].text == selector) return item;
  return kMissing;
}

class AnalyzeCliTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lb_analyze_cli_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& f : files_) unlink(f.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  std::string writeFile(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(AnalyzeCliTest, ModNMovesFourFifthsOfTheKeysGoingFromFourToFive) {
  const LbRun r = runAnalyze({"--selector", "mod_n", "--backends", "4", "--keys", "100000",
                            "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = testjson::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  const Value& m = entry(*doc, "mod_n");
  EXPECT_NEAR(m["add"]["moved"].number, 0.8, 0.02);
  EXPECT_NEAR(m["remove"]["moved"].number, 0.75, 0.02);
  EXPECT_EQ(m["add"]["ideal"].text, "0.2000");
  EXPECT_EQ(m["remove"]["backend"].text, "b3");
  EXPECT_EQ(m["add"]["backend"].text, "b4");
}

TEST_F(AnalyzeCliTest, HelpPrintsUsageAndSucceeds) {
  const LbRun r = runAnalyze({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: lb analyze"), std::string::npos) << r.out;
}

TEST_F(AnalyzeCliTest, UnknownSelectorExitsTwoNamingIt) {
  const LbRun r = runAnalyze({"--selector", "nosuch"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown selector 'nosuch'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(AnalyzeCliTest, BadNumberExitsTwoWithUsage) {
  const LbRun r = runAnalyze({"--backends", "four"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--backends"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage:"), std::string::npos) << r.err;
}

TEST_F(AnalyzeCliTest, UnreadableConfigExitsOneWithTheLoadersError) {
  const LbRun r = runAnalyze({"--config", dir_ + "/missing.toml", "--cluster", "cache", "--key",
                            "k"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.toml"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lb
