// The cache listeners with the client libraries applications use (Debian's python3-pymemcache
// and python3-redis): pymemcache sends noreply by default and pipelines gets across servers;
// redis-py's flushdb(), dbsize() and script_load() are whole-server calls. Each script asserts
// what the client sees and prints "ok" last; the test checks that it got there.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cache_fleet.h"
#include "tests/support/python_client.h"

namespace lb::test {
namespace {

TEST(CacheClientsTest, PymemcacheWithNoreplyFanoutAndLargeValues) {
  CacheFleet fleet(CacheServer::kMemcached, 2);
  fleet.setServerArgs({"-m", "64", "-I", "8m"});
  // Timeouts for a shared machine: a 5 MiB value while other tests run.
  ASSERT_TRUE(fleet.start("fanout = true\nlimits = { max_request_bytes = 16777216 }\n"
                          "timeouts = { connect = \"10s\", response = \"20s\" }"))
      << fleet.output();
  const auto r = runPython(R"PY(
from pymemcache.client.base import Client
c = Client(("127.0.0.1", PORT))          # noreply is pymemcache's default for writes
assert c.set("a", b"1") is True
c.set_many({"k%d" % i: b"v%d" % i for i in range(100)})
got = c.get_many(["k%d" % i for i in range(100)])
assert got == {"k%d" % i: b"v%d" % i for i in range(100)}, got
assert c.flush_all() is True              # noreply: nothing comes back, nothing shifts
assert c.get("k1") is None
assert c.flush_all(noreply=False) is True
big = bytes(range(256)) * (5 * 4096)      # 5 MiB
assert c.set("big", big, noreply=False) is True
assert c.get("big") == big
assert c.incr("n", 1) is None
c.set("n", b"5")
assert c.incr("n", 2, noreply=False) == 7
assert c.version()
print("ok")
)PY",
                           fleet.port());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}

TEST(CacheClientsTest, RedisPyWholeServerCallsScriptsAndLargeValues) {
  CacheFleet fleet(CacheServer::kRedis, 3);
  ASSERT_TRUE(fleet.start("fanout = true\nlimits = { max_request_bytes = 67108864 }\n"
                          "timeouts = { connect = \"10s\", response = \"20s\" }"))
      << fleet.output();
  const auto r = runPython(R"PY(
import redis
r = redis.Redis(port=PORT)
assert r.flushdb() is True
r.mset({"k%d" % i: i for i in range(100)})
assert r.dbsize() == 100
sha = r.script_load("return redis.call('GET', KEYS[1])")
assert [r.evalsha(sha, 1, "k%d" % i) for i in range(100)] == [b"%d" % i for i in range(100)]
assert r.script_exists(sha) == [True]
big = b"x" * (20 << 20)
p = r.pipeline(transaction=False)
p.set("big", big)
p.get("big")
p.get("k7")
assert p.execute() == [True, big, b"7"]
assert r.command_count() > 100
assert r.flushall() is True
assert r.dbsize() == 0
print("ok")
)PY",
                           fleet.port());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lb::test
