// Which key a request gets when a listener lists several hash entries, end to end: the
// README's example, `hash = [ { header = "x-cache-key" }, { cookie = "lb", ttl = "1h" } ]`,
// must send one x-cache-key to one backend however many fresh clients send it (the entries
// are alternatives, and a cookie is generated only for a request that has no key), while
// `combine = true` keeps Envoy's mixing for whoever asks for it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/support/proxy_harness.h"

namespace lb::test {
namespace {

const char kReadmeHash[] = "hash = [ { header = \"x-cache-key\" }, { cookie = \"lb\", ttl = \"1h\" } ]\n";

class HttpKeyChoiceTest : public ::testing::Test {
 protected:
  void startLb(const std::string& listener_extra) {
    for (const char* n : {"a", "b", "c", "d"}) {
      std::string why;
      ASSERT_TRUE(h_.startOrigin(n, &why)) << why;
    }
    std::string why;
    ASSERT_TRUE(h_.startLb("[lb]\nworkers = 2\naccess_log = \"\"\n"
                           "[listeners.web]\nlisten = \"127.0.0.1:{PORT}\"\ncluster = \"c\"\n" +
                               std::string(kReadmeHash) + listener_extra + "[clusters.c]\n" +
                               h_.backendsToml({"a", "b", "c", "d"}),
                           &why))
        << why;
  }
  ProxyHarness h_;
};

TEST_F(HttpKeyChoiceTest, OneHeaderValueReachesOneBackendFromSixFreshClients) {
  startLb("");
  std::set<std::string> backends;
  for (int client = 0; client < 6; ++client) {   // a new connection and no cookie each time
    auto r = httpExchange(h_.port(), httpRequest("GET", "/", "x-cache-key: user:42\r\n"));
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.status, 200);
    backends.insert(r.header("x-backend").value_or("?"));
    EXPECT_FALSE(r.header("set-cookie")) << "a request keyed by its header gets no cookie";
  }
  EXPECT_EQ(backends.size(), 1u) << "x-cache-key: user:42 reached " << backends.size()
                                 << " backends";
}

TEST_F(HttpKeyChoiceTest, WithoutTheHeaderAClientGetsACookieAndSticksToIt) {
  startLb("");
  auto first = httpExchange(h_.port(), httpRequest("GET", "/"));
  ASSERT_TRUE(first.ok) << first.error;
  auto set = first.header("set-cookie");
  ASSERT_TRUE(set) << "no key at all: the cookie entry generates one";
  std::string cookie = set->substr(0, set->find(';'));
  std::string backend = first.header("x-backend").value_or("");
  for (int i = 0; i < 5; ++i) {
    auto r = httpExchange(h_.port(), httpRequest("GET", "/", "Cookie: " + cookie + "\r\n"));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.header("x-backend").value_or(""), backend);
  }
}

TEST_F(HttpKeyChoiceTest, TheHeaderWinsOverACookieTheClientCarries) {
  startLb("");
  auto keyed = httpExchange(h_.port(), httpRequest("GET", "/", "x-cache-key: user:42\r\n"));
  ASSERT_TRUE(keyed.ok) << keyed.error;
  const std::string owner = keyed.header("x-backend").value_or("?");
  for (int i = 0; i < 6; ++i) {
    auto r = httpExchange(h_.port(), httpRequest("GET", "/", "x-cache-key: user:42\r\nCookie: lb=c" +
                                                                 std::to_string(i) + "\r\n"));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.header("x-backend").value_or(""), owner) << "cookie lb=c" << i;
  }
}

TEST_F(HttpKeyChoiceTest, CombineMixesTheHeaderWithAGeneratedCookieAsEnvoyDoes) {
  startLb("combine = true\n");
  std::set<std::string> backends;
  for (int client = 0; client < 12; ++client) {
    auto r = httpExchange(h_.port(), httpRequest("GET", "/", "x-cache-key: user:42\r\n"));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.header("set-cookie")) << "combine walks every entry: the cookie is generated";
    backends.insert(r.header("x-backend").value_or("?"));
  }
  // Twelve random cookies mixed into one header: more than one backend (all twelve on one of
  // four happens once in 4^11).
  EXPECT_GT(backends.size(), 1u);
}

}  // namespace
}  // namespace lb::test
