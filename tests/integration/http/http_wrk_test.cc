// wrk through lb with two workers: no socket errors, no non-2xx, and both workers served
// connections (each worker reports how many it accepted when lb stops).
#include <gtest/gtest.h>


#include "tests/support/proxy_harness.h"

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
  // "  123456 requests in 5.00s, ..."
  size_t in = r.out.find(" requests in ");
  ASSERT_NE(in, std::string::npos) << r.out;
  size_t start = r.out.rfind(' ', in - 1);
  EXPECT_GT(atol(r.out.c_str() + start + 1), 1000) << r.out;

  ASSERT_EQ(h.lb().stop(15), 0) << h.lb().output();
  const std::string log = h.lb().output();
  for (int w = 0; w < 2; ++w) {
    const std::string needle = "worker " + std::to_string(w) + " accepted ";
    size_t at = log.find(needle);
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_GT(atol(log.c_str() + at + needle.size()), 0)
        << "worker " << w << " served nothing:\n" << log;
  }
}

}  // namespace
}  // namespace lb::test
