// The request path's share of hot-key detection allocates nothing (DEVELOPERS.md, "Hot
// path"): HotKeyState::count over a stream of distinct keys that keeps the summary churning,
// each key plugin filling KeyContext::text_out, and the worker's hand-over (off the request
// path, on the worker's loop, but it must not allocate either: it runs between requests).
//
// Counted by replacing the global operator new for this binary: every non-aligned new and
// delete goes to malloc and free (so sanitizer builds see matching pairs), and an allocation
// made while this thread counts is counted. Aligned new and delete keep their defaults.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "lb/core/hash.h"
#include "lb/hotkeys/hot_key_state.h"
#include "plugins/keys/key_chain.h"
#include "plugins/selectors/hot_spread.h"
#include "plugins/selectors/selectors.h"
#include "tests/support/key_test_util.h"

namespace {
thread_local bool t_counting = false;
thread_local size_t t_allocations = 0;

void* countedAlloc(std::size_t n) noexcept {
  if (t_counting) ++t_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = countedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = countedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return countedAlloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return countedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace lb {
namespace {

// Allocations made by `f` on this thread.
template <typename F>
size_t allocationsOf(F&& f) {
  t_allocations = 0;
  t_counting = true;
  f();
  t_counting = false;
  return t_allocations;
}

TEST(HotKeyRequestPathAllocTest, CountingChurningKeysAllocatesNothing) {
  HotKeyState state(2);
  // A few heavy keys and a long tail of one-off ones, so entries are replaced all the time;
  // keys longer than the display bytes too (truncated on the way in).
  char key[300];
  memset(key, 'x', sizeof key);
  const size_t n = allocationsOf([&] {
    for (int i = 0; i < 200000; ++i) {
      const int k = i % 3 == 0 ? i % 7 : i;
      const int len = snprintf(key, 40, "key:%d:", k);
      const std::string_view bytes(key, i % 5 == 0 ? sizeof key : static_cast<size_t>(len));
      state.count(static_cast<unsigned>(i & 1), hashKeyBytes(KeyHash::kXxh64, bytes), bytes);
    }
  });
  EXPECT_EQ(n, 0u);
  // The hand-over and the main thread's merge (off the request path): a thread's first
  // merge makes that thread's scratch, once; from then on nothing allocates.
  auto window = [&] {
    state.handOver(0);
    state.handOver(1);
    state.collect();
  };
  EXPECT_LE(allocationsOf(window), 1u);
  for (int i = 0; i < 1000; ++i) state.count(0, static_cast<uint64_t>(i), "k");
  EXPECT_EQ(allocationsOf(window), 0u);
}

TEST(HotKeyRequestPathAllocTest, KeyPluginsFillTheTextWithoutAllocating) {
  testing::Request req("/a/b?k=v", {{"X-Key", "user:1"}, {"Cookie", "sid=abc"}});
  auto peer = testing::v6("2001:db8::1", 5555);
  auto local = testing::v4("10.0.0.1", 80);
  std::vector<KeyChain> chains;
  for (const char* kind : {"header", "cookie", "path", "query", "source_ip", "five_tuple"}) {
    HashPolicy p;
    p.kind = kind;
    p.name = std::string(kind) == "header" ? "x-key" : std::string(kind) == "cookie" ? "sid" : "k";
    auto chain = KeyChain::build(std::span<const HashPolicy>(&p, 1), "http");
    ASSERT_TRUE(chain.ok()) << kind;
    chains.push_back(std::move(chain.value()));
  }
  KeyContext ctx;
  ctx.request = &req.view;
  ctx.peer = testing::sa(peer);
  ctx.local = testing::sa(local);
  KeyText text;
  ctx.text_out = &text;
  size_t shown = 0;
  const size_t n = allocationsOf([&] {
    for (const KeyChain& c : chains) {
      uint64_t h;
      if (c.compute(ctx, KeyHash::kXxh64, &h) && !text.bytes.empty()) ++shown;
    }
  });
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(shown, chains.size());
}

// hot_keys.spread's share of the request path: the worker's isHot probe and the spread pick
// over a real table (the walk keeps its candidates on the stack).
TEST(HotKeyRequestPathAllocTest, IsHotAndTheSpreadPickAllocateNothing) {
  HotKeyState state(1);
  SpaceSaving s;
  for (int i = 0; i < 100; ++i) s.add(42, "hot");
  state.tracker().observe(s, 1.0, 1000);
  ASSERT_TRUE(state.publishHotSet());
  state.adoptHotSet(0);
  std::vector<HostSpec> hosts;
  for (int i = 0; i < 8; ++i) hosts.push_back({"h" + std::to_string(i), 1});
  auto table = buildRingHash(hosts, SelectorOptions{});
  BoundedLoad bounded(hosts, 125);
  struct IdleLoads final : LoadView {
    uint64_t load(uint32_t host) const noexcept override { return host % 3; }
    uint64_t totalLoad() const noexcept override { return 8; }
  } loads;
  size_t hot = 0, picked = 0;
  const size_t n = allocationsOf([&] {
    for (uint64_t h = 0; h < 10000; ++h) {
      hot += state.isHot(0, h % 100 == 0 ? 42 : h + 1000);
      Pick p;
      picked += pickSpread(*table, h, loads, 3, h % 2 ? &bounded : nullptr, Reserve::kYes, &p);
    }
  });
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(hot, 100u);
  EXPECT_EQ(picked, 10000u);
}

TEST(HotKeyRequestPathAllocTest, TheCounterCountsAnAllocation) {
  // The test can fail: an allocation in the window is seen.
  EXPECT_EQ(allocationsOf([] {
              int* volatile p = new int(1);
              delete p;
            }),
            1u);
}

}  // namespace
}  // namespace lb
