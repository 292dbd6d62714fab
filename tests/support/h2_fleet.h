// A real lb with HTTP/2 on its http listeners in front of three lb-origins, for the tests of
// tests/integration/h2/: a plain listener that tells h2c from HTTP/1.1 by the preface
// (`web`, keyed by x-key), the same behind TLS with alpn ["h2", "http/1.1"] (`webtls`), one
// keyed by a cookie (`cookies`) and one with timeouts.idle = 400ms (`short`); all on the
// same cluster, so each key's backend can be
// read over HTTP/1.1 and over HTTP/2 and compared. Clients: curl, nghttp and Debian's
// python3-h2 (tests/support/h2_probe.py).
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/http_client.h"
#include "tests/support/lb_fixture.h"
#include "tests/support/origin.h"
#include "tests/support/process.h"
#include "tests/support/repo_file.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tls_certs.h"

namespace lb::test {

class H2Fleet {
 public:
  H2Fleet() {
    if (!dir_.ok()) return;
    ca_ = std::make_unique<TlsCa>(dir_.path());
    if (!ca_->ok()) return;
    cert_ = ca_->issue("lb", {"localhost"});
    if (!cert_.ok) return;
    for (const char* name : {"origin-a", "origin-b", "origin-c"}) {
      origins_.push_back(std::make_unique<OriginProcess>(name));
      if (!origins_.back()->ok()) return;
    }
    web_ = freePort();
    tls_ = freePort();
    cookies_ = freePort();
    short_ = freePort();
    admin_ = freePort();
    started_ = lb_.start(config(), {web_, tls_, cookies_, short_, admin_});
  }

  bool ok() const { return started_; }
  std::string output() const { return lb_.output(); }
  LbProcess& lb() { return lb_; }
  uint16_t web() const { return web_; }
  uint16_t tls() const { return tls_; }
  uint16_t cookies() const { return cookies_; }
  uint16_t shortIdle() const { return short_; }   // timeouts.idle = 400ms
  OriginProcess& origin(size_t i) { return *origins_.at(i); }

  // Requests every origin served so far (its /stats, minus the /stats requests themselves).
  uint64_t originRequests() {
    ++stats_asked_;
    uint64_t n = 0;
    for (auto& o : origins_)
      if (auto s = o->stats()) n += s->requests_served;
    return n - stats_asked_ * origins_.size();
  }

  // Which backend the key reaches over HTTP/1.1 on `web` (its X-Backend), "" on failure.
  std::string backendOverHttp11(const std::string& key) {
    HttpResponse r = httpExchange(web_, httpRequest("GET", "/k", "X-Key: " + key + "\r\n"));
    auto b = r.header("X-Backend");
    return r.ok && b ? std::string(*b) : "";
  }

  // tests/support/h2_probe.py against `port`; its JSON output (exit code in r.exit_code).
  CommandResult probe(uint16_t port, const std::vector<std::string>& args, Millis timeout = 60s) {
    std::vector<std::string> argv = {"/usr/bin/python3", repoFile("tests/support/h2_probe.py"),
                                     std::to_string(port)};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, timeout);
  }

  std::string metrics() {
    return runCommand({"curl", "-s", "http://127.0.0.1:" + std::to_string(admin_) + "/metrics"})
        .out;
  }
  // The value of the series `name{labels}` in /metrics, or -1.
  double metric(const std::string& series) {
    std::stringstream ss(metrics());
    for (std::string line; std::getline(ss, line);)
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return -1;
  }

 private:
  std::string config() const {
    std::string backends;
    for (const auto& o : origins_)
      backends += (backends.empty() ? "" : ", ") + std::string("{ name = \"") + o->name() +
                  "\", address = \"" + o->address() + "\" }";
    auto listener = [&](const std::string& name, uint16_t port, const std::string& extra) {
      return "[listeners." + name + "]\nprotocol = \"http\"\ncluster = \"web\"\nlisten = "
             "\"127.0.0.1:" + std::to_string(port) + "\"\n" + extra;
    };
    return "[lb]\nworkers = 2\naccess_log = \"" +
           lb_.accessLogPath() + "\"\n[admin]\nlisten = \"127.0.0.1:" + std::to_string(admin_) +
           "\"\n" + listener("web", web_, "hash = [ { header = \"x-key\" } ]\n") +
           listener("webtls", tls_,
                    "hash = [ { header = \"x-key\" } ]\ntls = { certificates = [ { cert = \"" +
                        cert_.cert + "\", key = \"" + cert_.key +
                        "\" } ], alpn = [\"h2\", \"http/1.1\"] }\n") +
           listener("cookies", cookies_, "hash = [ { cookie = \"user\" } ]\n") +
           listener("short", short_,
                    "hash = [ { header = \"x-key\" } ]\ntimeouts = { idle = \"400ms\" }\n") +
           "[clusters.web]\nbackends = [ " + backends + " ]\n";
  }

  TempDir dir_;
  std::unique_ptr<TlsCa> ca_;
  TlsCert cert_;
  std::vector<std::unique_ptr<OriginProcess>> origins_;
  uint16_t web_ = 0, tls_ = 0, cookies_ = 0, short_ = 0, admin_ = 0;
  uint64_t stats_asked_ = 0;
  LbProcess lb_;
  bool started_ = false;
};

}  // namespace lb::test
