// A cluster's TLS towards its backends made into one client SSL_CTX, once, on the main thread
// (at start and at every reload), then shared read-only by every worker's upstream
// connections and the main thread's health checks (docs/config.md, "tls (clusters)").
//
// Verification (on by default, as Envoy's validation context and HAProxy's `verify
// required`): the backend's chain must lead to a certificate of `ca` (the system's store
// when none is given), and the certificate must name `server_name`, which is also sent as
// SNI; with no server_name it must name the address lb connected to (an IP SAN), as nginx's
// proxy_ssl_verify checks the name it connected by. A client certificate and key, when given,
// answer a backend that asks for one (mutual TLS).
//
// Resumption: each worker keeps the last session ticket each backend address gave it and
// offers it on its next connection there (HAProxy keeps one per server and thread too), so
// a tcp listener's connection per client costs an abbreviated handshake, not a full one.
// A reload builds a new context with empty slots.
#pragma once

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "lb/tls/tls_key_pair.h"

namespace lb {

struct TlsClientOptions {
  std::string ca;              // PEM bundle of trusted certificates; "" = the system's store
  bool verify = true;
  std::string server_name;     // SNI and the name checked; "" = no SNI, the address checked
  std::string cert;            // client certificate (mutual TLS), with `key`; "" = none
  std::string key;
  std::string min_version = "1.2";
  std::string label;           // who this is for in log lines: "cluster cache"
  // Whether a failed handshake logs its own line. The etcd client's owner logs each failure
  // of a request once, with the handshake's reason in it (failureText), so it turns this off.
  bool log_failures = true;
};

// What is wrong with one field ("ca", "cert" or "key").
using TlsClientBuildError = TlsFileError;

class TlsClientContext {
 public:
  // Main thread. `workers`: the session slots to keep (one per worker loop). Null with
  // *errors when a file does not load.
  static std::shared_ptr<const TlsClientContext> build(const TlsClientOptions& options,
                                                       unsigned workers,
                                                       std::vector<TlsClientBuildError>* errors);
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  SSL_CTX* context() const noexcept { return ctx_; }
  bool verify() const noexcept { return verify_; }
  const std::string& serverName() const noexcept { return server_name_; }
  const std::string& label() const noexcept { return label_; }
  // The main thread's session slot (health checks), after the workers'.
  unsigned mainSlot() const noexcept { return static_cast<unsigned>(slots_.size() - 1); }

  // Loop thread of `worker` (or the main thread with worker == workers, its own slot): a new
  // SSL for a connection to `peer`, its SNI, name check and last session set; null when
  // OpenSSL cannot allocate. The SSL remembers (worker, peer) for keepSession.
  SSL* newConnection(unsigned worker, const sockaddr* peer) const noexcept;

  // Whether a handshake failure may be logged now: one line a second per context, so a
  // backend with a wrong certificate does not flood the log with one line per connect.
  bool mayLog() const noexcept;
  bool logsFailures() const noexcept { return log_failures_; }

 private:
  struct Session {
    sockaddr_storage peer{};
    SSL_SESSION* session = nullptr;   // the last one the backend gave; owned
  };
  struct alignas(64) Slot {
    // One per backend address this worker connected to; unique_ptr so that an SSL's pointer
    // to its entry survives the vector growing.
    std::vector<std::unique_ptr<Session>> sessions;
  };

  TlsClientContext() = default;
  static int onNewSession(SSL* ssl, SSL_SESSION* session);
  Session* sessionOf(unsigned worker, const sockaddr* peer) const noexcept;

  SSL_CTX* ctx_ = nullptr;
  bool verify_ = true;
  bool log_failures_ = true;
  std::string server_name_;
  std::string label_;
  // Each slot is touched by one thread only (its worker's loop): no lock.
  mutable std::vector<Slot> slots_;
  mutable std::atomic<uint64_t> last_log_ns_{0};
};

// How the verification of `ssl`'s peer failed, for a log line ("" when it did not).
std::string tlsVerifyText(SSL* ssl);

}  // namespace lb
