// The redis read-through (lb/proxy/cache/handover_reads.h), live: four redis-servers behind lb
// with a handover window, keys set through lb, a fifth server added by a reload; a read of a
// moved key misses at its new owner, is read from its previous one, answered warm and copied
// over with its remaining TTL, and writes and deletes after the change win over the copy.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/handover_metrics.h"
#include "tests/support/redis_keys.h"

namespace lb::test {
namespace {

constexpr const char* kHandover = "handover = { window = \"60s\", copy_ttl = \"10m\" }";

class RedisReadThroughTest : public ::testing::Test {
 protected:
  static constexpr int kKeys = 2000;

  // Four redis-servers with a handover, kKeys keys set through lb, a fifth added by a
  // reload: each key's owner before the change (before_), and the keys the fifth owns now
  // (moved_), at least six of them.
  void grown(const std::string& listener_extra = "") {
    ASSERT_TRUE(fleet_.start(listener_extra, kHandover)) << fleet_.output();
    TcpClient c;
    ASSERT_TRUE(c.connect(fleet_.port()));
    ASSERT_TRUE(setKeys(c, kKeys));
    std::vector<std::string> keys;
    for (int i = 0; i < kKeys; ++i) keys.push_back(keyOf(i));
    before_ = fleet_.ringOwners(keys);
    ASSERT_TRUE(fleet_.grow()) << fleet_.output();
    moved_ = keysOwnedBy(fleet_, kKeys, "s5");
    ASSERT_GE(moved_.size(), 6u);
  }
  // The server that owned key k before the change.
  CacheServer& previousOwner(int k) {
    return fleet_.server(fleet_.indexOf(before_[static_cast<size_t>(k)]));
  }
  // The first moved key, its previous owner frozen (SIGSTOP; SIGCONT in TearDown), and a
  // client connected to lb.
  int frozenMovedKey(TcpClient& client) {
    const int k = moved_[0];
    frozen_ = &previousOwner(k);
    EXPECT_EQ(kill(frozen_->pid(), SIGSTOP), 0);
    EXPECT_TRUE(client.connect(fleet_.port()));
    return k;
  }
  void thaw() {
    if (frozen_ != nullptr) kill(frozen_->pid(), SIGCONT);
    frozen_ = nullptr;
  }
  void TearDown() override { thaw(); }

