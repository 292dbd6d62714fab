// The loader reads the full example config with every field as written, and fills defaults for
// everything left out.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "lb/config/config.h"

namespace lb {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The full example config (README and docs/config.md), verbatim, plus the `memcached` cluster its tcp listener names
// (the design's example leaves it out, and a listener naming an undefined cluster is an
// error).
const char kDesignExample[] = R"(
[lb]
workers = 0                     # 0 = one per core
log_level = "info"              # error | warn | info | debug
access_log = "-"                # path, "-" stdout, "" off

[admin]
listen = "127.0.0.1:9901"       # /metrics /ready /backends /ring?key=

[listeners.web]
listen = "0.0.0.0:8080"
protocol = "http"               # http | tcp
cluster = "cache"
hash = [ { header = "x-cache-key" }, { cookie = "lb", ttl = "1h" } ]
on_missing_key = "random"       # random | round_robin | reject
timeouts = { connect = "1s", header = "10s", idle = "60s" }
limits = { max_header_bytes = 65536, max_connections = 100000 }

[listeners.memcache]
listen = "0.0.0.0:11311"
protocol = "tcp"
cluster = "memcached"
hash = [ { five_tuple = true } ]

[clusters.cache]
selector = "maglev"             # ring_hash | maglev | rendezvous | jump | ketama
hash_balance_factor = 125       # bounded loads; absent or 0 = off
retries = 2                     # next distinct hosts in preference order on connect failure
maglev = { table_size = 65537 }
ring_hash = { vnodes = 160 }
backends = [
  { name = "cache-a", address = "127.0.0.1:9001" },
  { name = "cache-b", address = "127.0.0.1:9002", weight = 2, hash_key = "cache-b" },
]

[clusters.memcached]
selector = "ketama"
backends = [ { name = "mc-a", address = "127.0.0.1:11211", hash_key = "127.0.0.1:11211" } ]
)";

std::string allErrors(const Result<Config>& r) {
  std::string out;
  if (!r.ok())
    for (const auto& e : r.errors()) out += e.format() + "\n";
  return out;
}

TEST(ConfigLoaderTest, DesignExampleLoadsWithEveryFieldAsWritten) {
  auto r = loadConfigString(kDesignExample, "lb.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  const Config& c = r.value();
  EXPECT_EQ(c.file, "lb.toml");
  EXPECT_EQ(c.workers, 0u);
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.access_log, "-");
  EXPECT_EQ(c.admin_listen, "127.0.0.1:9901");

  ASSERT_EQ(c.listeners.size(), 2u);
  const ListenerConfig& web = c.listeners[0];   // file order, not key order
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.listen, "0.0.0.0:8080");
  EXPECT_EQ(web.protocol, Protocol::kHttp);
  EXPECT_EQ(web.cluster, "cache");
  ASSERT_EQ(web.hash.size(), 2u);
  EXPECT_EQ(web.hash[0].kind, "header");
  EXPECT_EQ(web.hash[0].name, "x-cache-key");
  EXPECT_EQ(web.hash[0].ttl, milliseconds(0));
  EXPECT_FALSE(web.hash[0].terminal);
  EXPECT_EQ(web.hash[1].kind, "cookie");
  EXPECT_EQ(web.hash[1].name, "lb");
  EXPECT_EQ(web.hash[1].ttl, hours(1));
  EXPECT_EQ(web.on_missing_key, OnMissingKey::kRandom);
  EXPECT_EQ(web.timeouts.connect, seconds(1));
  EXPECT_EQ(web.timeouts.header, seconds(10));
  EXPECT_EQ(web.timeouts.idle, seconds(60));
  EXPECT_EQ(web.limits.max_header_bytes, 65536u);
  EXPECT_EQ(web.limits.max_connections, 100000u);
  EXPECT_EQ(web.pos.line, 10u);

  const ListenerConfig& mc = c.listeners[1];
  EXPECT_EQ(mc.name, "memcache");
  EXPECT_EQ(mc.listen, "0.0.0.0:11311");
  EXPECT_EQ(mc.protocol, Protocol::kTcp);
  EXPECT_EQ(mc.cluster, "memcached");
  ASSERT_EQ(mc.hash.size(), 1u);
  EXPECT_EQ(mc.hash[0].kind, "five_tuple");
  EXPECT_EQ(mc.hash[0].name, "");

  ASSERT_EQ(c.clusters.size(), 2u);
  const ClusterConfig& cache = c.clusters[0];
  EXPECT_EQ(cache.name, "cache");
  EXPECT_EQ(cache.selector, "maglev");
  EXPECT_EQ(cache.hash_balance_factor, 125u);
  EXPECT_EQ(cache.retries, 2u);
  EXPECT_EQ(cache.table_size, 65537u);
  EXPECT_EQ(cache.vnodes, 160u);
  ASSERT_EQ(cache.backends.size(), 2u);
  EXPECT_EQ(cache.backends[0].name, "cache-a");
  EXPECT_EQ(cache.backends[0].address, "127.0.0.1:9001");
  EXPECT_EQ(cache.backends[0].weight, 1u);
  EXPECT_EQ(cache.backends[0].hash_key, "");
  EXPECT_EQ(cache.backends[1].name, "cache-b");
  EXPECT_EQ(cache.backends[1].address, "127.0.0.1:9002");
  EXPECT_EQ(cache.backends[1].weight, 2u);
  EXPECT_EQ(cache.backends[1].hash_key, "cache-b");
  EXPECT_EQ(cache.backends[1].pos.line, 33u);
  EXPECT_EQ(cache.backends[1].pos.column, 3u);
  EXPECT_EQ(c.findCluster("memcached"), &c.clusters[1]);
  EXPECT_EQ(c.findCluster("nope"), nullptr);
}

