// Listeners' and clusters' TLS settings made into OpenSSL contexts (lb/tls/tls_context.h,
// tls_client_context.h), with each file's failure reported as a config error at the key that
// names it. main() installs them as the snapshot's ListenerTlsBuilder and ClusterTlsBuilder,
// so start, SIGHUP reload and `lb --check` read certificates the same way: a reload whose
// certificate does not load changes nothing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/routing/snapshot.h"
#include "lb/tls/tls_client_context.h"
#include "lb/tls/tls_context.h"

namespace lb {

// Main thread. ListenerTlsBuilder's shape (lb/routing/snapshot.h).
std::shared_ptr<const TlsServerContext> buildListenerTls(const ListenerConfig& listener,
                                                         const std::string& file,
                                                         std::vector<TlsCertificateExpiry>* expiry,
                                                         Errors* errors);

// Main thread. ClusterTlsBuilder's shape: a cluster's `tls` made into its client context,
// each file's failure an error at its key (clusters.NAME.tls.ca, .cert, .key). The same
// settings and file bytes as the cluster's last build give that build's context back (while
// a snapshot still holds it), so a reload that changes nothing of TLS reconnects nothing.
std::shared_ptr<const TlsClientContext> buildClusterTls(const ClusterConfig& cluster,
                                                        const std::string& file,
                                                        unsigned workers, Errors* errors);

// Every TLS listener's certificates and every TLS cluster's and membership's files loaded and
// checked, for `lb --check`.
Errors checkTls(const Config& config);

}  // namespace lb
