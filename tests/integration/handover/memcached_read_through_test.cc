// The memcached read-through (lb/proxy/cache/handover_reads.h), live: memcached servers behind
// lb with a handover window. A fifth server added by a reload: a get of a moved key misses
// there, is read from its previous owner with mg (value, flags, remaining TTL), answered as
// the get's VALUE item and added to the new owner with its flags and exptime. A server that
// crashed and came back empty: after health brings it back, its keys read warm from the host
// that served them while it was down.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/handover_metrics.h"

namespace lb::test {
namespace {

constexpr const char* kHandover = "handover = { window = \"60s\", copy_ttl = \"10m\" }";

std::string keyOf(int i) { return "item:" + std::to_string(i); }
std::string valueOf(int i) { return "payload-" + std::to_string(i * 7919); }
uint32_t flagsOf(int i) { return static_cast<uint32_t>(i * 37 % 65536); }

// What a get of key i answers when it hits.
std::string hitOf(int i) {
  return "VALUE " + keyOf(i) + " " + std::to_string(flagsOf(i)) + " " +
         std::to_string(valueOf(i).size()) + "\r\n" + valueOf(i) + "\r\nEND\r\n";
}

// Sends `lines` on `c` in batches and returns each reply, read up to the `until` that ends it
// (one per line).
std::vector<std::string> pipeline(TcpClient& c, const std::vector<std::string>& lines,
                                  const std::vector<std::string>& ends) {
  std::vector<std::string> out;
  constexpr size_t kBatch = 200;
  for (size_t at = 0; at < lines.size(); at += kBatch) {
    std::string batch;
    const size_t end = std::min(lines.size(), at + kBatch);
    for (size_t i = at; i < end; ++i) batch += lines[i];
    if (!c.send(batch)) return out;
    for (size_t i = at; i < end; ++i) {
      size_t stop = std::string::npos;
      while (true) {
        for (const auto& e : ends) {
          const size_t f = c.buffer().find(e);
          if (f != std::string::npos && (f == 0 || c.buffer()[f - 1] == '\n'))
            stop = std::min(stop, f + e.size());
        }
        if (stop != std::string::npos) break;
        if (!c.readAtLeast(c.buffer().size() + 1, 20s)) return out;
      }
      out.push_back(c.take(stop));
    }
  }
  return out;
}

// Sets keys [0, n) through lb with their flags and an exptime of an hour.
bool setKeys(TcpClient& c, int n) {
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i)
    lines.push_back("set " + keyOf(i) + " " + std::to_string(flagsOf(i)) + " 3600 " +
                    std::to_string(valueOf(i).size()) + "\r\n" + valueOf(i) + "\r\n");
  const auto replies = pipeline(c, lines, {"STORED\r\n", "NOT_STORED\r\n", "ERROR\r\n"});
  if (replies.size() != lines.size()) return false;
  for (const auto& r : replies)
    if (r != "STORED\r\n") return false;
  return true;
}

// Gets keys [0, n) once through lb, one get each: how many came back whole.
int hitsOf(TcpClient& c, int n) {
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) lines.push_back("get " + keyOf(i) + "\r\n");
  const auto replies = pipeline(c, lines, {"END\r\n", "ERROR\r\n"});
  int hits = 0;
  for (size_t i = 0; i < replies.size(); ++i) hits += replies[i] == hitOf(static_cast<int>(i));
  return hits;
}

// Four memcached behind lb with a handover, keys [0, n) set through lb, then a fifth server
// added by a reload.
void grownBy(CacheFleet& fleet, int n) {
  ASSERT_TRUE(fleet.start("", kHandover)) << fleet.output();
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  ASSERT_TRUE(setKeys(c, n));
  ASSERT_TRUE(fleet.grow()) << fleet.output();
}

// The keys among [0, n) the fifth server owns now, as /ring names them.
std::vector<int> keysAtFifth(CacheFleet& fleet, int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(keyOf(i));
  const auto owners = fleet.ringOwners(keys);
  std::vector<int> moved;
  for (int i = 0; i < n; ++i)
    if (owners[static_cast<size_t>(i)] == "s5") moved.push_back(i);
  return moved;
}

// One text command straight to a server, its reply up to `end`.
std::string direct(CacheServer& server, const std::string& line, const std::string& end) {
  TcpClient c;
  if (!c.connect(server.port()) || !c.send(line) || !c.readUntil(end, 5s)) return "";
  return c.buffer();
}