TEST(ConfigLoaderTest, EverythingLeftOutTakesItsDefault) {
  auto r = loadConfigString(R"(
[listeners.web]
listen = "127.0.0.1:8080"
cluster = "cache"

[clusters.cache]
backends = [ { name = "a", address = "127.0.0.1:9001" } ]
)",
                            "min.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  const Config& c = r.value();
  EXPECT_EQ(c.workers, 0u);
  EXPECT_EQ(c.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.access_log, "-");
  EXPECT_EQ(c.admin_listen, "127.0.0.1:9901");
  EXPECT_EQ(c.drain_timeout, seconds(30));
  const ListenerConfig& l = c.listeners.at(0);
  EXPECT_EQ(l.protocol, Protocol::kHttp);
  EXPECT_TRUE(l.hash.empty());
  EXPECT_EQ(l.on_missing_key, OnMissingKey::kRandom);
  EXPECT_EQ(l.timeouts.connect, seconds(1));
  EXPECT_EQ(l.timeouts.header, seconds(10));
  EXPECT_EQ(l.timeouts.idle, seconds(60));
  EXPECT_EQ(l.limits.max_header_bytes, 65536u);
  EXPECT_EQ(l.limits.max_connections, 100000u);
  const ClusterConfig& cl = c.clusters.at(0);
  EXPECT_EQ(cl.selector, "ring_hash");
  EXPECT_EQ(cl.hash_balance_factor, 0u);
  EXPECT_EQ(cl.retries, 2u);
  EXPECT_EQ(cl.vnodes, 160u);
  EXPECT_EQ(cl.table_size, 65537u);
  EXPECT_EQ(cl.backends.at(0).weight, 1u);
  EXPECT_EQ(cl.backends.at(0).hash_key, "");
}

TEST(ConfigLoaderTest, PartialTimeoutsKeepTheOtherDefaults) {
  auto r = loadConfigString(R"(
[listeners.web]
listen = "127.0.0.1:8080"
cluster = "cache"
timeouts = { idle = "5m" }
[clusters.cache]
backends = [ { name = "a", address = "127.0.0.1:9001" } ]
)",
                            "t.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  const Timeouts& t = r.value().listeners.at(0).timeouts;
  EXPECT_EQ(t.connect, seconds(1));
  EXPECT_EQ(t.header, seconds(10));
  EXPECT_EQ(t.idle, std::chrono::minutes(5));
}

TEST(ConfigLoaderTest, LbSectionReadsWorkersLevelAccessLogAndDrainTimeout) {
  auto r = loadConfigString(R"(
[lb]
workers = 4
log_level = "debug"
access_log = ""
drain_timeout = "1m30s"
)",
                            "lb.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  EXPECT_EQ(r.value().workers, 4u);
  EXPECT_EQ(r.value().log_level, LogLevel::kDebug);
  EXPECT_EQ(r.value().access_log, "");
  EXPECT_EQ(r.value().drain_timeout, seconds(90));
}

