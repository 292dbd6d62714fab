// A cluster's `membership = { etcd, key, max_remove_percent, min_apply_interval,
// reconcile_interval, state_file, tls, user, password }` table (docs/config.md, "membership"). Internal to
// lb/config's loader.
#pragma once

#include <string_view>

#include "lb/config/config.h"
#include "lb/config/walker.h"

namespace lb {

// Reads the table under `cluster`'s key "membership" into *out. Every value is checked as it
// is read, with its position; what needs the file system (the state file's directory) is
// checked when lb starts, since the loader does no I/O (lb --check validates a file written
// for another machine).
void readMembership(WalkContext& ctx, const toml::table& table, const std::string& path,
                    MembershipConfig* out);

// "http://IP:port" or "https://IP:port" (port 2379 when left out) with an optional trailing
// "/": the etcd client URL form lb speaks (HTTP/1.1 to etcd's JSON gateway, over TLS for
// https). "" when `url` is one, else why
// not. lb/config sits under lb/membership, so this is the loader's own check of the form
// the etcd client's parseEtcdUrl (lb/membership/etcd_client.h) accepts, with the same rules.
std::string etcdUrlProblem(std::string_view url);

}  // namespace lb
