// What one active check sends and what it accepts, per check type (health.type):
//
//   http       GET <path> HTTP/1.1 (Host: the backend's address, Connection: close); passes
//              when the response head's status is `expect`. The head is parsed with lb's
//              HttpParser; the body is never read.
//   tcp        nothing: the connect passing is the check passing.
//   redis      PING (RESP); passes on +PONG. An -ERR, -LOADING or -NOAUTH reply fails. When
//              the cluster has a password, AUTH <password> goes first in the same write
//              (the AUTH lb's data connections send, lb/proxy/cache/server_connection.h): a server
//              with requirepass answers PING only after it, and a refused AUTH (-WRONGPASS)
//              fails the check as "redis AUTH failed: ...", not as a dead server.
//   memcached  version; passes on a VERSION line.
//
// With `identity` (a cluster with a handover, whose keys come back warm after a restart),
// the check also learns which server process answered, so that a restart quicker than `fall`
// checks is seen: redis sends INFO server after PING and reads its run_id (an INFO refused,
// by an ACL or a renamed command, passes without one); memcached sends stats instead of
// version and passes on its END, the identity its pid and start time (time - uptime).
//
// A reply is judged as its bytes arrive; Main thread only, no libuv here (lb/health/probe.h
// does the I/O).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lb/config/config.h"
#include "lb/http/parser.h"

namespace lb {

// One backend's checks, as its checker runs them. Two specs compare equal when a running
// checker can go on as it is.
class TlsClientContext;   // lb/tls/tls_client_context.h

struct CheckSpec {
  HealthCheckType type = HealthCheckType::kTcp;
  std::string request;        // the bytes sent after the connect (empty for tcp)
  bool auth = false;          // redis: the first reply answers AUTH, the second PING
  bool identity = false;      // redis, memcached: learn the server's identity too
  uint32_t expect = 200;      // http
  uint64_t interval_ms = 2000;
  uint64_t timeout_ms = 1000;
  std::string address;        // "host:port", for messages and the Host header
  // The cluster's TLS towards its backends (null: plain): the check connects with it.
  std::shared_ptr<const TlsClientContext> tls;

  bool operator==(const CheckSpec&) const = default;
};

// The spec of `health` for the backend at `address`; `password`: the cluster's (redis AUTHs
// with it when not empty, as the data connections do).
CheckSpec checkSpecOf(const HealthConfig& health, const std::string& address,
                      std::string_view password = {}, bool identity = false);

class CheckReply {
 public:
  enum class Verdict : uint8_t { kNeedMore, kPass, kFail };
  // The longest reply head (http) or line (redis, memcached) judged; longer fails.
  static constexpr size_t kMaxReply = 16 * 1024;

  explicit CheckReply(const CheckSpec& spec)
      : type_(spec.type),
        expect_(spec.expect),
        auth_pending_(spec.auth),
        identity_wanted_(spec.identity) {}
  CheckReply(const CheckReply&) = delete;
  CheckReply& operator=(const CheckReply&) = delete;

  // Where the next bytes go, and how many fit: the caller reads into it, then calls
  // received(n). Space for at least one byte while the verdict is kNeedMore.
  char* space() noexcept { return buf_ + len_; }
  size_t spaceLeft() const noexcept { return kMaxReply - len_; }
  Verdict received(size_t n) noexcept;
  // The backend closed its side before a verdict.
  Verdict closed() noexcept;
  // Why it passed or failed, for the log and /backends ("status 503, expected 200").
  const std::string& detail() const noexcept { return detail_; }
  // The server process that passed (run_id; pid and start time); "" when not asked or not
  // told.
  const std::string& identity() const noexcept { return identity_; }

 private:
  // The line at line_ (its CR LF off) and where the next one starts; false while it has not
  // all arrived.
  bool lineAt(std::string_view* line, size_t* next) const noexcept;
  // No verdict yet: more bytes, unless the buffer is full (`what` was too long).
  Verdict incomplete(const char* what) noexcept;
  Verdict judgeLine() noexcept;
  Verdict judgeRedisInfo() noexcept;
  Verdict judgeMemcachedStats() noexcept;
  Verdict judgeHttp(size_t from) noexcept;
  Verdict fail(std::string why) noexcept;

  const HealthCheckType type_;
  const uint32_t expect_;
  bool auth_pending_;          // redis: the next line answers AUTH
  const bool identity_wanted_;
  bool pong_ = false;          // redis with identity: PING passed, INFO's reply is next
  std::string identity_;
  std::string stat_pid_;       // memcached stats, as they come
  int64_t stat_time_ = 0;
  int64_t stat_uptime_ = 0;
  char buf_[kMaxReply];
  size_t len_ = 0;
  size_t line_ = 0;            // where the line being judged starts (after AUTH's reply)
  HttpParser parser_{HTTP_RESPONSE};
  std::string detail_;
};

}  // namespace lb
