// Replicas on a redis listener, with real redis-servers in three zones: every key written
// through lb lands on two servers in two zones, and losing a whole zone (both its servers
// SIGKILLed) under a read load costs the clients nothing, before health notices and after.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/health_harness.h"
#include "tests/support/python_client.h"
#include "tests/support/redis_keys.h"
#include "tests/support/temp_dir.h"

namespace lb {
namespace {

using namespace test;

constexpr int kKeys = 10000;
const std::vector<std::string> kZones = {"a", "a", "b", "b", "c", "c"};

// The keys a server holds, read at the server itself.
std::set<std::string> keysAt(CacheServer& s) {
  const auto r = runCommand({"redis-cli", "-p", std::to_string(s.port()), "--scan"}, 30s);
  std::set<std::string> keys;
  size_t start = 0;
  while (start < r.out.size()) {
    const size_t end = r.out.find('\n', start);
    keys.insert(r.out.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  keys.erase("");
  return keys;
}

// 6 redis-servers in zones a, a, b, b, c, c behind lb with replicas = 2 and redis checks.
class RedisReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_.setZones(kZones);
    fleet_.setSelector("ring_hash");
    ASSERT_TRUE(fleet_.start("", "replicas = 2\nhealth = { type = \"redis\", interval = "
                                 "\"500ms\", timeout = \"300ms\", rise = 1, fall = 3 }"))
        << fleet_.output();
    TcpClient c;
    ASSERT_TRUE(c.connect(fleet_.port()));
    ASSERT_TRUE(setKeys(c, kKeys));
  }

  CacheFleet fleet_{CacheServer::kRedis, 6};
};

TEST_F(RedisReplicasTest, EveryKeyLivesOnTwoServersInTwoZones) {
  std::map<std::string, std::vector<int>> holders;
  for (int s = 0; s < fleet_.size(); ++s)
    for (const std::string& k : keysAt(fleet_.server(s))) holders[k].push_back(s);
  ASSERT_EQ(holders.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, servers] : holders) {
    ASSERT_EQ(servers.size(), 2u) << key;
    EXPECT_NE(kZones[servers[0]], kZones[servers[1]]) << key;
  }
}

TEST_F(RedisReplicasTest, LosingAZoneUnderReadLoadCostsNoReadItsValue) {
  TempDir dir("redis_replicas");
  ASSERT_TRUE(dir.ok());
  const std::string progress = dir.path() + "/progress", stop = dir.path() + "/stop";
  // A client reading every key again and again with redis-py (pipelined GETs), checking each
  // value, until told to stop; then two more passes. Bounded: 2000 passes at most.
  std::string script = R"(
import json, os, redis
r = redis.Redis(host='127.0.0.1', port=PORT, socket_timeout=20)
errors = wrong = reads = passes = after = 0
for _ in range(2000):
    pipe = r.pipeline(transaction=False)
    for i in range(KEYS):
        pipe.get('user:%d' % i)
    try:
        values = pipe.execute(raise_on_error=False)
    except Exception:
        errors += KEYS
        values = []
    for i, v in enumerate(values):
        if isinstance(v, Exception):
            errors += 1
        elif v != ('value-%d' % (i * 7919)).encode():
            wrong += 1
    reads += len(values)
    passes += 1
    with open('PROGRESS', 'w') as f:
        f.write(str(passes))
    if os.path.exists('STOP'):
        after += 1
        if after >= 2:
            break
print(json.dumps({'errors': errors, 'wrong': wrong, 'reads': reads, 'passes': passes}))
)";
  for (auto [from, to] : {std::pair<std::string, std::string>{"PORT", std::to_string(fleet_.port())},
                          {"KEYS", std::to_string(kKeys)}, {"PROGRESS", progress}, {"STOP", stop}})
    for (size_t at; (at = script.find(from)) != std::string::npos;) script.replace(at, from.size(), to);
  Process reader({"/usr/bin/python3", "-c", script});
  auto passesDone = [&] {
    std::ifstream in(progress);
    int n = 0;
    in >> n;
    return n;
  };
  ASSERT_TRUE(waitUntil([&] { return passesDone() >= 1; }, 60s)) << reader.output();

