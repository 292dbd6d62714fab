// Real cache servers from the Debian packages for integration tests: redis-server and
// memcached on free loopback ports, no persistence, gone when the object dies; plus a tiny
// RESP (Redis protocol) and memcached-text client over TcpClient. Test-thread only.
//
//   lb::test::CacheServer redis(lb::test::CacheServer::kRedis);
//   ASSERT_TRUE(redis.ok()) << redis.output();
//   lb::test::TcpClient c;
//   ASSERT_TRUE(c.connect(redis.port()));
//   EXPECT_EQ(lb::test::redisCall(c, {"SET", "k", "v"}), "OK");
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace lb::test {

class CacheServer {
 public:
  // kRedisTls: redis-server with TLS only on its port (`--port 0 --tls-port P`); extra_args
  // must name its --tls-cert-file, --tls-key-file and --tls-ca-cert-file.
  enum Kind { kRedis, kMemcached, kRedisTls };

  // Starts the server on a port that was free a moment ago; if it loses that race (the
  // process exits at once), tries another port, a few times. Check ok(). `extra_args` go
  // on the server's command line after lb's own ({"--requirepass", "s3cret"}).
  explicit CacheServer(Kind kind, const std::vector<std::string>& extra_args = {});
  bool ok() const { return proc_ != nullptr; }
  uint16_t port() const { return port_; }
  // The server's process id (to SIGSTOP it, as a frozen server); -1 when !ok().
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }
  std::string output() const { return proc_ ? proc_->output() : error_; }
  // "127.0.0.1:PORT", for a config file.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The server process (to stop or freeze it); only when ok().
  Process& process() { return *proc_; }
  // Kills the server (SIGKILL) and starts it again on the same port, empty, as a crashed
  // server comes back; true once it listens.
  bool restart();

 private:
  bool launch();

  std::vector<std::string> argv_;
  std::unique_ptr<Process> proc_;
  uint16_t port_ = 0;
  std::string error_;
};

// One Redis command as a RESP array of bulk strings.
std::string redisEncode(std::initializer_list<std::string_view> args);

// Sends one command and reads one reply. Returns the reply's text: a simple string ("OK"),
// an error with its '-' ("-ERR ..."), an integer as decimal text, a bulk string's bytes, or
// nullopt for a nil bulk string or when no complete reply arrived before the deadline (then
// *failed, if given, is set).
std::optional<std::string> redisCall(TcpClient& c, std::initializer_list<std::string_view> args,
                                     bool* failed = nullptr, Millis timeout = 5s);

// Reads one RESP reply (not arrays) from c, as redisCall.
std::optional<std::string> readRedisReply(TcpClient& c, bool* failed = nullptr,
                                          Millis timeout = 5s);

}  // namespace lb::test