TEST(ConfigLoaderTest, TerminalAndOnMissingKeyAreRead) {
  auto r = loadConfigString(R"(
[listeners.m]
listen = "[::1]:11311"
protocol = "tcp"
cluster = "c"
hash = [ { source_ip = true, terminal = true } ]
on_missing_key = "reject"
[clusters.c]
selector = "rendezvous"
backends = [ { name = "a", address = "[::1]:9001" } ]
)",
                            "lb.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  const ListenerConfig& l = r.value().listeners.at(0);
  EXPECT_TRUE(l.hash.at(0).terminal);
  EXPECT_EQ(l.hash.at(0).kind, "source_ip");
  EXPECT_EQ(l.on_missing_key, OnMissingKey::kReject);
}

TEST(ConfigLoaderTest, CombineIsOffUnlessAsked) {
  auto r = loadConfigString(R"(
[listeners.a]
listen = "127.0.0.1:8080"
cluster = "c"
hash = [ { header = "x-a" }, { path = true } ]
[listeners.b]
listen = "127.0.0.1:8081"
cluster = "c"
hash = [ { header = "x-a" }, { path = true } ]
combine = true
[clusters.c]
backends = [ { name = "a", address = "127.0.0.1:9001" } ]
)",
                            "lb.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  EXPECT_FALSE(r.value().listeners.at(0).combine);
  EXPECT_TRUE(r.value().listeners.at(1).combine);
}

TEST(ConfigLoaderTest, CombineMustBeABoolean) {
  auto r = loadConfigString(
      "[listeners.a]\nlisten = \"127.0.0.1:8080\"\ncluster = \"c\"\ncombine = \"yes\"\n"
      "[clusters.c]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
      "lb.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().at(0).path, "listeners.a.combine");
}

TEST(ConfigLoaderTest, CheckServesRefusesAConfigWithNothingToServe) {
  auto empty = loadConfigString("", "empty.toml");
  ASSERT_TRUE(empty.ok());   // it loads (lb analyze may read any file)...
  Errors warnings;
  Errors errors = checkServes(empty.value(), &warnings);
  ASSERT_EQ(errors.size(), 1u);   // ...but does not run
  EXPECT_EQ(errors[0].format(),
            "empty.toml:1:1: no listener and no cluster: lb would start and serve nothing (a "
            "config needs [listeners.NAME] and the [clusters.NAME] it names)");
  EXPECT_TRUE(warnings.empty());
}

TEST(ConfigLoaderTest, CheckServesWarnsAboutClustersWithoutAListener) {
  auto r = loadConfigString(
      "[lb]\nworkers = 1\n[clusters.c]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
      "lb.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  Errors warnings;
  EXPECT_TRUE(checkServes(r.value(), &warnings).empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].format(),
            "lb.toml:3:1: warning: no listener: lb accepts no connection until a reload adds one "
            "([listeners.NAME])");
}

TEST(ConfigLoaderTest, CheckServesAcceptsAListenerAndItsCluster) {
  auto r = loadConfigString(
      "[listeners.a]\nlisten = \"127.0.0.1:8080\"\ncluster = \"c\"\n"
      "[clusters.c]\nbackends = [ { name = \"a\", address = \"127.0.0.1:9001\" } ]\n",
      "lb.toml");
  ASSERT_TRUE(r.ok()) << allErrors(r);
  Errors warnings;
  EXPECT_TRUE(checkServes(r.value(), &warnings).empty());
  EXPECT_TRUE(warnings.empty());
}

TEST(ConfigLoaderTest, LoadConfigFileReadsTheFileAndNamesItInErrors) {
  char path[] = "/tmp/lb_config_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "[lb]\nworkers = \"two\"\n";
  ASSERT_EQ(write(fd, text, sizeof text - 1), static_cast<ssize_t>(sizeof text - 1));
  close(fd);
  auto r = loadConfigFile(path);
  unlink(path);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  EXPECT_EQ(r.errors()[0].format(),
            std::string(path) + ":2:11: lb.workers: must be an integer, got string");
}

TEST(ConfigLoaderTest, MissingFileIsOneErrorNamingTheFile) {
  auto r = loadConfigFile("/nonexistent/lb.toml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  EXPECT_EQ(r.errors()[0].format(), "/nonexistent/lb.toml: cannot open: No such file or directory");
}

}  // namespace
}  // namespace lb
