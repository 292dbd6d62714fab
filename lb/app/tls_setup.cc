#include "lb/app/tls_setup.h"

namespace lb {

std::shared_ptr<const TlsServerContext> buildListenerTls(const ListenerConfig& listener,
                                                         const std::string& file,
                                                         std::vector<TlsCertificateExpiry>* expiry,
                                                         Errors* errors) {
  TlsServerOptions options;
  for (const auto& c : listener.tls.certificates) options.certificates.push_back({c.cert, c.key});
  options.min_version = listener.tls.min_version;
  options.alpn = listener.tls.alpn;
  std::vector<TlsBuildError> failures;
  auto context = TlsServerContext::build(options, &failures);
  for (const auto& f : failures) {
    const TlsCertificateConfig& c = listener.tls.certificates[f.certificate];
    errors->push_back({file, f.field == "key" ? c.key_pos : c.cert_pos,
                       "listeners." + listener.name + ".tls.certificates[" +
                           std::to_string(f.certificate) + "]." + f.field,
                       f.message});
  }
  if (context == nullptr) {
    if (failures.empty())
      errors->push_back({file, listener.tls.pos, "listeners." + listener.name + ".tls",
                         "cannot set up TLS: " + tlsErrorText()});
    return nullptr;
  }
  expiry->clear();
  for (const auto& info : context->certificates()) expiry->push_back({info.name, info.not_after});
  return context;
}

std::shared_ptr<const TlsClientContext> buildClusterTls(const ClusterConfig& cluster,
                                                        const std::string& file,
                                                        unsigned workers, Errors* errors) {
  const ClusterTlsConfig& tls = cluster.tls;
  TlsClientOptions options;
  options.ca = tls.ca;
  options.verify = tls.verify;
  options.server_name = tls.server_name;
  options.cert = tls.cert;
  options.key = tls.key;
  options.min_version = tls.min_version;
  options.label = "cluster " + cluster.name;
  std::vector<TlsClientBuildError> failures;
  auto context = TlsClientContext::build(options, workers, &failures);
  for (const auto& f : failures) {
    const SourcePos& pos = f.field == "ca" ? tls.ca_pos : f.field == "key" ? tls.key_pos
                                                                          : tls.cert_pos;
    errors->push_back({file, pos, "clusters." + cluster.name + ".tls." + f.field, f.message});
  }
  if (context == nullptr && failures.empty())
    errors->push_back({file, tls.pos, "clusters." + cluster.name + ".tls",
                       "cannot set up TLS: " + tlsErrorText()});
  return context;
}

Errors checkTls(const Config& config) {
  Errors errors;
  for (const auto& l : config.listeners) {
    if (!l.tls.enabled) continue;
    std::vector<TlsCertificateExpiry> expiry;
    buildListenerTls(l, config.file, &expiry, &errors);
  }
  for (const auto& c : config.clusters)
    if (c.tls.enabled) buildClusterTls(c, config.file, 1, &errors);
  return errors;
}

}  // namespace lb
