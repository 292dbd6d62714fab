// Real lb and lb-origin processes on 127.0.0.1 for the HTTP proxy tests: origins on ports the
// kernel picks (they report them), lb on a free port with a config written to a temp file.
// Every process dies with the harness.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {

class ProxyHarness {
 public:
  ~ProxyHarness() {
    // lb must stop cleanly on SIGTERM whatever the test left in flight: under SAN=1 this is
    // where a leak or a sanitizer report at exit turns into a failure.
    if (lb_ && lb_->running()) {
      auto code = lb_->stop(15, 10s);
      EXPECT_EQ(code, std::optional<int>(0)) << "lb did not exit cleanly:\n" << lb_->output();
    }
    lb_.reset();
    origins_.clear();
    if (!config_path_.empty()) unlink(config_path_.c_str());
  }

  // Starts an lb-origin named `name`; false (with the output in *why) when it does not come up.
  bool startOrigin(const std::string& name, std::string* why = nullptr) {
    auto p = std::make_unique<Process>(std::vector<std::string>{
        builtBinary("lb-origin"), "--listen", "127.0.0.1:0", "--name", name});
    auto port = p->waitForListeningPort("listening on");
    if (!port) {
      if (why) *why = p->output();
      return false;
    }
    origin_port_[name] = *port;
    origins_[name] = std::move(p);
    return true;
  }
  uint16_t originPort(const std::string& name) { return origin_port_.at(name); }
  Process& origin(const std::string& name) { return *origins_.at(name); }
  void killOrigin(const std::string& name) {
    origins_.at(name)->stop(9);
  }
  // Starts `name` again on the port it had (a restarted server); false when it does not
  // come up there.
  bool restartOrigin(const std::string& name, std::string* why = nullptr) {
    const std::string listen = "127.0.0.1:" + std::to_string(origin_port_.at(name));
    auto p = std::make_unique<Process>(std::vector<std::string>{
        builtBinary("lb-origin"), "--listen", listen, "--name", name});
    if (!p->waitForListeningPort("listening on")) {
      if (why) *why = p->output();
      return false;
    }
    origins_[name] = std::move(p);
    return true;
  }

  // `backends = [ ... ]` for the named origins, in order.
  std::string backendsToml(const std::vector<std::string>& names) {
    std::string s = "backends = [\n";
    for (const auto& n : names)
      s += "  { name = \"" + n + "\", address = \"127.0.0.1:" +
           std::to_string(origin_port_.at(n)) + "\" },\n";
    return s + "]\n";
  }

  // Writes the config (with `{PORT}` replaced by lb's port) and starts lb; false when lb
  // does not start listening.
  bool startLb(std::string config, std::string* why = nullptr) {
    port_ = freePort();
    admin_port_ = freePort();
    for (size_t at; (at = config.find("{PORT}")) != std::string::npos;)
      config.replace(at, 6, std::to_string(port_));
    for (size_t at; (at = config.find("{ADMIN}")) != std::string::npos;)
      config.replace(at, 7, std::to_string(admin_port_));
    // {PORT1}..{PORT9}: more free ports (extra listeners, addresses nobody listens on).
    for (char d = '1'; d <= '9'; ++d) {
      std::string tag = std::string("{PORT") + d + "}";
      if (config.find(tag) == std::string::npos) continue;
      uint16_t p = freePort();
      extra_ports_[d - '0'] = p;
      for (size_t at; (at = config.find(tag)) != std::string::npos;)
        config.replace(at, tag.size(), std::to_string(p));
    }
    char path[] = "/tmp/lb-proxy-test-XXXXXX.toml";
    int fd = mkstemps(path, 5);
    if (fd < 0) return false;
    ::close(fd);
    config_path_ = path;
    std::ofstream(config_path_) << config;
    lb_ = std::make_unique<Process>(
        std::vector<std::string>{builtBinary("lb"), "--config", config_path_});
    bool up = lb_->waitForOutput("listening on", 10s) && waitForPort(port_, 5s) &&
              (config.find("127.0.0.1:" + std::to_string(admin_port_)) == std::string::npos ||
               waitForPort(admin_port_, 5s));
    if (!up && why) *why = lb_->output();
    return up;
  }
  uint16_t port() const { return port_; }
  uint16_t adminPort() const { return admin_port_; }
  uint16_t extraPort(int n) const { return extra_ports_.at(n); }
  Process& lb() { return *lb_; }
  const std::string& configPath() const { return config_path_; }

  // Peak resident set of lb so far (VmHWM) and now (VmRSS), in KiB.
  long lbStatusKib(const char* field) {
    std::ifstream in("/proc/" + std::to_string(lb_->pid()) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(field, 0) == 0) return atol(line.c_str() + strlen(field) + 1);
    return -1;
  }

 private:
  std::map<std::string, std::unique_ptr<Process>> origins_;
  std::map<std::string, uint16_t> origin_port_;
  std::unique_ptr<Process> lb_;
  std::string config_path_;
  uint16_t port_ = 0;
  uint16_t admin_port_ = 0;
  std::map<int, uint16_t> extra_ports_;
};

// A GET with the header `x-key: key` on an open keep-alive connection; the backend's name, or
// "" (with the status in *status) when the answer was not a 200 from an origin.
inline std::string backendFor(TcpClient& c, const std::string& target, const std::string& headers,
                              int* status = nullptr) {
  if (!c.send(httpRequest("GET", target, headers))) return "";
  auto r = readHttpResponse(c);
  if (status) *status = r.ok ? r.status : -1;
  if (!r.ok || r.status != 200) return "";
  return r.header("x-backend").value_or("");
}

// The number after "key": in lb-origin's /stats JSON, or -1.
inline long statsField(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return atol(json.c_str() + at + key.size() + 3);
}

inline long originStat(uint16_t origin_port, const std::string& key) {
  auto r = httpExchange(origin_port, httpRequest("GET", "/stats"));
  return r.ok ? statsField(r.body, key) : -1;
}

}  // namespace lb::test
