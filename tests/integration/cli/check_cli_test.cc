// `lb --check --config FILE` run as a real process: exit status 0 and "FILE: ok" for a good
// file; exit status 1 and every error, one per line, for a bad one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

// The lb binary of this build: <build>/tests/integration_tests -> <build>/lb.
std::string lbBinary() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "lb";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/')) + "/../lb";
}

struct CheckRun {
  int status = -1;      // exit status, or -1 when it did not exit normally
  std::string out;
  std::string err;
};

// Runs `argv` with stdout and stderr captured, reading until both close; kills it if it takes
// longer than the deadline (a --check must never hang).
CheckRun runProcess(const std::vector<std::string>& args) {
  CheckRun run;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return run;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return run;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_fds = 2;
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (open_fds > 0) kill(pid, SIGKILL);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFEXITED(wstatus)) run.status = WEXITSTATUS(wstatus);
  return run;
}

class CheckCliTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lb_check_cli_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& f : files_) unlink(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string writeFile(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

const char kGood[] = R"([lb]
workers = 2
[admin]
listen = "127.0.0.1:9901"
[listeners.web]
listen = "127.0.0.1:8080"
cluster = "cache"
hash = [ { header = "x-cache-key" } ]
[clusters.cache]
selector = "maglev"
backends = [
  { name = "cache-a", address = "127.0.0.1:9001" },
  { name = "cache-b", address = "127.0.0.1:9002", weight = 2 },
]
)";

TEST_F(CheckCliTest, GoodFilePrintsOkAndExitsZero) {
  std::string path = writeFile("good.toml", kGood);
  CheckRun r = runProcess({lbBinary(), "--check", "--config", path});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CheckCliTest, BadFilePrintsEveryErrorAndExitsOne) {
  std::string path = writeFile("bad.toml", R"([listeners.web]
listen = "127.0.0.1:8080"
cluster = "cahce"
[clusters.cache]
backends = [
  { name = "cache-a", address = "127.0.0.1:9001", weight = 0 },
]
)");
  CheckRun r = runProcess({lbBinary(), "--check", "--config", path});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            path + ":3:11: listeners.web.cluster: cluster 'cahce' is not defined (did you mean "
                   "'cache'?)\n" +
                path + ":6:60: clusters.cache.backends[0].weight: must be >= 1, got 0\n" + path +
                ": 2 errors\n");
}

TEST_F(CheckCliTest, MissingFileIsAnErrorNotACrash) {
  std::string path = dir_ + "/absent.toml";
  CheckRun r = runProcess({lbBinary(), "--check", "--config", path});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, path + ": cannot open: No such file or directory\n" + path + ": 1 error\n");
}

TEST_F(CheckCliTest, EmptyFileIsRefusedWithAPosition) {
  // No listener and no cluster: lb would start and do nothing at all.
  std::string path = writeFile("empty.toml", "");
  CheckRun r = runProcess({lbBinary(), "--check", "--config", path});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, path + ":1:1: no listener and no cluster: lb would start and serve nothing (a "
                          "config needs [listeners.NAME] and the [clusters.NAME] it names)\n" +
                       path + ": 1 error\n");
}

TEST_F(CheckCliTest, SettingsWithoutListenerOrClusterAreRefusedToo) {
  std::string path =
      writeFile("settings.toml", "[lb]\nworkers = 2\n[admin]\nlisten = \"127.0.0.1:9901\"\n");
  CheckRun r = runProcess({lbBinary(), "--check", "--config", path});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(path + ":1:1: no listener and no cluster"), std::string::npos) << r.err;
}

TEST_F(CheckCliTest, ClustersWithoutAListenerAreAWarningNotAnError) {
  // `lb analyze` reads such a file; running it serves nothing until a reload adds a listener.
  std::string path = writeFile("clusters.toml", R"(# clusters only
[clusters.cache]
backends = [ { name = "cache-a", address = "127.0.0.1:9001" } ]
)");
  CheckRun r = runProcess({lbBinary(), "--check", "--config", path});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok\n");
  EXPECT_EQ(r.err, path + ":2:1: warning: no listener: lb accepts no connection until a reload "
                          "adds one ([listeners.NAME])\n");
}

TEST_F(CheckCliTest, AnEmptyFileDoesNotStartAProxy) {
  std::string path = writeFile("empty.toml", "");
  CheckRun r = runProcess({lbBinary(), "--config", path});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(path + ":1:1: no listener and no cluster"), std::string::npos) << r.err;
}

TEST_F(CheckCliTest, ConfigEqualsFormIsAccepted) {
  std::string path = writeFile("good.toml", kGood);
  CheckRun r = runProcess({lbBinary(), "--check", "--config=" + path});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, path + ": ok\n");
}

}  // namespace

// A membership cluster needs no backends of its own (etcd gives them), and its table is
// checked with positions like every other key.
TEST_F(CheckCliTest, AMembershipClusterWithoutBackendsIsAcceptedAndItsTableChecked) {
  std::string good = writeFile("membership.toml", R"([listeners.web]
listen = "127.0.0.1:8080"
cluster = "cache"
[clusters.cache]
membership = { etcd = ["http://127.0.0.1:2379"], key = "/lb/prod/clusters/cache" }
)");
  CheckRun ok = runProcess({lbBinary(), "--check", "--config", good});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, good + ": ok\n");
  std::string bad = writeFile("membership_bad.toml", R"([listeners.web]
listen = "127.0.0.1:8080"
cluster = "cache"
[clusters.cache]
membership = { etcd = ["ftp://127.0.0.1:2379"], key = "", max_remove_percent = 0 }
)");
  CheckRun r = runProcess({lbBinary(), "--check", "--config", bad});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            bad + ":5:24: clusters.cache.membership.etcd[0]: 'ftp://127.0.0.1:2379' is not an etcd "
                  "client URL (write http://host:port or https://host:port, e.g. "
                  "http://127.0.0.1:2379)\n" +
                bad + ":5:55: clusters.cache.membership.key: must not be empty (the etcd key "
                      "holding the membership document)\n" +
                bad + ":5:80: clusters.cache.membership.max_remove_percent: must be >= 1, got 0\n" +
                bad + ": 3 errors\n");
}
