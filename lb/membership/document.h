// The membership document: the value of a cluster's etcd key (docs/config.md, "membership"),
// one JSON object holding the cluster's whole backend list:
//
//   {"backends": [{"name": "cache-a", "address": "10.0.1.1:11211", "weight": 1,
//                  "hash_key": "cache-a"}],
//    "changed_at_ms": 1764946800123}
//
// `changed_at_ms` is when `lb membership put` wrote the list (milliseconds since the Unix
// epoch): every instance starts the cluster's handover window there, so that they all ramp a
// moved key at the same moment (lb/routing/handover.h). Optional; `weight` and `hash_key` are
// optional too, with the TOML defaults (1, the name). A document is
// validated by the same code as a cluster's TOML `backends` (lb/config/backends.h), so that
// `lb membership put`, `lb --check` of a TOML list and the running lb agree on what a valid
// list is, message for message. Both lb's membership source (on the main thread) and the
// `lb membership` command line use this; nothing here does I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lb/config/config.h"
#include "lb/core/result.h"

namespace lb {

struct MembershipDocument {
  // In document order; each BackendConfig's `pos` is its object's line:column in the text,
  // hash_key is "" when not written (as from TOML: the name is the default).
  std::vector<BackendConfig> backends;
  int64_t changed_at_ms = 0;   // 0: not stamped
};

// Parses and validates `text` exactly as `cluster`'s TOML `backends` are validated: the
// rules that depend on the cluster's settings (its selector: jump has no weights, ketama wants
// host:port hash_keys, twemproxy's name length; maglev's table_size against the count; the
// ring's total points for ring_hash's vnodes) come from `cluster`, whose own `backends` are
// ignored. Checks, all reported at once in text order:
//   - JSON syntax (with the byte offset nlohmann::json reports, as line:column), and a key
//     written twice in one object (which nlohmann would take silently, the last one);
//   - the top level is an object with the key "backends" (an array) and, optionally,
//     "changed_at_ms" (an integer >= 0), nothing else;
//   - each entry is an object with only name, address, weight, hash_key (an unknown key is
//     reported with a did-you-mean, as the TOML loader does); their types; name required and
//     plain; address required and host:port; weight an integer in 1..1000 ("weight 0" is an
//     error, not "down"); hash_key not empty;
//   - duplicate names and hash_keys; an empty list ("lists no backends").
// Each error has file = `source` (a path, or e.g. "etcd:/lb/prod/clusters/cache@42"), the
// line:column in `text` of the offending value (of the key, for an unknown key; of the
// enclosing object, for a missing one), and the key path within the document:
// "backends[2].address". ConfigError::format() gives "f.json:7:18: backends[2].address: ...".
Result<MembershipDocument> parseMembershipDocument(std::string_view text, std::string_view source,
                                                   const ClusterConfig& cluster);

// The canonical JSON text of a backend list: {"backends":[...]} with the keys in the order
// name, address, weight, hash_key; weight written only when not 1 and hash_key only when
// set (so that a list read from TOML and one read from JSON print alike); one backend per
// line, ending in a newline. What `lb membership put` writes to etcd and what the state file
// holds; parseMembershipDocument(membershipJson(b)) gives back b (without positions).
// `changed_at_ms` > 0 is written after the list.
std::string membershipJson(const std::vector<BackendConfig>& backends, int64_t changed_at_ms = 0);

// "" when `next` may replace `current`; else why not, naming the counts, e.g.
// "removes 3 of 4 backends (75%) at once; max_remove_percent is 50". A backend is removed
// when its name is in `current` and not in `next` (a changed address or weight is not a
// removal). Allowed: removed * 100 <= max_remove_percent * current.size(), so exactly the
// percentage passes; 0 refuses any removal, 100 allows every one. An empty `current` (no
// membership yet) allows anything. Replacing the only backend of a cluster removes 100% of it.
std::string checkRemoval(const std::vector<BackendConfig>& current,
                         const std::vector<BackendConfig>& next, uint32_t max_remove_percent);

}  // namespace lb
