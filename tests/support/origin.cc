// OriginProcess: spawn lb-origin on an ephemeral port and read its /stats.
#include "tests/support/origin.h"

#include <cstdlib>

#include "tests/support/http_client.h"

namespace lb::test {
namespace {

// The number after "\"key\":" in a flat JSON object; nullopt when absent.
std::optional<uint64_t> jsonNumber(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nullopt;
  return strtoull(json.c_str() + at + key.size() + 3, nullptr, 10);
}

}  // namespace

OriginProcess::OriginProcess(std::string name, std::vector<std::string> extra)
    : name_(std::move(name)) {
  std::vector<std::string> argv = {builtBinary("lb-origin"), "--listen", "127.0.0.1:0",
                                   "--name", name_};
  argv.insert(argv.end(), extra.begin(), extra.end());
  process_ = std::make_unique<Process>(argv);
  port_ = process_->waitForListeningPort("listening on", 10s).value_or(0);
}

std::optional<OriginProcess::Stats> OriginProcess::stats() {
  auto r = httpExchange(port_, httpRequest("GET", "/stats"));
  if (!r || r.status != 200) return std::nullopt;
  auto accepted = jsonNumber(r.body, "connections_accepted");
  auto active = jsonNumber(r.body, "connections_active");
  auto served = jsonNumber(r.body, "requests_served");
  if (!accepted || !active || !served) return std::nullopt;
  return Stats{*accepted, *active, *served};
}

}  // namespace lb::test
