// The read-through's counters as a test reads them from a CacheFleet's /metrics (cluster
// "fleet"), and a bounded wait for the copies and deletes it sends unanswered. Test-thread
// only.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "tests/support/cache_fleet.h"
#include "tests/support/health_harness.h"

namespace lb::test {

// lb_handover_<family>_total{cluster="fleet",result=`result`}; -1 when absent.
inline double handoverCount(const std::string& metrics, const std::string& family,
                            const std::string& result) {
  const std::string series =
      "lb_handover_" + family + "_total{cluster=\"fleet\",result=\"" + result + "\"} ";
  const size_t at = metrics.find(series);
  return at == std::string::npos ? -1 : atof(metrics.c_str() + at + series.size());
}

// The sum of a family's results.
inline double handoverTotal(const std::string& metrics, const std::string& family,
                            std::initializer_list<const char*> results) {
  double sum = 0;
  for (const char* r : results) sum += std::max(0.0, handoverCount(metrics, family, r));
  return sum;
}

// Copies and deletes go out beside the replies, nobody waiting for them: waits (10 s at
// most) until every copy the read hits sent and at least `deletes` deletes are answered, and
// returns the metrics then.
inline std::string handoverSettled(CacheFleet& fleet, double deletes = 0) {
  std::string m;
  waitUntil(
      [&] {
        m = fleet.metrics();
        return handoverTotal(m, "copies", {"stored", "not_stored", "error"}) >=
                   handoverCount(m, "reads", "hit") &&
               handoverTotal(m, "deletes", {"ok", "error"}) >= deletes;
      },
      10s, 50ms);
  return m;
}

}  // namespace lb::test
