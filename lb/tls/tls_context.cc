#include "lb/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

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

double asn1Seconds(const ASN1_TIME* t) {
  tm parts{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &parts) != 1) return 0;
  return static_cast<double>(timegm(&parts));
}

void readNames(X509* cert, TlsCertificateInfo* info) {
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr,
                                                            nullptr));
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type != GEN_DNS) continue;
      const ASN1_STRING* s = g->d.dNSName;
      info->names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                               static_cast<size_t>(ASN1_STRING_length(s)));
    }
    GENERAL_NAMES_free(sans);
  }
  if (info->names.empty()) {
    char cn[256];
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn,
                                  sizeof cn) > 0)
      info->names.emplace_back(cn);
  }
  info->name = info->names.empty() ? std::string() : info->names.front();
}

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

std::string tlsErrorText() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown TLS error";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

std::shared_ptr<const TlsServerContext> TlsServerContext::build(
    const TlsServerOptions& options, std::vector<TlsBuildError>* errors) {
  std::shared_ptr<TlsServerContext> self(new TlsServerContext());
  for (const auto& p : options.alpn) {
    self->alpn_wire_.push_back(static_cast<unsigned char>(p.size()));
    self->alpn_wire_.insert(self->alpn_wire_.end(), p.begin(), p.end());
  }
  const size_t before = errors->size();
  const double now = static_cast<double>(time(nullptr));
  for (size_t i = 0; i < options.certificates.size(); ++i) {
    const TlsCertificateFiles& f = options.certificates[i];
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) {
      errors->push_back({i, "cert", tlsErrorText()});
      continue;
    }
    self->contexts_.push_back(ctx);
    SSL_CTX_set_min_proto_version(ctx, options.min_version == "1.3" ? TLS1_3_VERSION
                                                                    : TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(ctx, kCiphers12);
    SSL_CTX_set1_groups_list(ctx, kGroups);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    if (FILE* probe = fopen(f.cert.c_str(), "r")) {
      fclose(probe);
      if (SSL_CTX_use_certificate_chain_file(ctx, f.cert.c_str()) != 1)
        errors->push_back({i, "cert", "'" + f.cert + "' is not a PEM certificate: " +
                                          tlsErrorText()});
    } else {
      errors->push_back({i, "cert", "cannot read '" + f.cert + "': " + strerror(errno)});
    }
    if (errors->size() > before) continue;
    if (BIO* in = BIO_new_file(f.key.c_str(), "r")) {
      EVP_PKEY* key = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
      BIO_free(in);
      ERR_clear_error();
      if (key == nullptr)
        errors->push_back({i, "key", "'" + f.key + "' is not a PEM private key"});
      else if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), key) != 1)
        errors->push_back({i, "key", "'" + f.key + "' does not match the certificate in '" +
                                         f.cert + "'"});
      else if (SSL_CTX_use_PrivateKey(ctx, key) != 1)
        errors->push_back({i, "key", "'" + f.key + "': " + tlsErrorText()});
      EVP_PKEY_free(key);
      ERR_clear_error();
    } else {
      ERR_clear_error();
      errors->push_back({i, "key", "cannot read '" + f.key + "': " + strerror(errno)});
    }
    if (errors->size() > before) continue;
    TlsCertificateInfo info;
    X509* cert = SSL_CTX_get0_certificate(ctx);
    readNames(cert, &info);
    info.not_after = asn1Seconds(X509_get0_notAfter(cert));
    if (info.not_after <= now) {
      char when[32];
      const time_t t = static_cast<time_t>(info.not_after);
      tm utc{};
      gmtime_r(&t, &utc);
      strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
      errors->push_back({i, "cert", "'" + f.cert + "' expired at " + when});
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
