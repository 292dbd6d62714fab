// Active health checks on a redis or memcached listener's cluster: a frozen server (SIGSTOP;
// the kernel still accepts its connections, nothing answers) is taken down by its checks, and
// from then on each of its keys goes to the next host of that key's own preference order, as
// twemproxy's auto_eject_hosts does and as lb's HTTP listeners do. A read of such a key is a
// miss (nil, END), answered at once, not an error; a write lands on the next host (checked
// with a direct connection to that server); every other key stays on its own server. After
// SIGCONT and `rise` passing checks the keys route to their owner again, where their old
// values still are. CacheOutlierTest does the same without checks: commands the frozen server
// lets time out are outlier failures, and the ejection moves its keys. One fleet of three
// servers per protocol.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"
#include "tests/support/health_harness.h"

namespace lb::test {
namespace {

constexpr int kServers = 3;

class CacheHealthFailoverTest : public ::testing::TestWithParam<CacheServer::Kind> {
 protected:
  // What takes a server out: active checks here, outlier detection in CacheOutlierTest.
  virtual std::string clusterExtra() const {
    return "health = { type = \"" + std::string(redis() ? "redis" : "memcached") +
           "\", interval = \"200ms\", timeout = \"100ms\", rise = 2, fall = 2 }";
  }
  virtual bool checked() const { return true; }

  void SetUp() override {
    // A response timeout far above what a healthy loopback server needs, so that a command
    // sent to the frozen server would show as an error rather than slip through as a miss.
    ASSERT_TRUE(fleet_.start("timeouts = { connect = \"1s\", response = \"2s\", idle = \"1m\" }",
                             clusterExtra()))
        << fleet_.output();
    for (int i = 0; checked() && i < kServers; ++i)
      ASSERT_TRUE(waitUntil(
          [&] {
            const auto v = backendHealth(fleet_.adminPort(), "fleet", CacheFleet::name(i));
            return v.checked && v.healthy;
          },
          10s))
          << fleet_.output();

    // Keys of s1 (to be frozen) and of the other two, each written through lb.
    std::vector<std::string> candidates;
    for (int i = 0; i < 90; ++i) candidates.push_back("user:" + std::to_string(i * 11));
    const auto owners = fleet_.ringOwners(candidates);
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (owners[i] == "?") continue;
      auto& bucket = owners[i] == "s1" ? frozen_keys_ : other_keys_;
      if (bucket.size() < 4) bucket.push_back(candidates[i]);
      owner_[candidates[i]] = owners[i];
    }
    ASSERT_EQ(frozen_keys_.size(), 4u);
    ASSERT_EQ(other_keys_.size(), 4u);
    ASSERT_TRUE(client_.connect(fleet_.port()));
    for (const auto& k : frozen_keys_) ASSERT_TRUE(set(client_, k, "old-" + k));
    for (const auto& k : other_keys_) ASSERT_TRUE(set(client_, k, "old-" + k));
    for (const auto& k : frozen_keys_) ASSERT_EQ(direct(0, k), "old-" + k) << k;
  }
  void TearDown() override {
    kill(fleet_.server(0).pid(), SIGCONT);
    EXPECT_EQ(fleet_.lb().process().stop(), 0) << fleet_.output();
  }

  bool redis() const { return GetParam() == CacheServer::kRedis; }

  // SET / set through `c`; true when the server said OK / STORED.
  bool set(TcpClient& c, const std::string& key, const std::string& value) {
    if (redis()) return redisCall(c, {"SET", key, value}) == std::optional<std::string>("OK");
    if (!c.send("set " + key + " 0 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\n"))
      return false;
    if (!c.readUntil("\r\n", 5s)) return false;
    return c.take(c.buffer().find("\r\n") + 2) == "STORED\r\n";
  }

  // GET / get through `c`: the value, "(miss)" for nil / a bare END, the error line for an
  // error, "(no answer)" when nothing came within `timeout`.
  std::string get(TcpClient& c, const std::string& key, Millis timeout = 5s) {
    if (!c.send(redis() ? redisEncode({"GET", key}) : "get " + key + "\r\n")) return "(no answer)";
    return getReply(c, timeout);
  }

