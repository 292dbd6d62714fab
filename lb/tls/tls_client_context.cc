#include "lb/tls/tls_client_context.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include <cstring>

#include "lb/tls/tls_context.h"

namespace lb {
namespace {

// Where an SSL keeps its Session entry, for onNewSession.
int sessionIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

socklen_t addressLength(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

}  // namespace

std::shared_ptr<const TlsClientContext> TlsClientContext::build(
    const TlsClientOptions& options, unsigned workers, std::vector<TlsClientBuildError>* errors) {
  std::shared_ptr<TlsClientContext> self(new TlsClientContext());
  self->verify_ = options.verify;
  self->log_failures_ = options.log_failures;
  self->server_name_ = options.server_name;
  self->label_ = options.label;
  self->slots_.resize(workers + 1);   // the last one: the main thread's health checks
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    errors->push_back({"ca", "cannot set up TLS: " + tlsErrorText()});
    return nullptr;
  }
  self->ctx_ = ctx;
  applyTlsDefaults(ctx, options.min_version);
  const size_t before = errors->size();
  if (options.verify) {
    std::string message;
    if (!options.ca.empty()) {
      if (!loadTlsCa(ctx, options.ca, &message)) errors->push_back({"ca", message});
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      errors->push_back({"ca", "no ca given and the system's store does not load: " +
                                   tlsErrorText()});
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!options.cert.empty()) {
    TlsCertificateInfo info;
    loadTlsKeyPair(ctx, options.cert, options.key, &info, errors);
  }
  if (errors->size() > before) return nullptr;
  // Tickets come to onNewSession, never into OpenSSL's own (locked, shared) cache.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, onNewSession);
  return self;
}

TlsClientContext::~TlsClientContext() {
  for (auto& slot : slots_)
    for (auto& s : slot.sessions) SSL_SESSION_free(s->session);
  SSL_CTX_free(ctx_);
}

TlsClientContext::Session* TlsClientContext::sessionOf(unsigned worker,
                                                       const sockaddr* peer) const noexcept {
  if (worker >= slots_.size()) return nullptr;
  Slot& slot = slots_[worker];
  const socklen_t len = addressLength(peer);
  for (auto& s : slot.sessions)
    if (memcmp(&s->peer, peer, len) == 0) return s.get();
  try {
    auto s = std::make_unique<Session>();
    memcpy(&s->peer, peer, len);
    slot.sessions.push_back(std::move(s));
    return slot.sessions.back().get();
  } catch (...) {
    return nullptr;
  }
}

SSL* TlsClientContext::newConnection(unsigned worker, const sockaddr* peer) const noexcept {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  bool ok = true;
  if (!server_name_.empty()) {
    ok = SSL_set_tlsext_host_name(ssl, server_name_.c_str()) == 1;
    if (verify_) ok = ok && SSL_set1_host(ssl, server_name_.c_str()) == 1;
  } else if (verify_) {
    char ip[INET6_ADDRSTRLEN] = "";
    if (peer->sa_family == AF_INET6)
      uv_ip6_name(reinterpret_cast<const sockaddr_in6*>(peer), ip, sizeof ip);
    else
      uv_ip4_name(reinterpret_cast<const sockaddr_in*>(peer), ip, sizeof ip);
    ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ip) == 1;
  }
  Session* s = sessionOf(worker, peer);
  if (s != nullptr) {
    SSL_set_ex_data(ssl, sessionIndex(), s);
    if (s->session != nullptr) SSL_set_session(ssl, s->session);
  }
  if (!ok) {
    ERR_clear_error();
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

// OpenSSL hands over a session the backend issued (TLS 1.2 at the handshake, TLS 1.3 with
// each NewSessionTicket): it replaces the one kept for that worker and address.
int TlsClientContext::onNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* s = static_cast<Session*>(SSL_get_ex_data(ssl, sessionIndex()));
  if (s == nullptr) return 0;   // not taken: OpenSSL frees it
  SSL_SESSION_free(s->session);
  s->session = session;
  return 1;
}

bool TlsClientContext::mayLog() const noexcept {
  const uint64_t now = uv_hrtime();
  uint64_t last = last_log_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < 1000000000ull) return false;
  return last_log_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed);
}

std::string tlsVerifyText(SSL* ssl) {
  const long r = SSL_get_verify_result(ssl);
  if (r == X509_V_OK) return "";
  return X509_verify_cert_error_string(r);
}

}  // namespace lb
