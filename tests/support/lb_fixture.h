// A real `lb` process for the lifecycle and TCP integration tests: writes a config to a temp
// file, starts lb on it, waits until its ports accept, rewrites the file and sends SIGHUP, and
// reads its access log. Test-thread only.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace lb::test {

inline std::string tempPath(const char* tag) {
  const char* dir = getenv("TMPDIR");
  std::string templ = std::string(dir && *dir ? dir : "/tmp") + "/lb-" + tag + "-XXXXXX";
  int fd = mkstemp(templ.data());
  if (fd >= 0) ::close(fd);
  return templ;
}

inline std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeWholeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

inline size_t countOf(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

class LbProcess {
 public:
  LbProcess() : config_(tempPath("conf")), access_log_(tempPath("access")) {}
  ~LbProcess() {
    proc_.reset();
    unlink(config_.c_str());
    unlink(access_log_.c_str());
  }

  const std::string& configPath() const { return config_; }
  // A file the config can name as lb.access_log.
  const std::string& accessLogPath() const { return access_log_; }
  std::string accessLog() const { return readWholeFile(access_log_); }

  // Writes `toml` and starts lb on it; true once every port in `ports` accepts.
  bool start(const std::string& toml, const std::vector<uint16_t>& ports) {
    writeWholeFile(config_, toml);
    proc_ = std::make_unique<Process>(std::vector<std::string>{builtBinary("lb"), "--config", config_});
    for (uint16_t p : ports)
      if (!waitForPort(p, 10s) || !proc_->running()) return false;
    return true;
  }

  // Rewrites the config, sends SIGHUP and waits for lb to log the outcome. True when it
  // reloaded, false when it reported the file bad (or said nothing before the deadline).
  bool reload(const std::string& toml) {
    size_t ok_before = countOf(output(), "reloaded ");
    size_t bad_before = countOf(output(), "reload failed");
    writeWholeFile(config_, toml);
    kill(proc_->pid(), SIGHUP);
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string out = output();
      if (countOf(out, "reloaded ") > ok_before) return true;
      if (countOf(out, "reload failed") > bad_before) return false;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  // Waits until the access log holds at least n lines that carry bytes from the client (it is
  // flushed about once a second). Lines without (bytes_in=0) are readiness probes.
  bool waitAccessLines(size_t n, Millis timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::string log = accessLog();
      if (countOf(log, "\n") - countOf(log, " bytes_in=0 ") >= n) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
  }

  Process& process() { return *proc_; }
  std::string output() const { return proc_ ? proc_->output() : ""; }

 private:
  std::string config_;
  std::string access_log_;
  std::unique_ptr<Process> proc_;
};

// `key=value` of one logfmt field in a line, or "".
inline std::string logField(const std::string& line, const std::string& key) {
  std::string needle = " " + key + "=";
  size_t at = line.find(needle);
  if (at == std::string::npos) return "";
  at += needle.size();
  size_t end = line.find_first_of(" \n", at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The access log's lines, without the readiness probes' (no bytes from the client) unless
// `with_probes`.
inline std::vector<std::string> lines(const std::string& text, bool with_probes = false) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);)
    if (!l.empty() && (with_probes || l.find(" bytes_in=0 ") == std::string::npos))
      out.push_back(l);
  return out;
}

}  // namespace lb::test