  // The next reply on `c` to a GET / get, read as get() reads it.
  std::string getReply(TcpClient& c, Millis timeout = 5s) {
    if (redis()) {
      const auto v = readResp(c, timeout);
      if (!v) return "(no answer)";
      return v->nil ? "(miss)" : v->text;
    }
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const std::string& b = c.buffer();
      if (b.rfind("END\r\n", 0) == 0) {
        c.take(5);
        return "(miss)";
      }
      if (b.rfind("VALUE ", 0) == 0) {
        const size_t end = b.find("\r\nEND\r\n");
        if (end != std::string::npos) {
          const size_t data = b.find("\r\n") + 2;
          std::string value = b.substr(data, end - data);
          c.take(end + 7);
          return value;
        }
      } else if (b.find("\r\n") != std::string::npos) {
        std::string line = c.take(b.find("\r\n") + 2);   // SERVER_ERROR ..., CLIENT_ERROR ...
        line.resize(line.size() - 2);
        return line;
      }
      const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
      if (left.count() <= 0 || !c.readAtLeast(b.size() + 1, left)) return "(no answer)";
    }
  }

  // The key's value on server i itself, bypassing lb.
  std::string direct(int i, const std::string& key) {
    TcpClient c;
    if (!c.connect(fleet_.server(i).port())) return "(no connect)";
    return get(c, key);
  }

  // The key's preference order and current pick as /ring shows them.
  std::vector<std::string> ringOrder(const std::string& key) {
    std::vector<std::string> order;
    const auto doc = adminJson(fleet_.adminPort(), "/ring?cluster=fleet&key=" + key);
    if (doc)
      for (const auto& b : (*doc)["order"].items()) order.push_back(b.asString());
    return order;
  }
  std::string ringPick(const std::string& key) {
    const auto doc = adminJson(fleet_.adminPort(), "/ring?cluster=fleet&key=" + key);
    return doc ? (*doc)["pick"].asString() : "";
  }

  CacheFleet fleet_{GetParam(), kServers};
  TcpClient client_;
  std::vector<std::string> frozen_keys_, other_keys_;
  std::map<std::string, std::string> owner_;
};

TEST_P(CacheHealthFailoverTest, KeysOfAServerHealthTookDownMoveToTheNextHostAndComeBack) {
  // Where each of s1's keys goes while s1 is out: the next host of its own order.
  std::map<std::string, std::string> next;
  for (const auto& k : frozen_keys_) {
    const auto order = ringOrder(k);
    ASSERT_EQ(order.size(), static_cast<size_t>(kServers)) << k;
    ASSERT_EQ(order[0], "s1") << k;
    next[k] = order[1];
  }

  ASSERT_EQ(kill(fleet_.server(0).pid(), SIGSTOP), 0);
  ASSERT_TRUE(waitUntil([&] { return !backendHealth(fleet_.adminPort(), "fleet", "s1").healthy; },
                        10s))
      << fleet_.output();
  for (const auto& k : frozen_keys_) EXPECT_EQ(ringPick(k), next[k]) << k;

  // Reads of s1's keys: the next host answers, and it has never seen them: a miss, at once
  // (well within timeouts.response; the frozen server would give "(no answer)" or an error).
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  for (const auto& k : frozen_keys_) EXPECT_EQ(get(c, k, 1s), "(miss)") << k;

  // Writes of s1's keys land on the next host.
  for (const auto& k : frozen_keys_) {
    ASSERT_TRUE(set(c, k, "new-" + k)) << k;
    EXPECT_EQ(get(c, k, 1s), "new-" + k) << k;
    EXPECT_EQ(direct(fleet_.indexOf(next[k]), k), "new-" + k) << k << " on " << next[k];
  }

  // Everyone else's keys are where they were, with their values.
  for (const auto& k : other_keys_) {
    EXPECT_EQ(ringPick(k), owner_[k]) << k;
    EXPECT_EQ(get(c, k, 1s), "old-" + k) << k;
    EXPECT_EQ(direct(fleet_.indexOf(owner_[k]), k), "old-" + k) << k;
  }

  // Back after `rise` checks: s1's keys route to s1 again, whose values were never touched.
  ASSERT_EQ(kill(fleet_.server(0).pid(), SIGCONT), 0);
  ASSERT_TRUE(waitUntil([&] { return backendHealth(fleet_.adminPort(), "fleet", "s1").healthy; },
                        10s))
      << fleet_.output();
  for (const auto& k : frozen_keys_) {
    EXPECT_EQ(ringPick(k), "s1") << k;
    EXPECT_EQ(get(c, k), "old-" + k) << k;
  }
  for (const auto& k : other_keys_) EXPECT_EQ(get(c, k), "old-" + k) << k;
  EXPECT_NE(fleet_.lb().output().find("backend s1 down: 2 checks timed out after 100ms"),
            std::string::npos)
      << fleet_.lb().output();
}

