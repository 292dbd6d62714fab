// The snapshots the handover unit tests route by: the pick test cluster on ring_hash with a
// one-minute handover window, built (after `previous`, to open a window) as a reload would.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>

#include "lb/routing/snapshot.h"
#include "tests/support/pick_test_config.h"

namespace lb {

inline constexpr int64_t kHandoverTestWindowMs = 60000;

// `n` backends b0.. on ring_hash, a one-minute window.
inline Config handoverTestConfig(size_t n) {
  Config c = pickTestConfig(n);
  c.clusters[0].selector = "ring_hash";
  HandoverConfig h;
  h.window = Duration{kHandoverTestWindowMs};
  c.clusters[0].handover = h;
  return c;
}

inline std::shared_ptr<const Snapshot> buildHandoverSnapshot(StateRegistry& registry,
                                                             Config config,
                                                             const Snapshot* previous = nullptr) {
  auto r = buildSnapshot(std::move(config), registry, 1, nullptr, nullptr, previous);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r.value() : nullptr;
}

}  // namespace lb
