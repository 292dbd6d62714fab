// Listeners' TLS settings made into OpenSSL contexts (lb/tls/tls_context.h), with each file's
// failure reported as a config error at the key that names it. main() installs it as the
// snapshot's ListenerTlsBuilder, so start, SIGHUP reload and `lb --check` read certificates
// the same way: a reload whose certificate does not load changes nothing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/routing/snapshot.h"
#include "lb/tls/tls_context.h"

namespace lb {

// Main thread. ListenerTlsBuilder's shape (lb/routing/snapshot.h).
std::shared_ptr<const TlsServerContext> buildListenerTls(const ListenerConfig& listener,
                                                         const std::string& file,
                                                         std::vector<TlsCertificateExpiry>* expiry,
                                                         Errors* errors);

// Every TLS listener's certificates loaded and checked, for `lb --check`.
Errors checkListenersTls(const Config& config);

}  // namespace lb