  // Zone b goes: both its servers at once.
  kill(fleet_.server(2).pid(), SIGKILL);
  kill(fleet_.server(3).pid(), SIGKILL);
  const int at_kill = passesDone();
  ASSERT_TRUE(waitUntil(
      [&] {
        return !backendHealth(fleet_.adminPort(), "fleet", CacheFleet::name(2)).healthy &&
               !backendHealth(fleet_.adminPort(), "fleet", CacheFleet::name(3)).healthy;
      },
      30s));
  const int at_down = passesDone();
  std::ofstream(stop) << "stop";
  ASSERT_TRUE(reader.waitExit(120s).has_value());
  const std::string out = reader.output();
  const auto result = testjson::parse(out.substr(out.rfind('{')));
  ASSERT_TRUE(result) << out;
  EXPECT_EQ((*result)["errors"].number, 0) << out;
  EXPECT_EQ((*result)["wrong"].number, 0) << out;
  // Reads ran while health had not noticed (the copies answered for the dead servers'
  // keys), and after it had.
  EXPECT_GT(at_down, at_kill) << "no pass between the kill and health's verdict";
  EXPECT_GE((*result)["passes"].number, at_down + 2);
  const std::string metrics = fleet_.metrics();
  EXPECT_NE(metrics.find("lb_replica_reads_total{cluster=\"fleet\",result=\"replica\"}"),
            std::string::npos);
  EXPECT_EQ(metrics.find("lb_replica_reads_total{cluster=\"fleet\",result=\"replica\"} 0\n"),
            std::string::npos)
      << "no read was answered by a replica";
}

// MSET and DEL of several keys reach every copy of each key, not only its first host.
TEST(RedisReplicasSplitWritesTest, MsetAndDelOfSeveralKeysReachEveryCopy) {
  CacheFleet fleet(CacheServer::kRedis, 6);
  fleet.setZones(kZones);
  fleet.setSelector("maglev");
  ASSERT_TRUE(fleet.start("", "replicas = 2")) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  std::vector<std::string> mset = {"MSET"}, del = {"DEL"};
  for (int i = 0; i < 200; ++i) {
    mset.insert(mset.end(), {keyOf(i), valueOf(i)});
    if (i % 2 == 0) del.push_back(keyOf(i));
  }
  // One command of many arguments, as RESP.
  auto call = [&](const std::vector<std::string>& args) {
    std::string wire = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) wire += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return c.send(wire) ? readRedisReply(c) : std::nullopt;
  };
  ASSERT_EQ(call(mset), "OK");
  // Each key on two servers in two zones, set by the one MSET.
  auto holders = [&] {
    std::map<std::string, std::vector<int>> by_key;
    for (int s = 0; s < fleet.size(); ++s)
      for (const std::string& k : keysAt(fleet.server(s))) by_key[k].push_back(s);
    return by_key;
  };
  // The copies past the first host are not waited for: poll until they are all in.
  std::map<std::string, std::vector<int>> held;
  ASSERT_TRUE(waitUntil(
      [&] {
        held = holders();
        if (held.size() != 200u) return false;
        for (const auto& [k, s] : held)
          if (s.size() != 2u) return false;
        return true;
      },
      10s));
  for (const auto& [k, s] : held) EXPECT_NE(kZones[s[0]], kZones[s[1]]) << k;
  // DEL answers with the first hosts' count, and the keys go from every copy.
  EXPECT_EQ(call(del), "100");
  ASSERT_TRUE(waitUntil([&] { return holders().size() == 100u; }, 10s));
  for (const auto& [k, s] : holders()) EXPECT_EQ(s.size(), 2u) << k;
}

