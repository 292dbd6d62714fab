// lb-origin backends for the lifecycle tests: each on a port the kernel chose, named
// origin-a, origin-b, ...; answers carry `X-Backend: NAME`. Test-thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {

class OriginFleet {
 public:
  // Starts n origins; check ok().
  explicit OriginFleet(int n) {
    for (int i = 0; i < n; ++i) add();
  }
  // Starts one more (origin-<next letter>); false when it did not come up.
  bool add() {
    std::string name = std::string("origin-") + static_cast<char>('a' + procs_.size());
    auto p = std::make_unique<Process>(std::vector<std::string>{
        builtBinary("lb-origin"), "--listen", "127.0.0.1:0", "--name", name});
    auto port = p->waitForListeningPort("listening on", 10s);
    if (!port) {
      error_ += p->output();
      ok_ = false;
      return false;
    }
    names_.push_back(name);
    ports_.push_back(*port);
    procs_.push_back(std::move(p));
    return true;
  }
  bool ok() const { return ok_; }
  std::string error() const { return error_; }
  size_t size() const { return procs_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  uint16_t port(size_t i) const { return ports_[i]; }

  // `backends = [...]` entries for the first n origins.
  std::string backends(size_t n) const {
    std::string out;
    for (size_t i = 0; i < n; ++i)
      out += "  { name = \"" + names_[i] + "\", address = \"127.0.0.1:" +
             std::to_string(ports_[i]) + "\" },\n";
    return out;
  }

  // Stops origin i (SIGKILL: as a crashed server) and waits for it to exit.
  void stopOne(size_t i) { procs_[i]->stop(9); }

  // requests_served from the origin's /stats (includes this request), or -1.
  long requestsServed(size_t i) const {
    HttpResponse r = httpExchange(ports_[i], httpRequest("GET", "/stats"));
    if (!r) return -1;
    size_t at = r.body.find("\"requests_served\":");
    if (at == std::string::npos) return -1;
    return std::stol(r.body.substr(at + 18));
  }

 private:
  std::vector<std::unique_ptr<Process>> procs_;
  std::vector<std::string> names_;
  std::vector<uint16_t> ports_;
  bool ok_ = true;
  std::string error_;
};

}  // namespace lb::test
