// A listener's TLS settings made into OpenSSL contexts, once, on the main thread (at start
// and at every reload), then shared read-only by every worker's connections: one SSL_CTX per
// certificate, the first the default, SNI (the ClientHello's server_name) switching a
// connection to the certificate whose names match, exactly or by a "*." wildcard of one
// label (RFC 6125 6.4.3). Versions 1.2 and 1.3; Mozilla's "intermediate" configuration
// (https://wiki.mozilla.org/Security/Server_Side_TLS) for TLS 1.2 ciphers and groups; session
// tickets for both versions (a new context has new ticket keys, so keys rotate on reload);
// renegotiation refused (SSL_OP_NO_RENEGOTIATION); SSL_MODE_RELEASE_BUFFERS so that an idle
// connection holds no record buffers.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <vector>

#include "lb/tls/tls_key_pair.h"

namespace lb {

struct TlsCertificateFiles {
  std::string cert;   // PEM: the certificate, then its chain
  std::string key;    // PEM private key
};

struct TlsServerOptions {
  std::vector<TlsCertificateFiles> certificates;   // at least one; the first is the default
  std::string min_version = "1.2";                 // "1.2" or "1.3"
  std::vector<std::string> alpn;                   // protocols offered, in preference order
};

// What went wrong with one certificate (index into certificates, field "cert" or "key").
struct TlsBuildError {
  size_t certificate = 0;
  std::string field;
  std::string message;
};

// What every context of lb's has, server or client: versions from `min_version` ("1.2" or
// "1.3") up, Mozilla's intermediate TLS 1.2 ciphers and groups, no renegotiation, no
// compression, record buffers released while a connection is idle.
void applyTlsDefaults(SSL_CTX* ctx, const std::string& min_version);

class TlsServerContext {
 public:
  // Main thread. Null with *errors when a file cannot be read, the key does not match its
  // certificate, or the certificate has expired.
  static std::shared_ptr<const TlsServerContext> build(const TlsServerOptions& options,
                                                       std::vector<TlsBuildError>* errors);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  // The context a new connection starts on (the default certificate's).
  SSL_CTX* initial() const noexcept { return contexts_.front(); }
  const std::vector<TlsCertificateInfo>& certificates() const noexcept { return infos_; }
  // The context whose certificate names `host` (exact first, then a wildcard), else null.
  SSL_CTX* forServerName(const char* host) const noexcept;

 private:
  TlsServerContext() = default;
  std::vector<SSL_CTX*> contexts_;
  std::vector<TlsCertificateInfo> infos_;
  std::vector<unsigned char> alpn_wire_;   // length-prefixed, as ALPN sends it
};

}  // namespace lb