// No active checks: outlier detection on the commands themselves. Commands that s1 lets time
// out are failures; three in a row eject it, and its keys move as they do for checks.
class CacheOutlierTest : public CacheHealthFailoverTest {
 protected:
  std::string clusterExtra() const override {
    return "outlier = { consecutive_failures = 3, base_ejection = \"3s\" }";
  }
  bool checked() const override { return false; }
};

TEST_P(CacheOutlierTest, CommandsAFrozenServerLetTimeOutEjectItAndItsKeysMove) {
  std::map<std::string, std::string> next;
  for (const auto& k : frozen_keys_) next[k] = ringOrder(k).at(1);
  ASSERT_EQ(kill(fleet_.server(0).pid(), SIGSTOP), 0);
  // Three reads of s1's keys in one write: each times out (timeouts.response, 2s) with lb's
  // error, three failures in a row.
  TcpClient c;
  ASSERT_TRUE(c.connect(fleet_.port()));
  std::string batch;
  for (int i = 0; i < 3; ++i)
    batch += redis() ? redisEncode({"GET", frozen_keys_[i]}) : "get " + frozen_keys_[i] + "\r\n";
  ASSERT_TRUE(c.send(batch));
  for (int i = 0; i < 3; ++i) {
    const std::string r = getReply(c);   // the replies to the batch, in order
    EXPECT_NE(r.find("timed out"), std::string::npos) << r;
  }
  ASSERT_TRUE(waitUntil([&] { return backendHealth(fleet_.adminPort(), "fleet", "s1").health ==
                                     "ejected"; },
                        5s))
      << fleet_.output();
  // Ejected: s1's keys go to their next host, a miss at once; everyone else's stay.
  TcpClient d;
  ASSERT_TRUE(d.connect(fleet_.port()));
  for (const auto& k : frozen_keys_) {
    EXPECT_EQ(ringPick(k), next[k]) << k;
    EXPECT_EQ(get(d, k, 1s), "(miss)") << k;
  }
  for (const auto& k : other_keys_) EXPECT_EQ(get(d, k, 1s), "old-" + k) << k;
  ASSERT_EQ(kill(fleet_.server(0).pid(), SIGCONT), 0);
  // Back after base_ejection (no checks to wait for): s1's keys are s1's again.
  ASSERT_TRUE(waitUntil([&] { return backendHealth(fleet_.adminPort(), "fleet", "s1").healthy; },
                        10s))
      << fleet_.output();
  for (const auto& k : frozen_keys_) EXPECT_EQ(get(d, k), "old-" + k) << k;
}

INSTANTIATE_TEST_SUITE_P(Protocols, CacheHealthFailoverTest,
                         ::testing::Values(CacheServer::kRedis, CacheServer::kMemcached),
                         [](const auto& info) {
                           return std::string(info.param == CacheServer::kRedis ? "Redis"
                                                                                 : "Memcached");
                         });

INSTANTIATE_TEST_SUITE_P(Protocols, CacheOutlierTest,
                         ::testing::Values(CacheServer::kRedis, CacheServer::kMemcached),
                         [](const auto& info) {
                           return std::string(info.param == CacheServer::kRedis ? "Redis"
                                                                                 : "Memcached");
                         });

}  // namespace
}  // namespace lb::test
