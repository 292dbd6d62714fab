// The hostile-input cases of tests/integration/http/http_hostile_test.cc: raw request bytes, the
// statuses the client must read, and exactly what must reach the origin. Kept apart from the
// test so that the HTTP fuzz target's seed corpus (tests/fuzz/corpus/http/, one file per case)
// can be checked against them.
#pragma once

#include <string>
#include <vector>

namespace lb::test {

enum class Send {
  kWhole,      // one write
  kBytewise,   // one byte per write
  kHalfClose,  // one write, then shutdown(SHUT_WR)
  kTrickle,    // the bytes, then one more every 100 ms (a head that never completes)
};

struct HostileCase {
  const char* name;
  std::string request;
  std::vector<int> statuses;   // what the client reads, in order
  std::string origin;          // every byte that must reach the origin
  const char* reason = nullptr;  // lb answered last: lb_http_errors_total{reason} + 1
  Send send = Send::kWhole;
  bool cut_upstream = false;   // refused mid-body: lb closes the upstream connection
};

// Every case, in a stable order.
std::vector<HostileCase> hostileCases();

}  // namespace lb::test
