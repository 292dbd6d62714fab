#include "lb/membership/membership_tls.h"

#include <vector>

#include "lb/tls/tls_key_pair.h"

namespace lb {

std::shared_ptr<const TlsClientContext> buildMembershipTls(const ClusterConfig& cluster,
                                                           const std::string& file,
                                                           Errors* errors) {
  if (!cluster.membership) return nullptr;
  const MembershipConfig& m = *cluster.membership;
  bool https = false;
  for (const auto& url : m.etcd) https = https || url.rfind("https://", 0) == 0;
  if (!https) return nullptr;
  // Without a table: etcd's certificate checked against the system's store and its address,
  // as a cluster's `tls = {}` does.
  const ClusterTlsConfig& tls = m.tls;
  TlsClientOptions options;
  options.ca = tls.ca;
  options.verify = tls.verify;
  options.server_name = tls.server_name;
  options.cert = tls.cert;
  options.key = tls.key;
  options.min_version = tls.min_version;
  options.label = "membership of cluster " + cluster.name;
  // The membership source logs each failed request once, with the handshake's reason.
  options.log_failures = false;
  std::vector<TlsClientBuildError> failures;
  auto context = TlsClientContext::build(options, 0, &failures);
  const std::string path = "clusters." + cluster.name + ".membership.tls";
  for (const auto& f : failures) {
    const SourcePos& pos = !tls.enabled    ? m.pos
                           : f.field == "ca" ? tls.ca_pos
                           : f.field == "key" ? tls.key_pos
                                              : tls.cert_pos;
    errors->push_back({file, pos, path + "." + f.field, f.message});
  }
  if (context == nullptr && failures.empty())
    errors->push_back({file, tls.enabled ? tls.pos : m.pos, path,
                       "cannot set up TLS: " + tlsErrorText()});
  return context;
}

Errors checkMembershipTls(const Config& config) {
  Errors errors;
  for (const auto& c : config.clusters) buildMembershipTls(c, config.file, &errors);
  return errors;
}

}  // namespace lb
