// `lb membership get|put|diff` (docs/membership.md): the operator's side of fleet membership
// from etcd. It lives in lb/app because it ties three layers that stand apart: the etcd
// client and the document (lb/membership), and `lb analyze`'s movement figures
// (lb/cli/analyze); main() hands it the arguments after "membership".
//
//   lb membership get  --etcd URL[,URL...] --key KEY [--json]
//                      [--cacert FILE] [--cert FILE --key-file FILE] [--user USER:PASSWORD]
//   lb membership diff --etcd URL[,URL...] --key KEY [--config FILE --cluster NAME] FILE
//   lb membership put  --etcd URL[,URL...] --key KEY [--config FILE --cluster NAME]
//                      [--max-remove-percent N] [--force] FILE
//
// With --config naming a cluster that has a `membership` table, --etcd and --key default to
// its etcd and key, --max-remove-percent to its max_remove_percent, and the TLS files and the
// user to its tls, user and password (flags given replace them). https:// members are
// checked against --cacert (the system's store without it); --cert and --key-file are the
// client certificate (etcdctl's --key is lb's --key-file here: --key names the etcd key).
//
// FILE is a membership document (JSON, {"backends": [...]}) or TOML: `backends = [...]` at
// its top level, or a whole lb config (then --cluster NAME picks the cluster, unless it has
// only one). It is validated as lb validates a membership (lb/membership/document.h) under
// the cluster settings of --config/--cluster (default: a ring_hash cluster with its
// defaults), and written as its canonical JSON (membershipJson) with a compare-and-swap on
// the mod_revision read: two operators cannot overwrite each other unseen.
//
// Exit codes: 0 done (diff: whatever it found); 1 the file is invalid, etcd failed, put
// refused a removal or met a concurrent write; 2 usage.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lb/core/duration.h"

namespace lb {

struct MembershipOptions {
  enum class Command { kGet, kPut, kDiff };
  Command command = Command::kGet;
  bool help = false;
  std::vector<std::string> etcd;    // client URLs, in the order to try them
  std::string key;
  std::string file;                 // put, diff
  std::string config;               // --config: whose cluster settings validation uses
  std::string cluster;              // --cluster
  // lb's default (docs/config.md, `membership`); unless given, the cluster's own
  // membership.max_remove_percent when --config (or FILE, an lb config) has one.
  uint32_t max_remove_percent = 50;
  bool max_remove_percent_given = false;
  bool force = false;               // put: write a removal past max_remove_percent anyway
  bool json = false;                // get: one JSON object on stdout
  Duration timeout{5000};           // each etcd request
  std::string cacert;               // --cacert: CA bundle for https:// members
  std::string cert;                 // --cert, --key-file: client certificate and key
  std::string cert_key;
  std::string user;                 // --user USER:PASSWORD
  std::string password;
  bool user_given = false;
};

// The arguments after "membership" ("--opt value" or "--opt=value"). nullopt with `error`
// (one line naming the argument) on a usage error.
std::optional<MembershipOptions> parseMembershipArgs(std::span<char* const> args,
                                                     std::string& error);

const char* membershipUsage();

// argv holds the arguments after "membership". Returns the process exit code.
int runMembership(int argc, char** argv);

// Test hook, for the concurrent-write test only: when the environment holds
// LB_MEMBERSHIP_TEST_AFTER_READ, `put` runs it with /bin/sh after reading the key and before
// its compare-and-swap, so a test can write the key in between without a timing race.
inline constexpr const char* kMembershipAfterReadHook = "LB_MEMBERSHIP_TEST_AFTER_READ";

}  // namespace lb
