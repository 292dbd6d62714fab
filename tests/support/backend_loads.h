// Each backend's live load and bounded-load cap as lb's /backends shows them, for the tests
// that check a cap holds (HTTP and the cache protocols).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "tests/support/http_client.h"

namespace lb::test {

struct BackendLoad {
  long load = 0;
  long cap = -1;   // -1: no cap (bounded loads off)
};

// One read of /backends: every backend's counter and the caps from that read's total.
inline std::map<std::string, BackendLoad> backendLoads(uint16_t admin_port) {
  std::map<std::string, BackendLoad> out;
  auto r = httpExchange(admin_port, httpRequest("GET", "/backends"));
  EXPECT_TRUE(r.ok) << r.error;
  // {"name":"s1","address":"...","weight":1,"healthy":true,"load":3,"cap":7,...}
  constexpr std::string_view kAddress = "\",\"address\"";
  for (size_t at = 0; (at = r.body.find("{\"name\":\"", at)) != std::string::npos;) {
    size_t nb = at + 9, ne = r.body.find('"', nb);
    size_t lp = r.body.find("\"load\":", ne), cp = r.body.find("\"cap\":", ne);
    if (ne == std::string::npos || lp == std::string::npos || cp == std::string::npos) break;
    if (r.body.compare(ne, kAddress.size(), kAddress) != 0) {   // the cluster's own name
      at = ne;
      continue;
    }
    std::string cap = r.body.substr(cp + 6, 4);
    out[r.body.substr(nb, ne - nb)] = {atol(r.body.c_str() + lp + 7),
                                       cap.rfind("null", 0) == 0 ? -1 : atol(cap.c_str())};
    at = cp;
  }
  return out;
}

}  // namespace lb::test
