// The `tls` tables: a listener's (what lb serves: certificates, versions, ALPN) and a
// cluster's (how lb talks to its backends: trust, names, a client certificate). Internal to
// lb/config's loader; docs/config.md, "tls (listeners)" and "tls (clusters)".
#pragma once

#include <string>

#include "lb/config/config.h"
#include "lb/config/walker.h"

namespace lb {

// Reads the listener's `tls` table into l->tls (enabled from now on). ALPN defaults to
// ["http/1.1"] on http listeners, none elsewhere. A relative path is the config file's
// folder's.
void readListenerTls(WalkContext& ctx, const toml::table& table, const std::string& path,
                     ListenerConfig* l);

// Reads a cluster's `tls` table into *out (enabled from now on). `cert` and `key` come
// together or not at all.
void readClusterTls(WalkContext& ctx, const toml::table& table, const std::string& path,
                    ClusterTlsConfig* out);

}  // namespace lb
