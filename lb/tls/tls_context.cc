#include "lb/tls/tls_context.h"

#include <strings.h>

#include <cstring>

namespace lb {
namespace {

// Mozilla "intermediate" (version 5.7): ECDHE with AES-GCM or ChaCha20 first, DHE last. TLS
// 1.3 keeps OpenSSL's own suites, which are the same three Mozilla lists.
constexpr const char* kCiphers12 =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";
constexpr const char* kGroups = "X25519:prime256v1:secp384r1";
constexpr unsigned char kSessionContext[] = "lb";

bool nameMatches(const std::string& pattern, const char* host) {
  if (strcasecmp(pattern.c_str(), host) == 0) return true;
  if (pattern.size() < 3 || pattern.compare(0, 2, "*.") != 0) return false;
  const char* dot = strchr(host, '.');   // the wildcard stands for exactly one label
  return dot != nullptr && dot != host && strcasecmp(dot + 1, pattern.c_str() + 2) == 0;
}

int onServerName(SSL* ssl, int* alert, void* arg) {
  (void)alert;
  const auto* self = static_cast<const TlsServerContext*>(arg);
  const char* host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (host == nullptr) return SSL_TLSEXT_ERR_OK;   // no SNI: the default certificate
  SSL_CTX* ctx = self->forServerName(host);
  if (ctx != nullptr && ctx != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, ctx);
  return SSL_TLSEXT_ERR_OK;
}

int onAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
           unsigned inlen, void* arg) {
  (void)ssl;
  const auto* wire = static_cast<const std::vector<unsigned char>*>(arg);
  unsigned char* chosen = nullptr;
  // Server preference; a client offering none of ours goes on without ALPN (curl and
  // openssl s_client offer http/1.1; a redis client offers nothing).
  if (SSL_select_next_proto(&chosen, outlen, wire->data(), static_cast<unsigned>(wire->size()),
                            in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

void applyTlsDefaults(SSL_CTX* ctx, const std::string& min_version) {
  SSL_CTX_set_min_proto_version(ctx, min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_cipher_list(ctx, kCiphers12);
  SSL_CTX_set1_groups_list(ctx, kGroups);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
}

std::shared_ptr<const TlsServerContext> TlsServerContext::build(
    const TlsServerOptions& options, std::vector<TlsBuildError>* errors) {
  std::shared_ptr<TlsServerContext> self(new TlsServerContext());
  for (const auto& p : options.alpn) {
    self->alpn_wire_.push_back(static_cast<unsigned char>(p.size()));
    self->alpn_wire_.insert(self->alpn_wire_.end(), p.begin(), p.end());
  }
  const size_t before = errors->size();
  for (size_t i = 0; i < options.certificates.size(); ++i) {
    const TlsCertificateFiles& f = options.certificates[i];
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) {
      errors->push_back({i, "cert", tlsErrorText()});
      continue;
    }
    self->contexts_.push_back(ctx);
    applyTlsDefaults(ctx, options.min_version);
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    TlsCertificateInfo info;
    std::vector<TlsFileError> failures;
    if (!loadTlsKeyPair(ctx, f.cert, f.key, &info, &failures)) {
      for (auto& e : failures) errors->push_back({i, std::move(e.field), std::move(e.message)});
      continue;
    }
    self->infos_.push_back(std::move(info));
    if (!self->alpn_wire_.empty()) SSL_CTX_set_alpn_select_cb(ctx, onAlpn, &self->alpn_wire_);
  }
  if (errors->size() > before || self->contexts_.empty()) return nullptr;
  // The callback runs on the initial context, the one every connection starts on.
  SSL_CTX_set_tlsext_servername_callback(self->initial(), onServerName);
  SSL_CTX_set_tlsext_servername_arg(self->initial(), self.get());
  return self;
}

TlsServerContext::~TlsServerContext() {
  for (SSL_CTX* c : contexts_) SSL_CTX_free(c);
}

SSL_CTX* TlsServerContext::forServerName(const char* host) const noexcept {
  for (size_t i = 0; i < infos_.size(); ++i)
    for (const auto& n : infos_[i].names)
      if (strcasecmp(n.c_str(), host) == 0) return contexts_[i];
  for (size_t i = 0; i < infos_.size(); ++i)
    for (const auto& n : infos_[i].names)
      if (nameMatches(n, host)) return contexts_[i];
  return nullptr;
}

}  // namespace lb
