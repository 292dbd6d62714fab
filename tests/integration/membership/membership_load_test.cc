// Membership changes under load drop nothing and never go back. Three
// real lb processes watch one key on a real etcd in front of six lb-origin backends; wrk
// drives each lb (a fresh key per request, so every backend takes traffic) while 20 changes
// are put in 10 s, each adding or removing backends within max_remove_percent and every
// backend staying up. wrk sees no error and no non-2xx answer, every instance ends on the
// last revision, and no instance ever served an older revision after a newer one (each
// instance's /backends polled every few milliseconds throughout, and every apply it logged).
#include <gtest/gtest.h>

#include <cinttypes>
#include <functional>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cache_server.h"
#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

constexpr int kInstances = 3;
constexpr size_t kOrigins = 6;
constexpr int kChanges = 20;
constexpr auto kChangeEvery = 500ms;   // 20 changes in 10 s
const char kKey[] = "/lb/test/load/cache";

const char kRedisKey[] = "/lb/test/load/redis";

// Every request its own x-cache-key, so the changes move keys that are in flight.
const char kWrkScript[] =
    "local n = 0\n"
    "request = function()\n"
    "  n = n + 1\n"
    "  return wrk.format(\"GET\", \"/\", { [\"x-cache-key\"] = \"k\" .. n })\n"
    "end\n";

// Change `step`'s members of n backends: all but (step % n), and on odd steps one more, so
// that a change removes at most 2 of 5 (40%; 1 of 3 with four backends) and adds at most 2.
std::vector<size_t> membersOf(int step, size_t n = kOrigins) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (i == static_cast<size_t>(step) % n) continue;
    if (n > 4 && step % 2 == 1 && i == static_cast<size_t>(step + 2) % n) continue;
    out.push_back(i);
  }
  return out;
}

// Every distinct revision each instance served, in the order it served them.
using Trails = std::vector<std::vector<int64_t>>;

void record(const std::vector<std::unique_ptr<MemberLb>>& lbs, Trails* seen) {
  for (size_t i = 0; i < lbs.size(); ++i) {
    MembershipView v = lbs[i]->membership();
    auto& trail = (*seen)[i];
    if (v.ok && (trail.empty() || trail.back() != v.revision)) trail.push_back(v.revision);
  }
}

// Puts kChanges documents (documentOf(1) .. documentOf(kChanges)), one every kChangeEvery,
// reading every instance's revision in between, then waits until each serves the last. The
// revisions the puts created, after `first`.
std::vector<int64_t> putChanges(EtcdGateway& gateway, const std::string& key, int64_t first,
                                const std::function<std::string(int)>& documentOf,
                                const std::vector<std::unique_ptr<MemberLb>>& lbs,
                                Trails* seen) {
  std::vector<int64_t> puts = {first};
  seen->assign(lbs.size(), {});
  const auto start = Clock::now();
  for (int step = 0; step < kChanges; ++step) {
    while (Clock::now() < start + step * kChangeEvery) {
      record(lbs, seen);
      std::this_thread::sleep_for(3ms);
    }
    auto rev = gateway.put(key, documentOf(step + 1));
    EXPECT_TRUE(rev) << gateway.error();
    if (!rev) return puts;
    puts.push_back(*rev);
  }
  for (size_t i = 0; i < lbs.size(); ++i)
    EXPECT_TRUE(pollUntil([&] {
      record(lbs, seen);
      return !(*seen)[i].empty() && (*seen)[i].back() == puts.back();
    }, 5s, 3ms))
        << "instance " << i << " did not end on revision " << puts.back() << "\n"
        << lbs[i]->output();
  return puts;
}

