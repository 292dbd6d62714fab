// A certificate chain and its private key read from PEM files into an SSL_CTX, with every
// way that can go wrong named for the config error it becomes: a file that cannot be read,
// one that is not PEM, a key that does not match its certificate, a certificate already
// expired. Listeners (tls_context.h) and clusters' client certificates
// (tls_client_context.h) load theirs the same way. Main thread.
#pragma once

#include <openssl/ssl.h>

#include <string>
#include <vector>

namespace lb {

// One certificate's subject names and expiry, for the metrics and the SNI match.
struct TlsCertificateInfo {
  std::string name;          // the first DNS name (or the subject CN)
  std::vector<std::string> names;
  double not_after = 0;      // seconds since the epoch
};

// What is wrong with one of the two files: field "cert" or "key".
struct TlsFileError {
  std::string field;
  std::string message;
};

// Loads `cert` (the certificate, then its chain) and `key` into `ctx`. True with *info filled
// when both loaded, match and the certificate has not expired; else false with the reasons
// appended to *errors (a key is not looked at when its certificate failed).
bool loadTlsKeyPair(SSL_CTX* ctx, const std::string& cert, const std::string& key,
                    TlsCertificateInfo* info, std::vector<TlsFileError>* errors);

// Loads the PEM bundle of trusted certificates at `ca` into `ctx`'s verify store. False with
// the reason in *message.
bool loadTlsCa(SSL_CTX* ctx, const std::string& ca, std::string* message);

// The OpenSSL error queue's first entry as text (and the queue cleared), for logs.
std::string tlsErrorText();

}  // namespace lb
