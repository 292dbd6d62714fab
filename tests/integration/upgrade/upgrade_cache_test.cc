// `lb upgrade` under cache and TCP load: redis-py pipelines of 16 and pymemcache batches see
// every command answered, with the value written, across upgrades (a cache connection is
// served by the old process until it is quiet, since a cache protocol cannot say "close after
// this reply"); a TCP session opened before an upgrade lives on the old process and ends
// cleanly, while new sessions go to the new one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/support/cache_server.h"
#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/process.h"
#include "tests/support/upgrade_harness.h"

namespace lb::test {
namespace {

std::string cacheConfig(const std::string& protocol, uint16_t port, uint16_t admin,
                        const std::string& server) {
  return "[lb]\nworkers = 2\naccess_log = \"\"\n[admin]\nlisten = \"127.0.0.1:" +
         std::to_string(admin) + "\"\n[listeners.cache]\nlisten = \"127.0.0.1:" +
         std::to_string(port) + "\"\nprotocol = \"" + protocol +
         "\"\ncluster = \"cache\"\n" +
         (protocol == "tcp" ? "hash = [ { source_ip = true } ]\n" : "") +
         "[clusters.cache]\nbackends = [ { name = \"s\", address = \"" +
         server + "\" } ]\n";
}

// A client loop that runs until STOP exists (at most 60 s), checks every answer, and prints
// "ops=N errors=E wrong=W" at the end. One connection, reused, as a pooled client's is.
constexpr char kRedisLoad[] = R"(
import os, sys, time, redis
stop = sys.argv[1]
r = redis.Redis(host='127.0.0.1', port=PORT, socket_timeout=10)
ops = errors = wrong = 0
end = time.time() + 60
i = 0
while not os.path.exists(stop) and time.time() < end:
    p = r.pipeline(transaction=False)
    for j in range(8):
        p.set('k%d' % ((i + j) % 500), 'v%d' % (i + j))
        p.get('k%d' % ((i + j) % 500))
    try:
        out = p.execute()
    except Exception as e:
        errors += 1
        print('error', repr(e), flush=True)
        i += 8
        continue
    for j in range(8):
        if out[2 * j] is not True or out[2 * j + 1] != ('v%d' % (i + j)).encode():
            wrong += 1
    ops += 16
    i += 8
print('ops=%d errors=%d wrong=%d' % (ops, errors, wrong), flush=True)
)";

constexpr char kMemcachedLoad[] = R"(
import os, sys, time
from pymemcache.client.base import Client
stop = sys.argv[1]
c = Client(('127.0.0.1', PORT), timeout=10)
ops = errors = wrong = 0
end = time.time() + 60
i = 0
while not os.path.exists(stop) and time.time() < end:
    values = {'k%d' % ((i + j) % 500): b'v%d' % (i + j) for j in range(8)}
    try:
        failed = c.set_many(values, noreply=False)
        got = c.get_many(list(values))
    except Exception as e:
        errors += 1
        print('error', repr(e), flush=True)
        i += 8
        continue
    if failed or got != values:
        wrong += 1
    ops += 16
    i += 8
print('ops=%d errors=%d wrong=%d' % (ops, errors, wrong), flush=True)
)";

std::string withPort(std::string script, uint16_t port) {
  for (size_t at; (at = script.find("PORT")) != std::string::npos;)
    script.replace(at, 4, std::to_string(port));
  return script;
}

// Runs `load` against lb's port through `times` upgrades; returns the client's last line.
std::string loadAcrossUpgrades(const char* load, uint16_t port, LbProcess& lb, int times) {
  const std::string stop = tempPath("stop");
  unlink(stop.c_str());
  Process client({"/usr/bin/python3", "-c", withPort(load, port), stop});
  // The client is under way (its first answers are in) before the first upgrade.
  std::this_thread::sleep_for(700ms);
  UpgradeHarness upgrades;
  pid_t serving = lb.process().pid();
  std::string failures;
  for (int i = 0; i < times; ++i) {
    UpgradeOutcome o = upgrades.upgrade(serving);
    if (o.exit_code != 0) failures += o.err;
    if (o.new_pid != 0) serving = o.new_pid;
  }
  std::this_thread::sleep_for(500ms);   // load on the last process too
  writeWholeFile(stop, "");
  const bool ended = client.waitExit(30s).has_value();
  unlink(stop.c_str());
  if (!failures.empty()) return "upgrade failed: " + failures + lb.output();
  if (!ended) return "the client did not finish: " + client.output();
  return client.output();
}

TEST(UpgradeCacheTest, RedisPipelinesLoseNoCommandAcrossThreeUpgrades) {
  CacheServer redis(CacheServer::kRedis);
  ASSERT_TRUE(redis.ok()) << redis.output();
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(cacheConfig("redis", port, admin, redis.address()), {port}))
      << lb.output();
  const std::string out = loadAcrossUpgrades(kRedisLoad, port, lb, 3);
  EXPECT_NE(out.find("errors=0 wrong=0"), std::string::npos) << out << lb.output();
  EXPECT_EQ(out.find("ops=0 "), std::string::npos) << out;
}

TEST(UpgradeCacheTest, MemcachedBatchesLoseNoCommandAcrossThreeUpgrades) {
  CacheServer memcached(CacheServer::kMemcached);
  ASSERT_TRUE(memcached.ok()) << memcached.output();
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(cacheConfig("memcached", port, admin, memcached.address()), {port}))
      << lb.output();
  const std::string out = loadAcrossUpgrades(kMemcachedLoad, port, lb, 3);
  EXPECT_NE(out.find("errors=0 wrong=0"), std::string::npos) << out << lb.output();
  EXPECT_EQ(out.find("ops=0 "), std::string::npos) << out;
}

// A TCP session opened before the upgrade goes on on the old process (it answers after the
// upgrade), and ends with the client's close, not lb's; a new session meets the new process.
TEST(UpgradeTcpTest, ASessionOpenAcrossTheUpgradeLivesOnTheOldProcess) {
  CacheServer redis(CacheServer::kRedis);   // a PING/PONG server behind a tcp listener
  ASSERT_TRUE(redis.ok()) << redis.output();
  const uint16_t port = freePort(), admin = freePort();
  LbProcess lb;
  ASSERT_TRUE(lb.start(cacheConfig("tcp", port, admin, redis.address()), {port})) << lb.output();
  TcpClient old_session;
  ASSERT_TRUE(old_session.connect(port));
  ASSERT_TRUE(old_session.send("PING\r\n"));
  ASSERT_TRUE(old_session.readUntil("+PONG\r\n"));
  old_session.take(old_session.buffer().size());
  UpgradeHarness upgrades;
  UpgradeOutcome o = upgrades.upgrade(lb.process().pid());
  ASSERT_EQ(o.exit_code, 0) << o.err << lb.output();
  // The old process drains but keeps the session: it still answers.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(old_session.send("PING\r\n"));
    ASSERT_TRUE(old_session.readUntil("+PONG\r\n")) << lb.output();
    old_session.take(old_session.buffer().size());
  }
  EXPECT_TRUE(lb.process().running());
  TcpClient fresh;
  ASSERT_TRUE(fresh.connect(port));
  ASSERT_TRUE(fresh.send("PING\r\n"));
  EXPECT_TRUE(fresh.readUntil("+PONG\r\n"));
  // The client ends the old session; the old process then has nothing left and exits.
  old_session.close();
  EXPECT_TRUE(lb.process().waitExit(10s).has_value()) << lb.output();
  EXPECT_FALSE(old_session.sawReset());
}

}  // namespace
}  // namespace lb::test