// Every revision an instance served was put, and each came after an older one: by what
// /backends showed between puts, and by every apply the instance logged.
void expectNeverBack(const Trails& seen, const std::vector<int64_t>& puts,
                     const std::vector<std::unique_ptr<MemberLb>>& lbs) {
  for (size_t i = 0; i < lbs.size(); ++i) {
    const auto applied = appliedRevisions(lbs[i]->output());
    std::string trail;
    for (int64_t r : applied) trail += " " + std::to_string(r);
    printf("[ membership ] instance %zu logged applying%s\n", i, trail.c_str());
    ASSERT_FALSE(applied.empty()) << lbs[i]->output();
    for (size_t k = 1; k < applied.size(); ++k) {
      EXPECT_GT(applied[k], applied[k - 1]) << "instance " << i << " applied an older revision:"
                                            << trail;
    }
    EXPECT_EQ(applied.back(), puts.back()) << "instance " << i;
  }
  const std::set<int64_t> put_set(puts.begin(), puts.end());
  for (size_t i = 0; i < seen.size(); ++i) {
    std::string trail;
    for (int64_t r : seen[i]) trail += " " + std::to_string(r);
    printf("[ membership ] instance %zu served%s\n", i, trail.c_str());
    for (size_t k = 0; k < seen[i].size(); ++k) {
      EXPECT_TRUE(put_set.count(seen[i][k])) << "instance " << i << " served " << seen[i][k]
                                             << ", which no put created:" << trail;
      if (k > 0) {
        EXPECT_GT(seen[i][k], seen[i][k - 1]) << "instance " << i << " went back:" << trail;
      }
    }
    EXPECT_EQ(seen[i].empty() ? -1 : seen[i].back(), puts.back()) << "instance " << i;
  }
}

// "Non-2xx or 3xx responses: N" and "Socket errors: connect A, read B, write C, timeout D"
// appear in wrk's report only when non-zero.
long requestsOf(const std::string& report) {
  size_t in = report.find(" requests in ");
  if (in == std::string::npos) return -1;
  size_t start = report.rfind(' ', in - 1);
  return atol(report.c_str() + start + 1);
}

TEST(MembershipLoadTest, TwentyChangesInTenSecondsFailNoHttpRequestAndNeverGoBack) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  OriginFleet origins(kOrigins);
  ASSERT_TRUE(origins.ok()) << origins.error();
  EtcdGateway gateway(etcd.clientUrl());
  auto first = gateway.put(kKey, membershipDocument(origins, firstN(kOrigins)));
  ASSERT_TRUE(first) << gateway.error();
  std::vector<std::unique_ptr<MemberLb>> lbs;
  for (int i = 0; i < kInstances; ++i) {
    lbs.push_back(std::make_unique<MemberLb>(
        MembershipOptions({etcd.clientUrl()}, kKey)));
    ASSERT_TRUE(lbs.back()->start()) << lbs.back()->output();
  }
  for (auto& lb : lbs) ASSERT_TRUE(waitForRevision(lb->admin(), *first)) << lb->output();

  const std::string script = tempPath("wrk-lua");
  writeWholeFile(script, kWrkScript);
  std::vector<std::unique_ptr<Process>> wrks;
  for (auto& lb : lbs)
    wrks.push_back(std::make_unique<Process>(std::vector<std::string>{
        "wrk", "-t1", "-c8", "-d11s", "--timeout", "5s", "-s", script, localUrl(lb->web())}));
  // wrk connects before the first change (it has sent requests once lb counted some).
  for (auto& lb : lbs)
    ASSERT_TRUE(pollUntil([&] {
      return sampleSum(scrape(lb->admin()), "lb_backend_requests_total", {{"cluster", "cache"}}) > 0;
    })) << lb->output();

  Trails seen;
  auto puts = putChanges(gateway, kKey, *first,
                         [&](int step) { return membershipDocument(origins, membersOf(step)); },
                         lbs, &seen);
  ASSERT_EQ(puts.size(), static_cast<size_t>(kChanges + 1));
  expectNeverBack(seen, puts, lbs);
  for (auto& lb : lbs) EXPECT_EQ(lb->membership().backends.size(), membersOf(kChanges).size());

  for (size_t i = 0; i < wrks.size(); ++i) {
    ASSERT_TRUE(wrks[i]->waitExit(20s)) << wrks[i]->output();
    const std::string report = wrks[i]->output();
    printf("[ membership ] wrk through instance %zu: %ld requests\n", i, requestsOf(report));
    EXPECT_EQ(report.find("Socket errors"), std::string::npos) << report;
    EXPECT_EQ(report.find("Non-2xx"), std::string::npos) << report;
    EXPECT_GT(requestsOf(report), 1000) << report;
  }
  unlink(script.c_str());
}