// Acceptance: keys set through lb with flags and an exptime before a fifth server joins; each
// read once after: at least 99.9% hit, answered with their flags, and the keys the fifth now
// holds were added with the same flags and an exptime left of at most the original hour.
TEST(MemcachedReadThroughTest, MovedKeysReadWarmWithTheirFlagsAndExptime) {
  constexpr int kKeys = 5000;
  CacheFleet fleet(CacheServer::kMemcached, 4);
  ASSERT_NO_FATAL_FAILURE(grownBy(fleet, kKeys));
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  const int hits = hitsOf(after, kKeys);
  EXPECT_GE(hits, kKeys * 999 / 1000) << hits << " of " << kKeys;

  const std::string m = handoverSettled(fleet);
  const double copied = handoverCount(m, "copies", "stored");
  EXPECT_GT(copied, kKeys / 10) << m;
  int checked = 0;
  for (int i = 0; i < kKeys && checked < 100; ++i) {
    const std::string got = direct(fleet.server(4), "mg " + keyOf(i) + " v f t\r\n", "\r\n");
    if (got.rfind("EN", 0) == 0) continue;
    // "VA <size> f<flags> t<ttl>"
    EXPECT_NE(got.find(" f" + std::to_string(flagsOf(i)) + " "), std::string::npos) << got;
    const size_t t = got.find(" t");
    ASSERT_NE(t, std::string::npos) << got;
    const long ttl = atol(got.c_str() + t + 2);
    EXPECT_GT(ttl, 0) << got;
    EXPECT_LE(ttl, 3600) << got;
    ++checked;
  }
  EXPECT_EQ(checked, 100);
}

// A set after the change reads back its new value; a delete after the change reads as a
// miss, not as the previous owner's copy.
TEST(MemcachedReadThroughTest, WritesAndDeletesAfterTheChangeWinOverThePreviousOwner) {
  constexpr int kKeys = 2000;
  CacheFleet fleet(CacheServer::kMemcached, 4);
  ASSERT_NO_FATAL_FAILURE(grownBy(fleet, kKeys));
  const std::vector<int> moved = keysAtFifth(fleet, kKeys);
  ASSERT_GE(moved.size(), 3u);

  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  ASSERT_TRUE(after.send("set " + keyOf(moved[0]) + " 7 0 3\r\nnew\r\n"));
  ASSERT_TRUE(after.readUntil("\r\n"));
  EXPECT_EQ(after.take(after.buffer().size()), "STORED\r\n");
  ASSERT_TRUE(after.send("get " + keyOf(moved[0]) + "\r\n"));
  ASSERT_TRUE(after.readUntil("END\r\n"));
  EXPECT_EQ(after.take(after.buffer().size()),
            "VALUE " + keyOf(moved[0]) + " 7 3\r\nnew\r\nEND\r\n");
  ASSERT_TRUE(after.send("delete " + keyOf(moved[1]) + "\r\n"));
  ASSERT_TRUE(after.readUntil("\r\n"));
  EXPECT_EQ(after.take(after.buffer().size()), "NOT_FOUND\r\n") << "the new owner had no copy";
  ASSERT_TRUE(after.send("get " + keyOf(moved[1]) + "\r\n"));
  ASSERT_TRUE(after.readUntil("END\r\n"));
  EXPECT_EQ(after.take(after.buffer().size()), "END\r\n");
  // An untouched moved key still reads warm.
  ASSERT_TRUE(after.send("get " + keyOf(moved[2]) + "\r\n"));
  ASSERT_TRUE(after.readUntil("END\r\n"));
  EXPECT_EQ(after.take(after.buffer().size()), hitOf(moved[2]));
}

