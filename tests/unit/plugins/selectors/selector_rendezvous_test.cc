// rendezvous: the weighted HRW order against a reference that scores every host with the
// documented formula and sorts, for owners and for whole replica walks (both the stack top-k
// path, attempt < 16, and the repeated-max path beyond).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/support/selector_test_util.h"

namespace lb {
namespace {

const SelectorInfo& rendezvous() { return test::selector("rendezvous"); }

// score = -w / ln(u), u = (top 53 bits of XXH64(LE64(key hash), XXH64(hash_key)) + 0.5) / 2^53.
std::vector<uint32_t> referenceOrder(const std::vector<HostSpec>& hosts, uint64_t hash) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(hash >> (8 * i));
  struct S {
    double score;
    uint64_t x;
    uint32_t host;
  };
  std::vector<S> scores;
  for (uint32_t h = 0; h < hosts.size(); ++h) {
    const uint64_t x = XXH64(bytes, 8, xxh64(hosts[h].hash_key, 0));
    const double u = (static_cast<double>(x >> 11) + 0.5) / 9007199254740992.0;
    scores.push_back({-static_cast<double>(hosts[h].weight) / std::log(u), x, h});
  }
  std::sort(scores.begin(), scores.end(), [](const S& a, const S& b) {
    return a.score != b.score ? a.score > b.score : a.x > b.x;
  });
  std::vector<uint32_t> order;
  for (const S& s : scores) order.push_back(s.host);
  return order;
}

void expectMatchesReference(const std::vector<HostSpec>& hosts, int keys) {
  auto table = rendezvous().build(hosts, {});
  test::Prng prng(hosts.size());
  for (int k = 0; k < keys; ++k) {
    const uint64_t h = prng.next();
    const auto order = referenceOrder(hosts, h);
    for (uint32_t a = 0; a < hosts.size(); ++a) ASSERT_EQ(table->pick(h, a), order[a]) << h;
  }
}

TEST(RendezvousTest, WeightedOrderMatchesReference) {
  auto hosts = test::makeHosts(9);
  for (size_t i = 0; i < hosts.size(); ++i) hosts[i].weight = 1 + (i * 7) % 5;
  expectMatchesReference(hosts, 2000);
}

TEST(RendezvousTest, EqualWeightsSkipTheLogarithmButKeepTheOrder) {
  auto hosts = test::makeHosts(9);
  for (auto& h : hosts) h.weight = 4;   // uniform path: ordered by x alone
  expectMatchesReference(hosts, 2000);
}

TEST(RendezvousTest, LongWalksBeyondSixteenMatchReference) {
  auto hosts = test::makeHosts(40);
  hosts[3].weight = 5;
  expectMatchesReference(hosts, 100);
}

TEST(RendezvousTest, ScoreDependsOnHashKeyNotPosition) {
  std::vector<HostSpec> a = {{"x", 1}, {"y", 3}, {"z", 2}};
  std::vector<HostSpec> b = {{"z", 2}, {"x", 1}, {"y", 3}};
  auto ta = rendezvous().build(a, {});
  auto tb = rendezvous().build(b, {});
  for (uint32_t k = 0; k < 5000; ++k) {
    const uint64_t h = test::keyHash(KeyHash::kXxh64, k);
    for (uint32_t at = 0; at < 3; ++at)
      ASSERT_EQ(a[ta->pick(h, at)].hash_key, b[tb->pick(h, at)].hash_key);
  }
}

}  // namespace
}  // namespace lb
