// The JSON of etcd's v3 gateway, both ways, apart from any socket: the request bodies the
// client sends and strict readers of the replies (lb/membership/etcd_client.h describes the
// shapes etcd 3.4 answers). Each reader takes the whole body, returns true and fills its
// struct, or returns false with *error saying what was wrong ("no header.revision"). A
// reader guesses nothing: a missing field the contract needs, a field of the wrong JSON
// type, a number that does not fit, invalid base64, or a key other than the one asked for is
// an error. Defaults are what protobuf's JSON mapping leaves out (0, false, empty). Nothing
// throws: nlohmann::json's exceptions are caught inside. Pure; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lb/membership/etcd_types.h"

namespace lb::etcd_json {

std::string rangeRequest(std::string_view key);
// Put `value` if the key's mod_revision is `expected`, else read the key back.
std::string txnPutIfModRevision(std::string_view key, std::string_view value, int64_t expected);
std::string putRequest(std::string_view key, std::string_view value);
std::string compactRequest(int64_t revision);
std::string watchCreateRequest(std::string_view key, int64_t start_revision);

bool readRange(std::string_view body, std::string_view key, EtcdRangeReply* out,
               std::string* error) noexcept;
bool readTxn(std::string_view body, std::string_view key, EtcdTxnReply* out,
             std::string* error) noexcept;
// /v3/auth/authenticate {"name": U, "password": P} (both plain JSON strings, not base64).
std::string authenticateRequest(std::string_view user, std::string_view password);
// Its reply {"header": H, "token": T}: the token, sent as the Authorization header from then
// on. A reply without a non-empty token is false with *error.
bool readAuthToken(std::string_view body, std::string* token, std::string* error) noexcept;
// A reply (or a watch's cancel reason) that says the token is no longer valid: etcd 3.4's
// "etcdserver: invalid auth token" (gRPC Unauthenticated, HTTP 401), after the token expired
// or the member restarted and forgot its simple tokens.
bool tokenRejected(int status, std::string_view text) noexcept;
// A reply that carries only its header (put, compaction): the header revision.
bool readHeaderRevision(std::string_view body, int64_t* revision, std::string* error) noexcept;
// etcd's text in an error reply ({"error": ..., "message": ..., "code": N}), else the body's
// first bytes made printable, for a log line.
std::string errorText(std::string_view body) noexcept;

// One message of the watch stream.
struct WatchMessage {
  int64_t revision = 0;            // header.revision
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;
  std::string cancel_reason;
  bool stream_error = false;       // {"error": {...}}: the gateway ended the stream
  std::string error_text;          // its message
  std::vector<EtcdWatchEvent> events;
};
bool readWatchMessage(std::string_view line, std::string_view key, WatchMessage* out,
                      std::string* error) noexcept;

}  // namespace lb::etcd_json
