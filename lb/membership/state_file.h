// The membership state file: the last membership a cluster applied from etcd, so that an lb
// that starts while etcd is down serves what the fleet last agreed on rather than a stale
// TOML list ("etcd down is not an outage"). Written after each apply; read once at
// start. A small JSON object:
//
//   {"cluster": "cache", "key": "/lb/prod/clusters/cache", "revision": 42,
//    "document": "{\"backends\":[...]}\n"}
//
// `document` is the membership document's text as applied (a string, so that it is validated
// again by parseMembershipDocument on the way in, with the same positions as from etcd).
// Blocking file I/O on the calling thread: a few KiB, written only when a new membership
// applies (coalesced by min_apply_interval), so the main thread can afford it.
#pragma once

#include <cstdint>
#include <string>

#include "lb/core/result.h"

namespace lb {

struct MembershipState {
  std::string cluster;     // the cluster's name in the config
  std::string key;         // the etcd key it came from
  int64_t revision = 0;    // the key's mod_revision that was applied
  std::string document;    // the document's text (membershipJson of what was applied)
};

// Writes `s` to `path` atomically: a temp file in the same directory (path + ".tmp.PID"),
// written, fsync'd, renamed over `path`, then the directory fsync'd, so that a crash leaves
// either the old file or the new one, never a half-written one. On failure returns false
// with *error saying what failed and why ("cannot create /var/lib/lb/.cache.json.tmp.123:
// Permission denied"), removes the temp file, and leaves any old file at `path` untouched.
bool writeMembershipState(const std::string& path, const MembershipState& s,
                          std::string* error);

// Reads and checks the file's own shape: a JSON object with a string cluster and key, an
// integer revision >= 1 and a string document. Errors (one ConfigError with file = path,
// line:column when the JSON is malformed) for a missing or unreadable file, bad JSON, or a
// wrong shape. It does not judge the content: the caller checks that cluster and key are
// the ones it expects (a state file from another cluster or key is not to be served) and
// validates `document` with parseMembershipDocument(document, path, cluster).
Result<MembershipState> readMembershipState(const std::string& path);

}  // namespace lb
