// A membership's TLS towards its https:// etcd members (docs/config.md, "membership"): the
// `membership.tls` table (a cluster tls table, read by the same reader) made into a client
// context with lb/tls, each file's failure an error at its key, as lb/app/tls_setup.h does
// for a cluster's own tls. Here rather than in lb/app so that `lb membership` (lb/cli) and
// lb's start, reload and `lb --check` (lb/app) build it the same way.
#pragma once

#include <memory>
#include <string>

#include "lb/config/config.h"
#include "lb/tls/tls_client_context.h"

namespace lb {

// Main thread. A membership's context (the system's store when the table is left out), each
// file's failure an error at clusters.NAME.membership.tls.ca, .cert or .key. Null without
// https:// members, or with *errors. Built anew each time: it is read once per source.
// Its failed handshakes are not logged by the TLS layer: the etcd client's owner logs each
// failed request once, with the handshake's reason.
std::shared_ptr<const TlsClientContext> buildMembershipTls(const ClusterConfig& cluster,
                                                           const std::string& file,
                                                           Errors* errors);

// Every membership's files loaded and checked: lb's start and reload refuse what this reports
// (as the snapshot build refuses a cluster's), and `lb --check` prints it.
Errors checkMembershipTls(const Config& config);

}  // namespace lb
