// A running build/lb-origin for integration tests: the backend every proxy test needs.
//
//   lb::test::OriginProcess a("cache-a");
//   ASSERT_TRUE(a.ok()) << a.output();
//   config += "{ name = \"cache-a\", address = \"" + a.address() + "\" }";
//   ...
//   EXPECT_EQ(a.stats()->connections_accepted, 1u);   // lb reused one upstream connection
//
// lb-origin's per-request behaviours (?delay_ms=, ?status=, /bytes?n=, echo, ...) are listed
// at the top of tools/origin/main.cc. Test-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace lb::test {

class OriginProcess {
 public:
  // Starts `lb-origin --listen 127.0.0.1:0 --name NAME [extra...]` and waits (bounded) for
  // the port it reports. ok() is false when it did not come up; output() says why.
  explicit OriginProcess(std::string name, std::vector<std::string> extra = {});

  bool ok() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  const std::string& name() const { return name_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string output() const { return process_->output(); }
  Process& process() { return *process_; }

  struct Stats {
    uint64_t connections_accepted = 0;
    uint64_t connections_active = 0;
    uint64_t requests_served = 0;   // counts this /stats request too
  };
  // GET /stats on a fresh connection (which itself counts as one accepted connection and one
  // request). nullopt when the origin does not answer.
  std::optional<Stats> stats();

  // SIGTERM and wait: 0 when it exited cleanly (under SAN=1 this includes LeakSanitizer's
  // verdict on the origin).
  std::optional<int> stop() { return process_->stop(15, 10s); }

 private:
  std::string name_;
  std::unique_ptr<Process> process_;
  uint16_t port_ = 0;
};

}  // namespace lb::test
