// The admin endpoints' bodies, as pure functions of a snapshot and a query string so that
// tests can check them without a socket: /backends and /ring (JSON), plus the query and JSON
// helpers they need.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lb/admin/admin_http.h"
#include "lb/routing/snapshot.h"

namespace lb {

// Decodes one query component: %XX escapes, and '+' as a space (HTML forms, Go's
// url.ParseQuery, curl -G --data-urlencode). nullopt on a malformed escape.
std::optional<std::string> percentDecode(std::string_view s);

// "a=1&b=x%20y" to {a: "1", b: "x y"}; the first of repeated names wins; a name without '='
// has value "". nullopt when any component is malformed.
std::optional<std::map<std::string, std::string>> parseQuery(std::string_view query);

// Appends `s` as a JSON string literal (RFC 8259): quotes, backslash and control characters
// escaped; bytes that are not valid UTF-8 become U+FFFD so the document stays valid.
void appendJsonString(std::string& out, std::string_view s);

// Appends `seconds` since the epoch as a JSON string, RFC 3339 in UTC with milliseconds:
// "2026-12-02T07:01:02.345Z".
void appendRfc3339(std::string& out, double seconds);

// GET /backends: every cluster (with its panic_threshold and whether it is in panic) with
// each backend's name, address (as configured), resolved address (what a host name resolved
// to, or the numeric address), weight, healthy, live load, bounded-load cap (null when off),
// key-space share, and health: state, reason, last check, ejections. Always 200.
AdminResponse backendsResponse(const Snapshot& snapshot);

// GET /ring?cluster=C&key=K[&listener=L]: K's hash under C's selector, its owner, its whole
// preference order, and where a request would go now (pick, reason) given health and live
// loads. For a cache key, the hash_tag of listener L applies (default: the first redis or
// memcached listener in front of C); "listener" and "hashed" say which, and what was hashed.
// 400 when a parameter is missing or malformed or L is not in front of C, 404 when the
// cluster or listener is unknown.
AdminResponse ringResponse(const Snapshot& snapshot, std::string_view query);

}  // namespace lb
