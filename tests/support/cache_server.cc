#include "tests/support/cache_server.h"

#include <cstdlib>

namespace lb::test {

CacheServer::CacheServer(Kind kind, const std::vector<std::string>& extra_args) {
  for (int attempt = 0; attempt < 5 && !proc_; ++attempt) {
    uint16_t port = freePort();
    std::string p = std::to_string(port);
    std::vector<std::string> argv;
    if (kind == kRedis || kind == kRedisTls) {
      argv = {"redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
              "--protected-mode", "no", "--loglevel", "warning"};
      if (kind == kRedisTls)
        argv.insert(argv.end(), {"--port", "0", "--tls-port", p});
      else
        argv.insert(argv.end(), {"--port", p});
    } else {
      argv = {"memcached", "-l", "127.0.0.1", "-p", p, "-U", "0", "-m", "16", "-t", "1",
              // As root (CI containers) memcached insists on a user to drop to; ignored
              // otherwise.
              "-u", "nobody"};
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    argv_ = argv;
    port_ = port;
    if (!launch()) port_ = 0;
  }
}

// Neither server says it is ready in a form both share: wait for the port, and make sure it
// is this process that holds it (it exits at once when the port was taken).
bool CacheServer::launch() {
  auto proc = std::make_unique<Process>(argv_);
  bool up = false;
  for (int i = 0; i < 500 && !up && proc->running(); ++i) up = waitForPort(port_, 10ms);
  if (!up || !proc->running()) {
    error_ += proc->output();
    return false;
  }
  proc_ = std::move(proc);
  return true;
}

bool CacheServer::restart() {
  if (!proc_) return false;
  proc_->stop(9);
  proc_.reset();
  return launch();
}

std::string redisEncode(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out.append(a);
    out += "\r\n";
  }
  return out;
}

std::optional<std::string> readRedisReply(TcpClient& c, bool* failed, Millis timeout) {
  auto fail = [&]() -> std::optional<std::string> {
    if (failed) *failed = true;
    return std::nullopt;
  };
  if (!c.readUntil("\r\n", timeout)) return fail();
  std::string& buf = c.buffer();
  size_t eol = buf.find("\r\n");
  std::string line = buf.substr(0, eol);
  if (line.empty()) return fail();
  char type = line[0];
  std::string rest = line.substr(1);
  if (type == '+' || type == ':') {
    c.take(eol + 2);
    return rest;
  }
  if (type == '-') {
    c.take(eol + 2);
    return line;
  }
  if (type == '$') {
    long n = strtol(rest.c_str(), nullptr, 10);
    if (n < 0) {
      c.take(eol + 2);
      return std::nullopt;
    }
    size_t need = eol + 2 + static_cast<size_t>(n) + 2;
    if (buf.size() < need && !c.readAtLeast(need, timeout)) return fail();
    std::string value = c.buffer().substr(eol + 2, static_cast<size_t>(n));
    c.take(need);
    return value;
  }
  return fail();   // arrays and RESP3 types are not needed by the tests
}

std::optional<std::string> redisCall(TcpClient& c, std::initializer_list<std::string_view> args,
                                     bool* failed, Millis timeout) {
  if (!c.send(redisEncode(args), timeout)) {
    if (failed) *failed = true;
    return std::nullopt;
  }
  return readRedisReply(c, failed, timeout);
}

}  // namespace lb::test