// gets, gat and mg of a moved key read through too, and are answered by the new owner once
// the copy is there, as if the key had been there all along: gets with the new owner's CAS
// unique (a cas with it stores), gat with the exptime it set there, mg with whatever its
// flags ask of the new owner (quiet or not).
TEST(MemcachedReadThroughTest, GetsGatAndMgAreAnsweredByTheNewOwnerOnceCopied) {
  constexpr int kKeys = 2000;
  CacheFleet fleet(CacheServer::kMemcached, 4);
  ASSERT_NO_FATAL_FAILURE(grownBy(fleet, kKeys));
  const std::vector<int> moved = keysAtFifth(fleet, kKeys);
  ASSERT_GE(moved.size(), 5u);
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  auto ask = [&](const std::string& line, const std::string& end) {
    if (!after.send(line) || !after.readUntil(end, 5s)) return std::string("(no reply)");
    return after.take(after.buffer().size());
  };
  CacheServer& fifth = fleet.server(4);

  const int g = moved[0];
  const std::string gets = ask("gets " + keyOf(g) + "\r\n", "END\r\n");
  const std::string head = "VALUE " + keyOf(g) + " " + std::to_string(flagsOf(g)) + " " +
                           std::to_string(valueOf(g).size()) + " ";
  ASSERT_EQ(gets.rfind(head, 0), 0u) << gets;
  EXPECT_EQ(gets, direct(fifth, "gets " + keyOf(g) + "\r\n", "END\r\n"))
      << "the new owner's item, its CAS unique included";
  const std::string cas = gets.substr(head.size(), gets.find("\r\n") - head.size());
  EXPECT_EQ(ask("cas " + keyOf(g) + " 1 0 1 " + cas + "\r\nx\r\n", "\r\n"), "STORED\r\n");

  const int t = moved[1];
  EXPECT_EQ(ask("gat 100 " + keyOf(t) + "\r\n", "END\r\n"), hitOf(t));
  const std::string ttl = direct(fifth, "mg " + keyOf(t) + " t\r\n", "\r\n");
  ASSERT_EQ(ttl.rfind("HD t", 0), 0u) << ttl;
  EXPECT_GT(atol(ttl.c_str() + 4), 0) << ttl;
  EXPECT_LE(atol(ttl.c_str() + 4), 100) << ttl << ": the exptime gat set at the new owner";

  const int m = moved[2];
  const std::string flags = " v f c k Oab12\r\n";
  const std::string mg = ask("mg " + keyOf(m) + flags, valueOf(m) + "\r\n");
  EXPECT_EQ(mg.rfind("VA " + std::to_string(valueOf(m).size()) + " ", 0), 0u) << mg;
  EXPECT_EQ(mg, direct(fifth, "mg " + keyOf(m) + flags, valueOf(m) + "\r\n"));
  EXPECT_EQ(ask("mg " + keyOf(moved[3]) + "\r\n", "\r\n"), "HD\r\n");
  EXPECT_EQ(ask("mg " + keyOf(moved[4]) + " v q\r\nmn\r\n", "MN\r\n"),
            "VA " + std::to_string(valueOf(moved[4]).size()) + "\r\n" + valueOf(moved[4]) +
                "\r\nMN\r\n")
      << "a quiet mg's hit is answered";

  const std::string metrics = handoverSettled(fleet);
  EXPECT_GE(handoverCount(metrics, "reads", "hit"), 5) << metrics;
  EXPECT_GE(handoverCount(metrics, "copies", "stored"), 5) << metrics;
}

// A get of several keys split across old and new owners: each key its owner misses is read
// through, and the client gets every hit in the order of its keys (a key asked twice, twice),
// its flags kept, as if nothing had moved; the moved keys are copied to the new owner. A get
// whose keys all have the new owner is read through the same way, and so is a gets, each
// item answered by the new owner with its CAS unique.
TEST(MemcachedReadThroughTest, AGetOfSeveralKeysReadsEachMovedKeyThrough) {
  constexpr int kKeys = 2000;
  CacheFleet fleet(CacheServer::kMemcached, 4);
  ASSERT_NO_FATAL_FAILURE(grownBy(fleet, kKeys));
  const std::vector<int> moved = keysAtFifth(fleet, kKeys);
  ASSERT_GE(moved.size(), 12u);
  std::vector<int> kept;
  for (int i = 0; i < kKeys && kept.size() < 10; ++i)
    if (std::find(moved.begin(), moved.end(), i) == moved.end()) kept.push_back(i);
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  auto get = [&](const std::vector<int>& keys, const std::string& extra) {
    std::string line = "get";
    for (int k : keys) line += " " + keyOf(k);
    if (!after.send(line + extra + "\r\n") || !after.readUntil("END\r\n", 5s))
      return std::string("(no reply)");
    return after.take(after.buffer().size());
  };
  auto itemsOf = [](const std::vector<int>& keys) {
    std::string items;
    for (int k : keys) {
      const std::string hit = hitOf(k);
      items += hit.substr(0, hit.size() - 5);   // without its END
    }
    return items + "END\r\n";
  };

  // Moved and kept keys interleaved, a moved one twice, and one nobody has that moved too.
  std::vector<std::string> candidates;
  for (int i = 0; i < 100; ++i) candidates.push_back(keyOf(kKeys + i));   // never set
  const auto owners = fleet.ringOwners(candidates);
  std::string absent;
  for (size_t i = 0; absent.empty() && i < candidates.size(); ++i)
    if (owners[i] == "s5") absent = candidates[i];
  ASSERT_FALSE(absent.empty()) << owners[0];
  const std::vector<int> mixed = {moved[0], kept[0], moved[1], kept[1], moved[2],
                                  kept[2],  moved[3], moved[0], kept[3], moved[4]};
  EXPECT_EQ(get(mixed, " " + absent), itemsOf(mixed));
  // Every key at the new owner: one owner, read through all the same.
  const std::vector<int> fifth = {moved[5], moved[6], moved[7], moved[8]};
  EXPECT_EQ(get(fifth, ""), itemsOf(fifth));

  const std::string m = handoverSettled(fleet);
  RecordProperty("reads_hit", static_cast<int>(handoverCount(m, "reads", "hit")));
  EXPECT_GE(handoverCount(m, "reads", "hit"), 10) << m;
  EXPECT_GE(handoverCount(m, "reads", "miss"), 1) << absent << " is read and missed\n" << m;
  for (int k : {moved[0], moved[4], moved[8]})
    EXPECT_EQ(direct(fleet.server(4), "get " + keyOf(k) + "\r\n", "END\r\n"), hitOf(k))
        << "copied to the new owner";
  // Read again: the new owner answers now; nothing more is read through.
  const double hits = handoverCount(m, "reads", "hit");
  EXPECT_EQ(get(fifth, ""), itemsOf(fifth));
  EXPECT_EQ(handoverCount(handoverSettled(fleet), "reads", "hit"), hits);

  // gets of several: each item with the new owner's CAS unique, as the new owner itself
  // answers the same gets once the copies are there.
  std::string gets = "gets";
  for (int k : {moved[9], moved[10], moved[11]}) gets += " " + keyOf(k);
  gets += "\r\n";
  ASSERT_TRUE(after.send(gets));
  ASSERT_TRUE(after.readUntil("END\r\n", 5s));
  const std::string through = after.take(after.buffer().size());
  EXPECT_EQ(through.find("VALUE " + keyOf(moved[9]) + " "), 0u) << through;
  EXPECT_EQ(through, direct(fleet.server(4), gets, "END\r\n"));
}

