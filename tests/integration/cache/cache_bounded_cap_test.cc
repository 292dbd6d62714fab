// A bounded-load cap on a redis cluster holds exactly with workers = 2 under one hot
// key, as tests/unit/routing/bounded_cap_workers_test.cc proves for the HTTP pick. Cache commands
// take their host's unit of live load at the pick, by the same compare-and-swap (CommandPicks), so
// of two workers racing for a host's last slot exactly one gets it.
//
// The whole fleet is frozen (SIGSTOP) while the hot key comes in from many clients, so that no
// command completes: the total only grows and every cap with it, and each host's load (its
// fragments in flight) must stay at or under the cap /backends computes from that total.
//
// The hot key's owner has weight 1 against 100 and 100, and hash_balance_factor = 125: its cap,
// ceil(ceil((total + 1) * 1.25) * 1 / 201), is 1 for any total up to 159, so within a round of
// 32 commands it has exactly one slot, and the first picks of the two workers race for it
// (check-then-add let both in: a load of 2, which stayed, since the cap does not grow). Each
// MGET repeats the hot key, a pick per key before its one fragment is queued, so both workers
// are picking at once. Thawed, everything is answered and the loads go back to zero; the
// round is repeated.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/backend_loads.h"
#include "tests/support/cache_fleet.h"

