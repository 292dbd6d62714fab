// A blocking HTTP/1.1 GET against lb's admin server, for command-line tools (`lb hotkeys`)
// that read an admin endpoint and print it. Not for the proxy: it blocks the calling thread
// (getaddrinfo, poll) and allocates freely, which a CLI may and a worker loop must not.
// The reply is read with lb's strict parser (lb/http/parser.h), so a chunked or
// length-delimited answer reads the same as lb's own clients read it.
#pragma once

#include <string>

#include "lb/core/duration.h"

namespace lb {

struct AdminReply {
  int status = 0;
  std::string content_type;   // as the server wrote it, "" when absent
  std::string body;           // de-chunked
};

// GETs `target` (an origin-form path with its query, "/hotkeys?cluster=c") from `hostport`
// ("127.0.0.1:9901", "[::1]:9901" or "name:9901", names looked up with getaddrinfo). The
// whole exchange, connect included, ends within `timeout`. On failure returns false and
// *error says what failed in words an operator acts on ("cannot connect to 127.0.0.1:9901:
// Connection refused"). Any HTTP status is a success here; the caller judges it.
bool adminGet(const std::string& hostport, const std::string& target, Duration timeout,
              AdminReply* reply, std::string* error);

// `s` as one query component: unreserved characters (RFC 3986 §2.3) kept, the rest %XX.
std::string percentEncode(const std::string& s);

}  // namespace lb