  CacheFleet fleet_{CacheServer::kRedis, 4};
  std::vector<std::string> before_;
  std::vector<int> moved_;
  CacheServer* frozen_ = nullptr;
};

// Acceptance: 20,000 keys set through lb before a fifth server joins; read once after, at
// least 99.9% hit; the keys the fifth server now owns hold the value read, with a TTL
// between 0 and the original hour.
TEST_F(RedisReadThroughTest, MovedKeysReadWarmAndAreCopiedWithTheirTtl) {
  constexpr int kKeys = 20000;
  CacheFleet& fleet = fleet_;
  ASSERT_TRUE(fleet.start("", kHandover)) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(setKeys(c, kKeys));
  ASSERT_TRUE(fleet.grow()) << fleet.output();
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  const int hits = hitsOf(after, kKeys);
  EXPECT_GE(hits, kKeys * 999 / 1000) << hits << " of " << kKeys;
  const std::string m = handoverSettled(fleet);

  // The fifth server holds the copies: each with the value lb answered and a TTL left.
  TcpClient fifth;
  ASSERT_TRUE(fifth.connect(fleet.server(4).port()));
  const auto size = redisCall(fifth, {"DBSIZE"});
  ASSERT_TRUE(size);
  const int copied = std::stoi(*size);
  EXPECT_GT(copied, kKeys / 10) << "a fifth of the keys move to a fifth server";
  int checked = 0;
  for (int i = 0; i < kKeys && checked < 200; ++i) {
    const auto v = redisCall(fifth, {"GET", keyOf(i)});
    if (!v) continue;
    EXPECT_EQ(*v, valueOf(i)) << keyOf(i);
    const auto ttl = redisCall(fifth, {"PTTL", keyOf(i)});
    ASSERT_TRUE(ttl);
    EXPECT_GT(std::stoll(*ttl), 0) << keyOf(i);
    EXPECT_LE(std::stoll(*ttl), 3600 * 1000) << keyOf(i);
    ++checked;
  }
  EXPECT_EQ(checked, 200);
  EXPECT_GE(handoverCount(m, "reads", "hit"), copied) << m;
  EXPECT_EQ(handoverCount(m, "copies", "stored"), copied) << m;
}

// Without a handover the same change costs the moved keys: the figure the read-through
// answers (about 80% of reads hit).
TEST_F(RedisReadThroughTest, WithoutAHandoverTheMovedKeysMiss) {
  constexpr int kKeys = 5000;
  CacheFleet& fleet = fleet_;
  ASSERT_TRUE(fleet.start()) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(setKeys(c, kKeys));
  ASSERT_TRUE(fleet.grow()) << fleet.output();
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  const int hits = hitsOf(after, kKeys);
  EXPECT_LT(hits, kKeys * 9 / 10);
  EXPECT_GT(hits, kKeys * 6 / 10);
}

// A key set through lb after the change reads back its new value; a key deleted through lb
// after the change reads as a miss, not as the previous owner's copy, and is gone there too.
TEST_F(RedisReadThroughTest, WritesAndDeletesAfterTheChangeWinOverThePreviousOwner) {
  ASSERT_NO_FATAL_FAILURE(grown());
  CacheFleet& fleet = fleet_;
  const std::vector<int>& moved = moved_;

  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  const int set_key = moved[0], del_key = moved[1], mset_key = moved[2], unlink_key = moved[3];
  EXPECT_EQ(redisCall(after, {"SET", keyOf(set_key), "new"}), "OK");
  EXPECT_EQ(redisCall(after, {"GET", keyOf(set_key)}), "new");
  EXPECT_EQ(redisCall(after, {"DEL", keyOf(del_key)}), "0") << "the new owner had no copy yet";
  EXPECT_EQ(redisCall(after, {"GET", keyOf(del_key)}), std::nullopt);
  EXPECT_EQ(redisCall(after, {"MSET", keyOf(mset_key), "m", "unmoved-key", "u"}), "OK");
  EXPECT_EQ(redisCall(after, {"GET", keyOf(mset_key)}), "m");
  EXPECT_EQ(redisCall(after, {"UNLINK", keyOf(unlink_key), keyOf(moved[4])}), "0");
  EXPECT_EQ(redisCall(after, {"GET", keyOf(unlink_key)}), std::nullopt);
  EXPECT_EQ(redisCall(after, {"GET", keyOf(moved[4])}), std::nullopt);
  // An untouched moved key still reads warm.
  EXPECT_EQ(redisCall(after, {"GET", keyOf(moved[5])}), valueOf(moved[5]));

  // The previous owners no longer hold what was written or deleted through lb.
  const std::string m = handoverSettled(fleet, 5);
  EXPECT_GE(handoverCount(m, "deletes", "ok"), 5) << m;
  for (int k : {set_key, del_key, mset_key, unlink_key, moved[4]}) {
    TcpClient direct;
    ASSERT_TRUE(direct.connect(previousOwner(k).port()));
    EXPECT_EQ(redisCall(direct, {"EXISTS", keyOf(k)}), "0") << keyOf(k);
  }
}

// A write racing a handover read wins: the copy is SET .. NX. The previous owner is frozen
// while lb reads from it, the new owner is written meanwhile, and the late copy stores
// nothing.
TEST_F(RedisReadThroughTest, ACopyNeverOverwritesAConcurrentWrite) {
  ASSERT_NO_FATAL_FAILURE(grown());
  CacheFleet& fleet = fleet_;
  TcpClient reader;
  const int k = frozenMovedKey(reader);
  ASSERT_TRUE(reader.send(redisEncode({"GET", keyOf(k)})));
  // The new owner has answered lb's GET (a miss: it is empty) once it counts one; the read
  // then waits at the frozen previous owner, and the write below lands before its copy.
  TcpClient fifth;
  ASSERT_TRUE(fifth.connect(fleet.server(4).port()));
  ASSERT_TRUE(waitUntil(
      [&] {
        const auto stats = redisCall(fifth, {"INFO", "commandstats"});
        return stats && stats->find("cmdstat_get:calls=1,") != std::string::npos;
      },
      10s, 20ms));
  EXPECT_EQ(redisCall(fifth, {"SET", keyOf(k), "racer"}), "OK");
  thaw();
  const auto got = readResp(reader, 10s);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->text, valueOf(k)) << "the read began before the write";
  const std::string m = handoverSettled(fleet);
  EXPECT_EQ(handoverCount(m, "copies", "not_stored"), 1) << m;
  EXPECT_EQ(redisCall(fifth, {"GET", keyOf(k)}), "racer");
  EXPECT_EQ(redisCall(reader, {"GET", keyOf(k)}), "racer");
}

// A previous owner that does not answer costs that read a miss, never the client's
// connection: the owner's nil comes back once the response timeout passes.
TEST_F(RedisReadThroughTest, AFrozenPreviousOwnerCostsAMissNotTheConnection) {
  ASSERT_NO_FATAL_FAILURE(grown("timeouts = { response = \"300ms\" }"));
  CacheFleet& fleet = fleet_;
  TcpClient reader;
  const int k = frozenMovedKey(reader);
  bool failed = false;
  EXPECT_EQ(redisCall(reader, {"GET", keyOf(k)}, &failed, 10s), std::nullopt);
  EXPECT_FALSE(failed) << "a nil, not silence";
  EXPECT_EQ(redisCall(reader, {"PING"}), "PONG");
  thaw();
  const std::string m = fleet.metrics();
  EXPECT_GE(handoverCount(m, "reads", "error"), 1) << m;
}

// MGET reads each key its owner misses through: split across old and new owners (a moved
// key asked twice, a moved key nobody has), or all at the new owner, every value comes back
// in the client's order as if nothing had moved, and the moved ones are copied over.
TEST_F(RedisReadThroughTest, AnMgetReadsEachMovedKeyThrough) {
  ASSERT_NO_FATAL_FAILURE(grown());
  CacheFleet& fleet = fleet_;
  const std::vector<int>& moved = moved_;
  ASSERT_GE(moved.size(), 9u);
  std::vector<int> kept;
  for (int i = 0; i < kKeys && kept.size() < 4; ++i)
    if (std::find(moved.begin(), moved.end(), i) == moved.end()) kept.push_back(i);
  // A key never set whose owner is the fifth server: read through, and missed there too.
  std::vector<std::string> candidates;
  for (int i = 0; i < 100; ++i) candidates.push_back(keyOf(kKeys + i));
  const auto owners = fleet.ringOwners(candidates);
  std::string absent;
  for (size_t i = 0; absent.empty() && i < candidates.size(); ++i)
    if (owners[i] == "s5") absent = candidates[i];
  ASSERT_FALSE(absent.empty());

  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  const std::vector<int> mixed = {moved[0], kept[0], moved[1], kept[1], moved[2],
                                  kept[2],  moved[0], kept[3], moved[3]};
  std::string mget = "*" + std::to_string(mixed.size() + 2) + "\r\n$4\r\nMGET\r\n";
  for (int k : mixed) mget += "$" + std::to_string(keyOf(k).size()) + "\r\n" + keyOf(k) + "\r\n";
  mget += "$" + std::to_string(absent.size()) + "\r\n" + absent + "\r\n";
  ASSERT_TRUE(after.send(mget));
  auto reply = readResp(after);
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->items.size(), mixed.size() + 1);
  for (size_t i = 0; i < mixed.size(); ++i)
    EXPECT_EQ(reply->items[i].text, valueOf(mixed[i])) << "key " << keyOf(mixed[i]);
  EXPECT_TRUE(reply->items.back().nil);

