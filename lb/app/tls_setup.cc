#include "lb/app/tls_setup.h"

#include <fstream>
#include <map>
#include <sstream>

#include "lb/membership/membership_tls.h"

namespace lb {

namespace {

// The last client context built for each cluster, with what it was built from. A snapshot
// rebuild (a SIGHUP, a membership revision) whose cluster `tls` has the same settings and
// files with the same bytes gets that very context back: the cache engine's server groups
// and the health checks, keyed on the context, keep their connections, and the workers their
// sessions. New bytes in any file are new trust and make a new context. Main thread only;
// weak, since the snapshots own the contexts.
struct BuiltClientContext {
  std::string made_of;
  std::weak_ptr<const TlsClientContext> context;
};
std::map<std::string, BuiltClientContext> built_client_contexts;

bool appendFile(std::string* out, const std::string& path) {
  if (path.empty()) return true;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out += ss.str();
  *out += '\0';
  return true;
}

// Everything a client context is made of: the settings, the worker count and the files'
// bytes; "" (never reused) without a `ca` (the system store: files OpenSSL finds itself)
// or when a file does not read (the build says why).
std::string madeOf(const TlsClientOptions& o, unsigned workers) {
  if (o.ca.empty()) return "";
  std::string m = o.ca + '\0' + (o.verify ? "1" : "0") + '\0' + o.server_name + '\0' + o.cert +
                  '\0' + o.key + '\0' + o.min_version + '\0' + o.label + '\0' +
                  std::to_string(workers) + '\0';
  if (!appendFile(&m, o.ca) || !appendFile(&m, o.cert) || !appendFile(&m, o.key)) return "";
  return m;
}

}  // namespace

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
  const std::string made_of = madeOf(options, workers);
  BuiltClientContext& last = built_client_contexts[cluster.name];
  if (!made_of.empty() && made_of == last.made_of)
    if (auto same = last.context.lock()) return same;
  std::vector<TlsClientBuildError> failures;
  auto context = TlsClientContext::build(options, workers, &failures);
  last = BuiltClientContext{context != nullptr ? made_of : std::string(), context};
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
  Errors m = checkMembershipTls(config);
  errors.insert(errors.end(), m.begin(), m.end());
  return errors;
}

}  // namespace lb
