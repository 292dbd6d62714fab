// The read-through with the client libraries applications use: a fleet of four grows to five
// by a reload while pymemcache and redis-py keep reading what they wrote before. Their
// multi-key reads (get_many, gets_many, mget) find every key; pymemcache's gets and gets_many
// return the new owner's CAS unique, which its cas then accepts. Each script asserts what the client sees and
// prints "ok" last; the test checks that it got there.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cache_fleet.h"
#include "tests/support/python_client.h"

namespace lb::test {
namespace {

constexpr const char* kHandover = "handover = { window = \"60s\", copy_ttl = \"10m\" }";

TEST(HandoverClientsTest, PymemcacheReadsEveryKeyWarmAcrossAGrowth) {
  CacheFleet fleet(CacheServer::kMemcached, 4);
  ASSERT_TRUE(fleet.start("", kHandover)) << fleet.output();
  auto r = runPython(R"PY(
from pymemcache.client.base import Client
c = Client(("127.0.0.1", PORT))
c.set_many({"user:%d" % i: b"v%d" % i for i in range(1000)}, expire=3600, noreply=False)
print("ok")
)PY",
                     fleet.port());
  ASSERT_NE(r.out.find("ok"), std::string::npos) << r.out << r.err;
  ASSERT_TRUE(fleet.grow()) << fleet.output();
  r = runPython(R"PY(
from pymemcache.client.base import Client
c = Client(("127.0.0.1", PORT))
keys = ["user:%d" % i for i in range(1000)]
# gets_many first, on keys nothing has read yet: every one, each CAS unique the owner's.
many = c.gets_many(keys[900:])
assert sorted(many) == sorted(keys[900:]), len(many)
value, cas = many["user:950"]
assert value == b"v950"
assert c.cas("user:950", b"v950", cas, noreply=False) is True
got = c.get_many(keys)
assert got == {"user:%d" % i: b"v%d" % i for i in range(1000)}, len(got)
# gets of every key: the CAS unique is the owner's now, so cas with it stores.
for i in range(0, 1000, 50):
    value, cas = c.gets("user:%d" % i)
    assert value == b"v%d" % i, (i, value)
    assert c.cas("user:%d" % i, b"w%d" % i, cas, noreply=False) is True, i
assert c.get("user:50") == b"w50"
print("ok")
)PY",
                fleet.port());
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out << r.err;
}

TEST(HandoverClientsTest, RedisPyMgetReadsEveryKeyWarmAcrossAGrowth) {
  CacheFleet fleet(CacheServer::kRedis, 4);
  ASSERT_TRUE(fleet.start("", kHandover)) << fleet.output();
  auto r = runPython(R"PY(
import redis
r = redis.Redis(host="127.0.0.1", port=PORT)
p = r.pipeline(transaction=False)
for i in range(1000):
    p.set("user:%d" % i, "v%d" % i, ex=3600)
assert all(p.execute())
print("ok")
)PY",
                     fleet.port());
  ASSERT_NE(r.out.find("ok"), std::string::npos) << r.out << r.err;
  ASSERT_TRUE(fleet.grow()) << fleet.output();
  r = runPython(R"PY(
import redis
r = redis.Redis(host="127.0.0.1", port=PORT)
keys = ["user:%d" % i for i in range(1000)]
for at in range(0, 1000, 100):
    got = r.mget(keys[at:at + 100])
    assert got == [b"v%d" % i for i in range(at, at + 100)], (at, got.count(None))
print("ok")
)PY",
                fleet.port());
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace lb::test