  // Every key at the new owner: one owner, read through all the same.
  const std::vector<int> fifth = {moved[4], moved[5], moved[6]};
  ASSERT_TRUE(after.send(redisEncode({"MGET", keyOf(fifth[0]), keyOf(fifth[1]), keyOf(fifth[2])})));
  reply = readResp(after);
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->items.size(), 3u);
  for (size_t i = 0; i < fifth.size(); ++i) EXPECT_EQ(reply->items[i].text, valueOf(fifth[i]));

  const std::string m = handoverSettled(fleet);
  EXPECT_GE(handoverCount(m, "reads", "hit"), 8) << m;
  EXPECT_GE(handoverCount(m, "reads", "miss"), 1) << m;
  TcpClient direct;
  ASSERT_TRUE(direct.connect(fleet.server(4).port()));
  for (int k : {moved[0], moved[3], moved[6]})
    EXPECT_EQ(redisCall(direct, {"GET", keyOf(k)}), valueOf(k)) << "copied to the new owner";
}

// A previous owner that does not answer an MGET's read costs that key a nil, never the
// others' values nor the connection.
TEST_F(RedisReadThroughTest, AnMgetWhosePreviousOwnerIsFrozenGetsANilForThatKeyOnly) {
  ASSERT_NO_FATAL_FAILURE(grown("timeouts = { response = \"300ms\" }"));
  CacheFleet& fleet = fleet_;
  TcpClient reader;
  const int k = frozenMovedKey(reader);
  int other = -1;
  for (int i = 0; i < kKeys && other < 0; ++i)
    if (&previousOwner(i) != frozen_) other = i;
  ASSERT_GE(other, 0);
  ASSERT_TRUE(reader.send(redisEncode({"MGET", keyOf(other), keyOf(k)})));
  const auto reply = readResp(reader, 10s);
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->items.size(), 2u);
  EXPECT_EQ(reply->items[0].text, valueOf(other));
  EXPECT_TRUE(reply->items[1].nil) << reply->items[1].text;
  EXPECT_EQ(redisCall(reader, {"PING"}), "PONG");
  thaw();
  EXPECT_GE(handoverCount(fleet.metrics(), "reads", "error"), 1);
}

}  // namespace
}  // namespace lb::test
