// Replicas on a memcached listener, with real memcached servers in three zones and
// pymemcache as the client: every key set through lb lands on two servers in two zones; with
// lb in zone a and read = "local", get, gets and a get of many keys (split across copies)
// read each key in zone a when it has a copy there and at its primary otherwise, counted
// at the servers; and a lost zone costs those reads nothing.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/python_client.h"

namespace lb {
namespace {

using namespace test;

constexpr int kKeys = 2000;
const std::vector<std::string> kZones = {"a", "a", "b", "b", "c", "c"};

// Sets kKeys keys ("k<i>" = "v<i>") through lb with pymemcache; the script's output.
CommandResult setThroughLb(uint16_t port) {
  return runPython(R"(
from pymemcache.client.base import Client
c = Client(('127.0.0.1', PORT), timeout=10)
for i in range()" + std::to_string(kKeys) + R"():
    assert c.set('k%d' % i, 'v%d' % i, noreply=False)
print('ok')
)",
                   port);
}

// Which keys each server holds, read at the servers: one line per server, the key numbers.
std::vector<std::vector<int>> holdersByServer(CacheFleet& fleet) {
  std::vector<std::vector<int>> out;
  for (int s = 0; s < fleet.size(); ++s) {
    const auto r = runPython(R"(
from pymemcache.client.base import Client
c = Client(('127.0.0.1', PORT), timeout=10)
keys = ['k%d' % i for i in range()" + std::to_string(kKeys) + R"()]
got = {}
for at in range(0, len(keys), 100):
    got.update(c.get_many(keys[at:at + 100]))
print(' '.join(k[1:] for k in got))
)",
                             fleet.server(s).port());
    std::vector<int> held;
    size_t start = 0;
    while (start < r.out.size()) {
      size_t end = r.out.find_first_of(" \n", start);
      if (end == std::string::npos) end = r.out.size();
      if (end > start) held.push_back(std::stoi(r.out.substr(start, end - start)));
      start = end + 1;
    }
    out.push_back(held);
  }
  return out;
}

TEST(MemcachedReplicasTest, EveryKeyLivesOnTwoServersInTwoZones) {
  CacheFleet fleet(CacheServer::kMemcached, 6);
  fleet.setZones(kZones);
  fleet.setSelector("ring_hash");
  ASSERT_TRUE(fleet.start("", "replicas = 2")) << fleet.output();
  const auto set = setThroughLb(fleet.port());
  ASSERT_EQ(set.out, "ok\n") << set.err;
  std::vector<std::vector<int>> servers_of(kKeys);
  const auto held = holdersByServer(fleet);
  for (int s = 0; s < fleet.size(); ++s)
    for (int k : held[s]) servers_of[k].push_back(s);
  for (int k = 0; k < kKeys; ++k) {
    ASSERT_EQ(servers_of[k].size(), 2u) << "k" << k;
    EXPECT_NE(kZones[servers_of[k][0]], kZones[servers_of[k][1]]) << "k" << k;
  }
}

// Keys read (get_hits) at server `s` since its stats were reset.
int hitsAt(CacheFleet& fleet, int s) {
  const auto r = runPython(R"(
from pymemcache.client.base import Client
c = Client(('127.0.0.1', PORT), timeout=10)
print(c.stats()[b'get_hits'])
)",
                           fleet.server(s).port());
  return r.out.empty() ? -1 : std::stoi(r.out);
}

TEST(MemcachedReplicasTest, LocalReadsOfGetGetsAndSplitGetsStayInLbsZone) {
  CacheFleet fleet(CacheServer::kMemcached, 6);
  fleet.setZones(kZones, "a");
  fleet.setSelector("rendezvous");
  ASSERT_TRUE(fleet.start("", "replicas = 2\nread = \"local\"")) << fleet.output();
  const auto set = setThroughLb(fleet.port());
  ASSERT_EQ(set.out, "ok\n") << set.err;
  for (int s = 0; s < fleet.size(); ++s)
    runPython("from pymemcache.client.base import Client\n"
              "Client(('127.0.0.1', PORT)).stats('reset')\n",
              fleet.server(s).port());
  // A third of the keys by get, a third by gets, a third by get of 50 keys at once.
  const auto read = runPython(R"(
from pymemcache.client.base import Client
c = Client(('127.0.0.1', PORT), timeout=10)
n = )" + std::to_string(kKeys) + R"(
bad = 0
third = n // 3
for i in range(third):
    bad += c.get('k%d' % i) != ('v%d' % i).encode()
for i in range(third, 2 * third):
    v, cas = c.gets('k%d' % i)
    bad += v != ('v%d' % i).encode() or cas is None
keys = ['k%d' % i for i in range(2 * third, n)]
for at in range(0, len(keys), 50):
    got = c.get_many(keys[at:at + 50])
    bad += sum(got.get(k) != ('v' + k[1:]).encode() for k in keys[at:at + 50])
print(bad)
)",
                              fleet.port());
  ASSERT_EQ(read.out, "0\n") << read.err;

  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back("k" + std::to_string(i));
  const auto copies = fleet.ringReplicas(keys);
  ASSERT_EQ(copies.size(), static_cast<size_t>(kKeys));
  for (const auto& key_copies : copies) ASSERT_EQ(key_copies.size(), 2u);
  const std::vector<int> expected = fleet.localReadsByServer(copies, "a");
  std::vector<int> counted;
  for (int s = 0; s < fleet.size(); ++s) counted.push_back(hitsAt(fleet, s));
  EXPECT_EQ(counted, expected);
}

TEST(MemcachedReplicasTest, ALostZoneCostsGetGetsAndSplitGetsNothing) {
  CacheFleet fleet(CacheServer::kMemcached, 6);
  fleet.setZones(kZones);
  fleet.setSelector("ring_hash");
  // Checks far apart: every read below happens before health could notice the loss.
  ASSERT_TRUE(fleet.start("", "replicas = 2\nhealth = { type = \"memcached\", interval = "
                              "\"60s\", timeout = \"1s\" }"))
      << fleet.output();
  const auto set = setThroughLb(fleet.port());
  ASSERT_EQ(set.out, "ok\n") << set.err;
  kill(fleet.server(0).pid(), SIGKILL);
  kill(fleet.server(1).pid(), SIGKILL);
  const auto read = runPython(R"(
from pymemcache.client.base import Client
c = Client(('127.0.0.1', PORT), timeout=10)
bad = errors = 0
n = )" + std::to_string(kKeys) + R"(
for i in range(n):
    try:
        if i % 2:
            v, cas = c.gets('k%d' % i)
        else:
            v = c.get('k%d' % i)
        bad += v != ('v%d' % i).encode()
    except Exception:
        errors += 1
keys = ['k%d' % i for i in range(n)]
for at in range(0, n, 50):
    try:
        got = c.get_many(keys[at:at + 50])
        bad += sum(got.get(k) != ('v' + k[1:]).encode() for k in keys[at:at + 50])
    except Exception:
        errors += 1
print(bad, errors)
)",
                              fleet.port());
  EXPECT_EQ(read.out, "0 0\n") << read.err;
}

}  // namespace
}  // namespace lb
