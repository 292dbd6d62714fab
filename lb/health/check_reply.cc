#include "lb/health/check_reply.h"

#include <cstring>
#include <string_view>

namespace lb {

namespace {

// A reply line as a log can show it: at most 64 bytes, anything unprintable as '?'.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= ' ' && c < 0x7f) ? c : '?';
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

CheckSpec checkSpecOf(const HealthConfig& health, const std::string& address,
                      std::string_view password, bool identity) {
  CheckSpec s;
  s.type = health.type;
  s.expect = health.expect;
  s.interval_ms = static_cast<uint64_t>(health.interval.count());
  s.timeout_ms = static_cast<uint64_t>(health.timeout.count());
  s.address = address;
  switch (health.type) {
    case HealthCheckType::kHttp:
      // Connection: close: one check, one connection, as HAProxy's and Envoy's HTTP checks
      // default to; a check never sits in the backend's keep-alive pool.
      s.request = "GET " + health.path + " HTTP/1.1\r\nHost: " + address +
                  "\r\nUser-Agent: lb-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n";
      break;
    case HealthCheckType::kRedis:
      // Pipelined in one write, as redis-cli -a does its AUTH: Redis reads commands in
      // order, so PING is judged under the AUTH before it.
      if (!password.empty()) {
        s.auth = true;
        s.request = "*2\r\n$4\r\nAUTH\r\n$" + std::to_string(password.size()) + "\r\n";
        s.request.append(password);
        s.request += "\r\n";
      }
      s.request += "*1\r\n$4\r\nPING\r\n";
      if (identity) {
        s.identity = true;
        s.request += "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n";
      }
      break;
    case HealthCheckType::kMemcached:
      s.identity = identity;
      s.request = identity ? "stats\r\n" : "version\r\n";
      break;
    case HealthCheckType::kTcp:
      break;
  }
  return s;
}

CheckReply::Verdict CheckReply::fail(std::string why) noexcept {
  detail_ = std::move(why);
  return Verdict::kFail;
}

CheckReply::Verdict CheckReply::received(size_t n) noexcept {
  const size_t from = len_;
  len_ += n;
  if (type_ == HealthCheckType::kHttp) return judgeHttp(from);
  return judgeLine();
}

CheckReply::Verdict CheckReply::closed() noexcept {
  if (type_ == HealthCheckType::kTcp) return Verdict::kPass;
  if (len_ == 0) return fail("closed without a reply");
  return fail("closed in the middle of its reply");
}

// Redis and memcached answer one line (Redis two, AUTH's then PING's): judge each once its
// end is here.
bool CheckReply::lineAt(std::string_view* line, size_t* next) const noexcept {
  const char* eol = static_cast<const char*>(memchr(buf_ + line_, '\n', len_ - line_));
  if (eol == nullptr) return false;
  *line = std::string_view(buf_ + line_, static_cast<size_t>(eol - buf_) - line_);
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  *next = static_cast<size_t>(eol - buf_) + 1;
  return true;
}

CheckReply::Verdict CheckReply::incomplete(const char* what) noexcept {
  if (len_ >= kMaxReply) return fail(std::string(what) + " longer than 16 KiB");
  return Verdict::kNeedMore;
}

CheckReply::Verdict CheckReply::judgeLine() noexcept {
  if (type_ == HealthCheckType::kMemcached && identity_wanted_) return judgeMemcachedStats();
  if (pong_) return judgeRedisInfo();
  std::string_view line;
  size_t next = 0;
  if (!lineAt(&line, &next)) return incomplete("a reply line");
  if (type_ == HealthCheckType::kRedis) {
    if (auth_pending_) {
      // Redis 7 acl.c answers a refused AUTH -WRONGPASS (older ones -ERR invalid password),
      // and a server without requirepass -ERR AUTH <password> called without any password
      // configured: each is the cluster's password being wrong, as the data connections
      // would find; say so rather than that the server is dead.
      if (line != "+OK") return fail("redis AUTH failed: " + printable(line));
      auth_pending_ = false;
      line_ = next;
      return judgeLine();
    }
    if (line == "+PONG") {
      detail_ = "+PONG";
      if (!identity_wanted_) return Verdict::kPass;
      pong_ = true;
      line_ = next;
      return judgeRedisInfo();
    }
    // server.c processCommand answers -NOAUTH when requirepass is set and no AUTH came.
    if (line.substr(0, 7) == "-NOAUTH")
      return fail("redis PING refused: " + printable(line) +
                  " (the server wants a password; the cluster has none)");
    return fail("reply '" + printable(line) + "', expected +PONG");
  }
  if (line.substr(0, 8) == "VERSION ") {
    detail_ = printable(line);
    return Verdict::kPass;
  }
  return fail("reply '" + printable(line) + "', expected VERSION");
}

// INFO server's reply after +PONG: a bulk string whose "run_id:" line names the process. An
// error (INFO refused) passes without an identity: PING said the server is up.
CheckReply::Verdict CheckReply::judgeRedisInfo() noexcept {
  std::string_view head;
  size_t body = 0;
  if (!lineAt(&head, &body)) return incomplete("a reply line");
  if (head.empty() || head[0] != '$') return Verdict::kPass;
  size_t size = 0;
  for (char c : head.substr(1)) {
    if (c < '0' || c > '9' || size > kMaxReply) return Verdict::kPass;
    size = size * 10 + static_cast<size_t>(c - '0');
  }
  if (body + size > kMaxReply) return Verdict::kPass;   // no identity rather than a failure
  if (len_ < body + size) return Verdict::kNeedMore;
  const std::string_view info(buf_ + body, size);
  const size_t at = info.find("run_id:");
  if (at != std::string_view::npos) {
    const size_t end = info.find_first_of("\r\n", at);
    identity_ = "run_id " + printable(info.substr(at + 7, end == std::string_view::npos
                                                              ? std::string_view::npos
                                                              : end - at - 7));
  }
  return Verdict::kPass;
}

// stats: "STAT <name> <value>" lines up to END. The pid and the start time (time - uptime,
// the same for the process's life) name it.
CheckReply::Verdict CheckReply::judgeMemcachedStats() noexcept {
  for (;;) {
    std::string_view line;
    size_t next = 0;
    if (!lineAt(&line, &next)) return incomplete("a stats reply");
    line_ = next;
    if (line == "END") {
      if (stat_pid_.empty()) return fail("stats without a pid");
      identity_ = "pid " + stat_pid_ + " started " + std::to_string(stat_time_ - stat_uptime_);
      detail_ = "stats";
      return Verdict::kPass;
    }
    if (line.substr(0, 5) != "STAT ") return fail("reply '" + printable(line) + "', expected STAT");
    const std::string_view rest = line.substr(5);
    const size_t space = rest.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view name = rest.substr(0, space), value = rest.substr(space + 1);
    if (name == "pid") stat_pid_ = printable(value);
    if (name == "time" || name == "uptime") {
      int64_t v = 0;
      for (char c : value) v = c >= '0' && c <= '9' ? v * 10 + (c - '0') : v;
      (name == "time" ? stat_time_ : stat_uptime_) = v;
    }
  }
}

CheckReply::Verdict CheckReply::judgeHttp(size_t from) noexcept {
  size_t consumed = 0;
  HttpParser::Result r = parser_.feed(buf_, buf_ + from, len_ - from, &consumed);
  // An interim 1xx (100 Continue, 103) is not the answer: on to the final head.
  while (r == HttpParser::Result::kHeadComplete && parser_.head().status < 200) {
    from += consumed;
    parser_.resumeAfterHead(false);
    size_t none = 0;
    parser_.feed(buf_, buf_ + from, 0, &none);   // completes the interim message
    parser_.nextMessage();
    r = parser_.feed(buf_, buf_ + from, len_ - from, &consumed);
  }
  switch (r) {
    case HttpParser::Result::kHeadComplete:
    case HttpParser::Result::kMessageComplete: {
      const int status = parser_.head().status;
      if (status == static_cast<int>(expect_)) {
        detail_ = "status " + std::to_string(status);
        return Verdict::kPass;
      }
      return fail("status " + std::to_string(status) + ", expected " + std::to_string(expect_));
    }
    case HttpParser::Result::kError:
      return fail(std::string("malformed response: ") +
                  (parser_.errorReason() != nullptr ? parser_.errorReason() : "?"));
    case HttpParser::Result::kNeedMore:
      break;
  }
  if (len_ >= kMaxReply) return fail("a response head longer than 16 KiB");
  return Verdict::kNeedMore;
}

}  // namespace lb