// The same through redis listeners in front of real redis-servers, with redis-benchmark (run
// again and again until the changes are done: it counts requests, not seconds).
TEST(MembershipLoadTest, TwentyChangesInTenSecondsFailNoRedisCommandAndNeverGoBack) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  std::vector<std::unique_ptr<CacheServer>> redis;
  for (int i = 0; i < 4; ++i) {
    redis.push_back(std::make_unique<CacheServer>(CacheServer::kRedis));
    ASSERT_TRUE(redis.back()->ok()) << redis.back()->output();
  }
  auto documentOf = [&](int step) {
    std::string out = "{\"backends\":[";
    for (size_t i : membersOf(step, redis.size()))
      out += std::string(out.back() == '[' ? "" : ",") + "{\"name\":\"redis-" +
             std::to_string(i) + "\",\"address\":\"" + redis[i]->address() + "\"}";
    return out + "]}";
  };
  EtcdGateway gateway(etcd.clientUrl());
  auto first = gateway.put(kRedisKey, documentOf(0));
  ASSERT_TRUE(first) << gateway.error();
  std::vector<std::unique_ptr<MemberLb>> lbs;
  for (int i = 0; i < kInstances; ++i) {
    lbs.push_back(std::make_unique<MemberLb>(MembershipOptions({etcd.clientUrl()}, kRedisKey).listenerProtocol("redis")));
    ASSERT_TRUE(lbs.back()->start()) << lbs.back()->output();
  }
  for (auto& lb : lbs) ASSERT_TRUE(waitForRevision(lb->admin(), *first)) << lb->output();

  // One redis-benchmark per instance at a time; each run checked as it ends (redis-benchmark 7
  // exits at the first error reply, non-zero, saying "Error").
  std::vector<std::unique_ptr<Process>> benches(lbs.size());
  std::vector<int> runs(lbs.size(), 0);
  auto startBench = [&](size_t i) {
    benches[i] = std::make_unique<Process>(std::vector<std::string>{
        "redis-benchmark", "-h", "127.0.0.1", "-p", std::to_string(lbs[i]->web()), "-c", "8",
        "-n", "20000", "-r", "100000", "-t", "set,get", "-q"});
    ++runs[i];
  };
  auto checkBench = [&](size_t i) {
    const std::string out = benches[i]->output();
    EXPECT_EQ(benches[i]->waitExit(0ms), 0) << out;
    EXPECT_EQ(out.find("rror"), std::string::npos) << "instance " << i << ":\n" << out;
    EXPECT_NE(out.find("GET:"), std::string::npos) << out;
  };
  for (size_t i = 0; i < lbs.size(); ++i) startBench(i);
  // Each benchmark that ended is checked and started again at the next put.
  auto keepLoad = [&](int step) {
    for (size_t i = 0; i < lbs.size(); ++i)
      if (!benches[i]->running()) {
        checkBench(i);
        startBench(i);
      }
    return documentOf(step);
  };
  Trails seen;
  auto puts = putChanges(gateway, kRedisKey, *first, keepLoad, lbs, &seen);
  for (size_t i = 0; i < lbs.size(); ++i) {
    ASSERT_TRUE(benches[i]->waitExit(30s)) << benches[i]->output();
    checkBench(i);
    printf("[ membership ] redis-benchmark through instance %zu: %d runs\n", i, runs[i]);
  }
  ASSERT_EQ(puts.size(), static_cast<size_t>(kChanges + 1));
  expectNeverBack(seen, puts, lbs);
}

}  // namespace
}  // namespace lb::test
