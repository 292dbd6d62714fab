#include "lb/tls/tls_key_pair.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace lb {
namespace {

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

std::string utcText(double seconds) {
  char when[32];
  const time_t t = static_cast<time_t>(seconds);
  tm utc{};
  gmtime_r(&t, &utc);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return when;
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

bool loadTlsKeyPair(SSL_CTX* ctx, const std::string& cert, const std::string& key,
                    TlsCertificateInfo* info, std::vector<TlsFileError>* errors) {
  const size_t before = errors->size();
  if (FILE* probe = fopen(cert.c_str(), "r")) {
    fclose(probe);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1)
      errors->push_back({"cert", "'" + cert + "' is not a PEM certificate: " + tlsErrorText()});
  } else {
    errors->push_back({"cert", "cannot read '" + cert + "': " + strerror(errno)});
  }
  if (errors->size() > before) return false;
  if (BIO* in = BIO_new_file(key.c_str(), "r")) {
    EVP_PKEY* pkey = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
    BIO_free(in);
    ERR_clear_error();
    if (pkey == nullptr)
      errors->push_back({"key", "'" + key + "' is not a PEM private key"});
    else if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), pkey) != 1)
      errors->push_back({"key", "'" + key + "' does not match the certificate in '" + cert + "'"});
    else if (SSL_CTX_use_PrivateKey(ctx, pkey) != 1)
      errors->push_back({"key", "'" + key + "': " + tlsErrorText()});
    EVP_PKEY_free(pkey);
    ERR_clear_error();
  } else {
    ERR_clear_error();
    errors->push_back({"key", "cannot read '" + key + "': " + strerror(errno)});
  }
  if (errors->size() > before) return false;
  X509* x = SSL_CTX_get0_certificate(ctx);
  readNames(x, info);
  info->not_after = asn1Seconds(X509_get0_notAfter(x));
  if (info->not_after <= static_cast<double>(time(nullptr))) {
    errors->push_back({"cert", "'" + cert + "' expired at " + utcText(info->not_after)});
    return false;
  }
  return true;
}

bool loadTlsCa(SSL_CTX* ctx, const std::string& ca, std::string* message) {
  FILE* probe = fopen(ca.c_str(), "r");
  if (probe == nullptr) {
    *message = "cannot read '" + ca + "': " + strerror(errno);
    return false;
  }
  fclose(probe);
  ERR_clear_error();
  if (SSL_CTX_load_verify_file(ctx, ca.c_str()) != 1) {
    *message = "'" + ca + "' holds no PEM certificate: " + tlsErrorText();
    return false;
  }
  return true;
}

}  // namespace lb