// Acceptance: a memcached server killed; while it is down a cache-aside client reads its keys
// (misses) and sets them (they land on the next host); it restarts empty, and once health
// brings it back the reads of those keys hit, served by the host that had them meanwhile and
// copied back.
TEST(MemcachedReadThroughTest, AServerThatRestartsEmptyGetsItsKeysBackWarm) {
  constexpr int kKeys = 2000;
  CacheFleet fleet(CacheServer::kMemcached, 3);
  // Checks with room to answer (500 ms): a loaded machine's late answer must not take a
  // healthy server down in the middle of the reads.
  ASSERT_TRUE(fleet.start("timeouts = { connect = \"200ms\", response = \"500ms\" }",
                          std::string(kHandover) +
                              "\nhealth = { type = \"memcached\", interval = \"500ms\", "
                              "timeout = \"500ms\", rise = 2, fall = 2 }"))
      << fleet.output();
  auto healthy = [&](bool want) {
    return waitUntil(
        [&] {
          const auto v = backendHealth(fleet.adminPort(), "fleet", "s1");
          return v.checked && v.healthy == want;
        },
        10s);
  };
  ASSERT_TRUE(healthy(true));
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(keyOf(i));
  const auto owners = fleet.ringOwners(keys);
  std::vector<int> mine;   // s1's keys
  for (int i = 0; i < kKeys; ++i)
    if (owners[static_cast<size_t>(i)] == "s1") mine.push_back(i);
  ASSERT_GE(mine.size(), 100u);

  fleet.server(0).process().stop(9);
  ASSERT_TRUE(healthy(false)) << fleet.output();
  // Cache-aside while it is down: each read misses, and the client sets the value.
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet.port()));
  for (int i : mine) {
    ASSERT_TRUE(c.send("get " + keyOf(i) + "\r\n"));
    ASSERT_TRUE(c.readUntil("END\r\n"));
    EXPECT_EQ(c.take(c.buffer().size()), "END\r\n");
  }
  std::vector<std::string> sets;
  for (int i : mine)
    sets.push_back("set " + keyOf(i) + " " + std::to_string(flagsOf(i)) + " 3600 " +
                   std::to_string(valueOf(i).size()) + "\r\n" + valueOf(i) + "\r\n");
  const auto stored = pipeline(c, sets, {"STORED\r\n", "ERROR\r\n"});
  ASSERT_EQ(stored.size(), sets.size());

  ASSERT_TRUE(fleet.server(0).restart());
  ASSERT_TRUE(healthy(true)) << fleet.output();
  TcpClient after;
  ASSERT_TRUE(after.connect(fleet.port()));
  int hits = 0;
  for (int i : mine) {
    ASSERT_TRUE(after.send("get " + keyOf(i) + "\r\n"));
    ASSERT_TRUE(after.readUntil("END\r\n"));
    hits += after.take(after.buffer().size()) == hitOf(i);
  }
  EXPECT_GE(hits * 100, static_cast<int>(mine.size()) * 99) << hits << " of " << mine.size();
  // Copied back: the restarted server holds them now.
  int back = 0;
  for (int i : mine) back += direct(fleet.server(0), "get " + keyOf(i) + "\r\n", "END\r\n") == hitOf(i);
  EXPECT_GE(back * 100, static_cast<int>(mine.size()) * 99);
}

}  // namespace
}  // namespace lb::test