namespace lb::test {
namespace {

using Load = BackendLoad;

long totalLoad(const std::map<std::string, Load>& loads) {
  long total = 0;
  for (const auto& [_, l] : loads) total += l.load;
  return total;
}

// The sum of lb_backend_picks_total over every backend, with the given reason or any.
long picks(const std::string& metrics, const char* reason = nullptr) {
  long n = 0;
  for (size_t at = 0; (at = metrics.find("\nlb_backend_picks_total{", at)) != std::string::npos;) {
    const size_t eol = metrics.find('\n', at + 1);
    const std::string line = metrics.substr(at + 1, eol - at - 1);
    if (reason == nullptr || line.find("reason=\"" + std::string(reason) + "\"") != std::string::npos)
      n += atol(line.c_str() + line.rfind(' ') + 1);
    at = eol;
  }
  return n;
}

// Polls /metrics until lb has picked `want` keys in all (every command sent so far is
// dispatched: a command's picks and its fragments' units are one step), or the deadline.
bool waitForPicks(CacheFleet& fleet, long want, Millis timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < deadline;)
    if (picks(fleet.metrics()) >= want) return true;
  return false;
}

// The loads once the total is `want`, polled until then or the deadline (the last read).
std::map<std::string, Load> loadsAt(uint16_t admin_port, long want, Millis timeout) {
  std::map<std::string, Load> s;
  for (auto deadline = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < deadline;) {
    s = backendLoads(admin_port);
    if (totalLoad(s) == want) break;
  }
  return s;
}

TEST(CacheBoundedCapTest, HotKeyCapHoldsExactlyAcrossTwoWorkers) {
  CacheFleet fleet(CacheServer::kRedis, 3, /*workers=*/2);
  // distribution = "modula": s1's share of the keys is exactly its weight's, 1 in 201 (on
  // the ketama continuum weight 1 of 201 gets no points at all: nc_ketama.c floors them).
  fleet.setWeights({1, 100, 100});
  // No command may time out while the fleet is frozen: each stays in flight, holding its unit.
  ASSERT_TRUE(fleet.start("timeouts = { connect = \"5s\", response = \"2m\", idle = \"5m\" }",
                          "hash_balance_factor = 125\ntwemproxy = { distribution = \"modula\" }"))
      << fleet.output();
  // A key of s1's.
  std::vector<std::string> candidates;
  // (Not "hot:N": the low FNV-1a bits of those never fall on s1's one slot of 201.)
  for (int i = 0; i < 3000; ++i) candidates.push_back("user:" + std::to_string(i) + ":hot");
  const auto owners = fleet.ringOwners(candidates);
  std::string hot;
  for (size_t i = 0; i < candidates.size() && hot.empty(); ++i)
    if (owners[i] == "s1") hot = candidates[i];
  ASSERT_FALSE(hot.empty()) << "no key of s1's among " << candidates.size();
  const std::string owner = "s1";
  {
    TcpClient c;
    ASSERT_TRUE(c.connect(fleet.port()));
    ASSERT_EQ(redisCall(c, {"SET", hot, "v"}), "OK");
  }

  constexpr int kClients = 16;
  constexpr int kCommands = 2;    // per client and round: each one fragment, one unit
  constexpr int kKeys = 2000;     // copies of the hot key per MGET
  constexpr int kRounds = 60;
  constexpr long kInFlight = long{kClients} * kCommands;
  std::string mget = "*" + std::to_string(kKeys + 1) + "\r\n$4\r\nMGET\r\n";
  for (int k = 0; k < kKeys; ++k) mget += "$" + std::to_string(hot.size()) + "\r\n" + hot + "\r\n";
  std::string pipeline;
  for (int i = 0; i < kCommands; ++i) pipeline += mget;

  std::vector<std::unique_ptr<TcpClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<TcpClient>());
    ASSERT_TRUE(clients.back()->connect(fleet.port()));
  }

  long worst_over = 0;   // the most any backend's load exceeded its cap, over every round
  for (int round = 0; round < kRounds; ++round) {
    for (int s = 0; s < fleet.size(); ++s) ASSERT_EQ(kill(fleet.server(s).pid(), SIGSTOP), 0);
    for (auto& c : clients) ASSERT_TRUE(c->send(pipeline));

    // Every key picked: the units are all taken, and nothing gives one back while frozen.
    // (A command whose keys a concurrent pick split over two hosts is two fragments.)
    const long want = 1 + (round + 1) * kInFlight * kKeys;   // the SET, and the MGETs' keys
    ASSERT_TRUE(waitForPicks(fleet, want, 30s)) << picks(fleet.metrics()) << " of " << want;
    const auto loads = backendLoads(fleet.adminPort());
    ASSERT_GE(totalLoad(loads), kInFlight) << "every MGET holds a unit while in flight";
    ASSERT_EQ(loads.size(), 3u);
    int busy = 0;
    for (const auto& [name, l] : loads) {
      ASSERT_GE(l.cap, 0) << "no cap with hash_balance_factor set";
      EXPECT_LE(l.load, l.cap) << "round " << round << ": " << name << " over its cap";
      if (l.load - l.cap > worst_over) worst_over = l.load - l.cap;
      busy += l.load > 0;
    }
    EXPECT_EQ(loads.at(owner).cap, 1) << "the owner's cap is one slot all round";
    EXPECT_EQ(loads.at(owner).load, 1) << "round " << round << ": the owner takes its one slot";
    EXPECT_GE(busy, 2) << "the excess goes to the next hosts";

    for (int s = 0; s < fleet.size(); ++s) ASSERT_EQ(kill(fleet.server(s).pid(), SIGCONT), 0);
    for (auto& c : clients) {
      for (int i = 0; i < kCommands; ++i) {
        const auto reply = readResp(*c, 30s);
        ASSERT_TRUE(reply) << "round " << round << ": reply " << i << " missing";
        ASSERT_EQ(reply->type, '*') << reply->text;
        ASSERT_EQ(reply->items.size(), static_cast<size_t>(kKeys));
        // "v" from the owner; a nil bulk from a next host, which does not have the key.
        for (const RespValue& item : reply->items) {
          if (!item.nil) {
            EXPECT_EQ(item.text, "v");
          }
        }
      }
    }
    EXPECT_EQ(totalLoad(loadsAt(fleet.adminPort(), 0, 10s)), 0) << "a unit leaked";
    if (HasFailure()) break;
  }
  EXPECT_EQ(worst_over, 0);

  // Picks past the full owner are counted as bounded, once each (one place counts them).
  EXPECT_GT(picks(fleet.metrics(), "bounded"), 0);
}

}  // namespace
}  // namespace lb::test