// An MGET of keys on a lost zone's servers, sent before health could notice: each part that
// failed is read at its keys' next copies, and the client gets every value.
TEST(RedisReplicasZoneLossTest, AnMgetSplitOverALostZoneReadsEveryValue) {
  CacheFleet fleet(CacheServer::kRedis, 6);
  fleet.setZones(kZones);
  fleet.setSelector("rendezvous");
  ASSERT_TRUE(fleet.start("", "replicas = 2\nhealth = { type = \"redis\", interval = \"60s\", "
                              "timeout = \"1s\" }"))
      << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(setKeys(c, 2000));
  kill(fleet.server(4).pid(), SIGKILL);
  kill(fleet.server(5).pid(), SIGKILL);
  const auto r = runPython(R"(
import redis
r = redis.Redis(host='127.0.0.1', port=PORT, socket_timeout=20)
bad = errors = 0
for at in range(0, 2000, 50):
    keys = ['user:%d' % i for i in range(at, at + 50)]
    try:
        values = r.mget(keys)
        bad += sum(v != ('value-%d' % (i * 7919)).encode() for i, v in zip(range(at, at + 50), values))
    except Exception:
        errors += 1
print(bad, errors)
)",
                           fleet.port());
  EXPECT_EQ(r.out, "0 0\n") << r.err;
}

// GET calls a server has counted since its stats were reset (INFO commandstats).
int getCalls(CacheServer& s) {
  const auto r = runCommand({"redis-cli", "-p", std::to_string(s.port()), "info", "commandstats"});
  const size_t at = r.out.find("cmdstat_get:calls=");
  return at == std::string::npos ? 0 : std::stoi(r.out.substr(at + 18));
}

// With lb in zone a and read = "local", a key with a copy in zone a is read there, any other
// key at its primary: counted at the servers themselves.
TEST(RedisLocalReadsTest, AKeyWithACopyInLbsZoneIsReadThereAndTheOthersAtThePrimary) {
  constexpr int kLocalKeys = 2000;
  CacheFleet fleet(CacheServer::kRedis, 6);
  fleet.setZones(kZones, "a");
  fleet.setSelector("maglev");
  ASSERT_TRUE(fleet.start("", "replicas = 2\nread = \"local\"")) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(setKeys(c, kLocalKeys));
  for (int s = 0; s < fleet.size(); ++s)
    runCommand({"redis-cli", "-p", std::to_string(fleet.server(s).port()), "config", "resetstat"});

  std::vector<std::string> gets;
  for (int i = 0; i < kLocalKeys; ++i) gets.push_back(redisEncode({"GET", keyOf(i)}));
  const auto replies = pipeline(c, gets);
  ASSERT_EQ(replies.size(), static_cast<size_t>(kLocalKeys));
  for (int i = 0; i < kLocalKeys; ++i) ASSERT_EQ(replies[i].text, valueOf(i)) << keyOf(i);

  std::vector<std::string> keys;
  for (int i = 0; i < kLocalKeys; ++i) keys.push_back(keyOf(i));
  const auto copies = fleet.ringReplicas(keys);
  ASSERT_EQ(copies.size(), static_cast<size_t>(kLocalKeys));
  for (const auto& key_copies : copies) ASSERT_EQ(key_copies.size(), 2u);
  int local = 0;
  const std::vector<int> expected = fleet.localReadsByServer(copies, "a", &local);
  std::vector<int> counted;
  for (int s = 0; s < fleet.size(); ++s) counted.push_back(getCalls(fleet.server(s)));
  EXPECT_EQ(counted, expected);
  // Two copies in three zones: about two keys in three have one in zone a.
  EXPECT_GT(local, kLocalKeys / 2);
  const std::string metrics = fleet.metrics();
  EXPECT_NE(metrics.find("reason=\"local_zone\"} "), std::string::npos);
  EXPECT_NE(metrics.find("lb_cross_zone_requests_total{cluster=\"fleet\"}"), std::string::npos);
}

}  // namespace
}  // namespace lb
