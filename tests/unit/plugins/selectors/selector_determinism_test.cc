// Determinism across processes: two workers, two lb instances behind an L4 balancer, or an lb
// restarted after a crash must all send a key to the same host. The test re-executes this very
// binary twice (fork + exec of /proc/self/exe, so each child has its own address layout, heap
// and start time) to run a helper that writes a digest of every selector's mappings, and
// compares both children with this process and with digests pinned in the source: a std::hash,
// a pointer-derived value or a random seed anywhere in a table would break one of them.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/selector_test_util.h"

extern char** environ;

namespace lb {
namespace {

constexpr const char* kOutEnv = "LB_SELECTOR_DIGEST_OUT";

// "name digest" per selector: XXH64 over attempts 0..2 of keys "key:0".."key:9999" on 50 hosts
// (weights 1..3, all 1 for jump), each pick as 4 little-endian bytes. twemproxy twice: its
// ketama continuum, and as "twemproxy/modula" its modula list.
std::string digestAll() {
  std::ostringstream out;
  std::vector<std::pair<const SelectorInfo*, bool>> tables;
  for (const SelectorInfo& info : allSelectors()) tables.push_back({&info, false});
  tables.push_back({&test::selector("twemproxy"), true});
  for (const auto& [selector, modula] : tables) {
    const SelectorInfo& info = *selector;
    auto hosts = test::makeHosts(50, "cache-");
    if (info.name != "jump")
      for (size_t i = 0; i < hosts.size(); ++i) hosts[i].weight = 1 + i % 3;
    SelectorOptions options;
    options.modula = modula;
    auto table = info.build(hosts, options);
    std::string bytes;
    for (uint32_t k = 0; k < 10000; ++k) {
      const uint64_t h = test::keyHash(info.key_hash, k);
      for (uint32_t a = 0; a < 3; ++a) {
        const uint32_t host = table->pick(h, a);
        for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>(host >> (8 * b)));
      }
    }
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(xxh64(bytes)));
    out << info.name << (modula ? "/modula " : " ") << hex << "\n";
  }
  return out.str();
}

// Runs only in the children (the parent passes --gtest_also_run_disabled_tests to them).
TEST(DISABLED_SelectorDigestHelper, WriteDigests) {
  const char* path = std::getenv(kOutEnv);
  ASSERT_NE(path, nullptr);
  std::ofstream(path) << digestAll();
}

// Runs the helper in a fresh process; waits for it with a bounded deadline.
std::string digestInChild(const std::string& out_path) {
  std::vector<std::string> env_strings;
  // Not the parent's GTEST_* settings (sharding, output, filters): the child runs one helper.
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).substr(0, 6) != "GTEST_") env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kOutEnv) + "=" + out_path);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string filter = "--gtest_filter=DISABLED_SelectorDigestHelper.WriteDigests";
  std::string disabled = "--gtest_also_run_disabled_tests";
  char* argv[] = {self.data(), filter.data(), disabled.data(), nullptr};

  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  if (pid < 0) return "fork failed";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return "child timed out";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed";
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SelectorDeterminismTest, SameMappingsInTwoSeparateProcesses) {
  char dir_template[] = "/tmp/lb-selector-digest-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string first = digestInChild(dir + "/first");
  const std::string second = digestInChild(dir + "/second");
  std::remove((dir + "/first").c_str());
  std::remove((dir + "/second").c_str());
  rmdir(dir.c_str());

  const std::string here = digestAll();
  EXPECT_EQ(first, here);
  EXPECT_EQ(second, here);
  // Pinned: a change here remaps keys for every deployed cluster; make it on purpose only.
  EXPECT_EQ(here,
            "ring_hash 7d6d964c3ab142d3\n"
            "maglev dfb7b863963b2c36\n"
            "rendezvous 5ffe58f69b8d7562\n"
            "jump f51254616f4973bb\n"
            "ketama 79e1d2c674811007\n"
            "twemproxy 4855da5b6631b77b\n"
            "twemproxy/modula bb4742099a43e804\n");
}

}  // namespace
}  // namespace lb
