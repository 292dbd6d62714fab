// A flapping writer costs a few table builds, not one per write. A
// thousand writes to the key as fast as etcd takes them (one keep-alive connection to its
// JSON gateway) reach a real lb with the default min_apply_interval (100 ms): lb applies at
// most one build per interval, a few dozen in all (lb_membership_updates_total{result=
// "applied"}), and ends on the last revision with the last document's backends.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/membership_fleet.h"

namespace lb::test {
namespace {

const std::map<std::string, std::string> kApplied = {{"cluster", "cache"},
                                                     {"result", "applied"}};

TEST(MembershipCoalesceTest, AThousandRapidWritesCostAFewDozenBuildsAndEndOnTheLast) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.ok()) << etcd.output();
  OriginFleet origins(4);
  ASSERT_TRUE(origins.ok()) << origins.error();
  const std::string key = "/lb/test/coalesce/cache";
  EtcdGateway gateway(etcd.clientUrl());
  auto first = gateway.put(key, membershipDocument(origins, {0, 1, 2, 3}));
  ASSERT_TRUE(first) << gateway.error();
  MemberLb lb(MembershipOptions({etcd.clientUrl()}, key).minApplyInterval("100ms"));
  ASSERT_TRUE(lb.start()) << lb.output();
  ASSERT_TRUE(waitForRevision(lb.admin(), *first)) << lb.output();
  const double applied_before = metricValue(lb.admin(), "lb_membership_updates_total", kApplied)
                                    .value_or(-1);
  ASSERT_GE(applied_before, 1);

  // Four writers on their own keep-alive connections (etcd commits concurrent puts together,
  // so a thousand take a second or two rather than one fsync each), each alternating between
  // three and four members, so that every write is a change. The last revision's document
  // is whichever write etcd ordered last.
  const std::string three = membershipDocument(origins, {0, 1, 2});
  const std::string four = membershipDocument(origins, {0, 1, 2, 3});
  constexpr int kWriters = 4, kEach = 250;
  std::vector<std::vector<std::pair<int64_t, size_t>>> written(kWriters);   // revision, members
  std::vector<std::string> errors(kWriters);
  const auto start = Clock::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      EtcdGateway mine(etcd.clientUrl());
      for (int i = 0; i < kEach; ++i) {
        const bool odd = (w + i) % 2 == 1;
        auto rev = mine.put(key, odd ? four : three);
        if (!rev) {
          errors[w] = mine.error();
          return;
        }
        written[w].emplace_back(*rev, odd ? 4 : 3);
      }
    });
  for (auto& t : writers) t.join();
  const double write_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::pair<int64_t, size_t> last{0, 0};
  for (int w = 0; w < kWriters; ++w) {
    ASSERT_EQ(errors[w], "") << "writer " << w;
    ASSERT_EQ(written[w].size(), static_cast<size_t>(kEach));
    last = std::max(last, written[w].back());
  }
  ASSERT_TRUE(waitForRevision(lb.admin(), last.first, 5s)) << lb.output();
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();

  EXPECT_EQ(lb.membership().revision, last.first);
  EXPECT_EQ(lb.membership().backends.size(), last.second);
  const double builds =
      metricValue(lb.admin(), "lb_membership_updates_total", kApplied).value_or(-1) -
      applied_before;
  printf("[ membership ] %d writes in %.2f s, served the last after %.2f s: %.0f builds\n",
         kWriters * kEach, write_s, total_s, builds);
  EXPECT_GE(builds, 1);
  // The log says the same: one "applied revision" line per build, the last one the last write.
  const auto applied = appliedRevisions(lb.output());
  EXPECT_EQ(static_cast<double>(applied.size()), builds + applied_before);
  EXPECT_EQ(applied.empty() ? 0 : applied.back(), last.first);
  // At most one per 100 ms while the writes last, plus the trailing one; and a few dozen.
  EXPECT_LE(builds, total_s / 0.1 + 2);
  EXPECT_LE(builds, 60);
}

}  // namespace
}  // namespace lb::test
