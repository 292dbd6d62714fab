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

// GET /backends: every cluster with each backend's name, address (as configured), resolved
// address (what a host name resolved to, or the numeric address), weight, health, live load,
// bounded-load cap (null when off) and key-space share. Always 200.
AdminResponse backendsResponse(const Snapshot& snapshot);

// GET /ring?cluster=C&key=K: K's hash under C's selector, its owner, its whole preference
// order, and where a request would go now (pick, reason) given health and live loads.
// 400 when a parameter is missing or malformed, 404 when the cluster is unknown.
AdminResponse ringResponse(const Snapshot& snapshot, std::string_view query);

}  // namespace lb
