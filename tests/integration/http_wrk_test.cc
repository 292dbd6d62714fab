// wrk through lb with two workers: no socket errors, no non-2xx, and both workers served
// connections (each worker reports how many it accepted when lb stops).
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/proxy_harness.h"

namespace lb::test {
namespace {

TEST(HttpWrkTest, SixtyFourConnectionsForFiveSecondsWithoutAnErrorOnBothWorkers) {
  ProxyHarness h;
  for (const char* n : {"a", "b"}) {
    std::string why;
    ASSERT_TRUE(h.startOrigin(n, &why)) << why;
  }
  std::string why;
  ASSERT_TRUE(h.startLb("[lb]\nworkers = 2\n[admin]\nlisten = \"127.0.0.1:{ADMIN}\"\n"
                        "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n"
                        "hash = [ { header = \"x-key\" } ]\n"
                        "[clusters.c]\nselector = \"ring_hash\"\n" + h.backendsToml({"a", "b"}),
                        &why))
      << why;
  auto r = runCommand({"wrk", "-t1", "-c64", "-d5s", "-H", "x-key: bench", localUrl(h.port())},
                      30s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("Socket errors"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Non-2xx"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("([0-9]+) requests in"))) << r.out;
  EXPECT_GT(std::stol(m[1]), 1000) << r.out;

  ASSERT_EQ(h.lb().stop(15), 0) << h.lb().output();
  const std::string log = h.lb().output();
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(std::regex_search(
        log, m, std::regex("worker " + std::to_string(w) + " accepted ([0-9]+) connections")))
        << log;
    EXPECT_GT(std::stol(m[1]), 0) << "worker " << w << " served nothing:\n" << log;
  }
}

}  // namespace
}  // namespace lb::test
